import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '../../engine/config.js';
import { clearChain } from '../../engine/ingest/store.js';
import { StorageError, openStore } from '../../storage/env.js';
import { DEVNET_CHAIN, devnetFiles, devnetRunner } from './devnet.js';

/**
 * `chainpost devnet reset`: the next start begins a new devnet. Deletes anvil's
 * state file and what was ingested from chain 0x539 (storage/README.md: its
 * chainState, blocks, probes, canon, blockHashes, blockEvents, tokens,
 * transfers and sales rows). Streams, keys and webhooks already queued stay.
 * Refuses while a server runs the devnet of this directory. Returns the lines to print.
 */
export async function devnetReset(dataDir: string): Promise<string[]> {
  const runner = devnetRunner(dataDir);
  if (runner !== undefined) {
    throw new Error(`a server is running the devnet of ${dataDir} (pid ${runner.pid}, devnet port ${runner.port}); stop it first (if pid ${runner.pid} is not chainpost, delete ${devnetFiles(dataDir).running})`);
  }
  const lines: string[] = [];
  // No store yet: nothing was ingested, and none is created here.
  if (existsSync(join(dataDir, 'data.mdb'))) {
    let store;
    try {
      store = openStore(dataDir);
    } catch (err) {
      if (err instanceof StorageError) throw new ConfigError('CHAINPOST_DATA', err.message);
      throw err;
    }
    try {
      const removed = clearChain(store, DEVNET_CHAIN);
      const total = Object.values(removed).reduce((a, b) => a + b, 0);
      lines.push(`cleared chain ${DEVNET_CHAIN} from ${dataDir}: ${total} rows (${Object.entries(removed).filter(([, n]) => n > 0).map(([t, n]) => `${t} ${n}`).join(', ') || 'none'})`);
    } finally {
      await store.close();
    }
  }
  const { state } = devnetFiles(dataDir);
  lines.push(existsSync(state) ? `deleted the devnet state ${state}; the next start begins a new devnet` : `no devnet state at ${state}; the next start begins a new devnet`);
  rmSync(state, { force: true });
  return lines;
}
