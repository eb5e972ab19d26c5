/**
 * What a cluster node (CHAINPOST_NATS set) needs of this machine, checked at start before anything opens: engine/
 * parses the configuration and reads no file.
 */
import { readFileSync } from 'node:fs';
import { ConfigError, type Config } from '../engine/config/config.js';

/**
 * CHAINPOST_NATS_CREDS names a file this process can read. Refused here, the start stops with its path and why;
 * left to the bus, it would show only as sign-ins failing again and again.
 */
export function checkClusterFiles(config: Pick<Config, 'nats'>): void {
  const creds = config.nats?.creds;
  if (creds === undefined) return;
  try {
    // Read, not stat'ed: only a read says whether this process may (root passes every permission check).
    readFileSync(creds);
  } catch (err) {
    // The code alone (ENOENT, EACCES, EISDIR): node's message names the path only for some of them.
    throw new ConfigError(
      'CHAINPOST_NATS_CREDS',
      `cannot read the creds file ${creds} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    );
  }
}
