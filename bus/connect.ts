import { readFileSync } from 'node:fs';
import { connect, credsAuthenticator, type NatsConnection, type NodeConnectionOptions } from '@nats-io/transport-node';
import type { Logger } from '../engine/log.js';

/**
 * The node's connection to NATS: one for the whole process, every part of bus/ speaks through it. It reconnects
 * forever (a cluster's node outlives its NATS server's restarts) and says when it goes down and comes back up.
 */
export interface BusConnection {
  readonly nc: NatsConnection;
  /** Whether the connection is up now. */
  up(): boolean;
  /** Calls `listener` each time the connection goes down (false) or comes back up (true); returns how to stop. */
  onStatus(listener: (up: boolean) => void): () => void;
  /** The servers as logs may show them (credentials masked). */
  readonly servers: string;
  close(): Promise<void>;
}

export interface BusOptions {
  /** Comma-separated NATS URLs: `nats://[user:pass@]host:port` or `tls://…`; a user alone is a token. */
  servers: string;
  /** A NATS creds file (a user's JWT and nkey seed), read now. */
  credsFile?: string;
  /** The client's name, as the server's monitoring shows it. */
  name?: string;
  /** The longest wait between two reconnect attempts, ms (default 5 s): the wait doubles from 250 ms up to it. */
  maxReconnectWaitMs?: number;
  /**
   * One attempt at each server, given up after this many ms, and no reconnect (a command's short visit); by default a
   * node waits for a server to answer, and reconnects forever.
   */
  onceWithinMs?: number;
  log?: Logger;
}

/** The servers of `list` with their credentials, which apply to every server; throws naming no secret. */
export function parseServers(list: string): {
  servers: string[];
  tls: boolean;
  credentials: { user: string; pass: string } | { token: string } | undefined;
} {
  const urls = list
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (urls.length === 0) throw new Error('no NATS server given');
  let credentials: { user: string; pass: string } | { token: string } | undefined;
  let tls = false;
  const servers = urls.map((text, i) => {
    let u: URL;
    try {
      u = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `nats://${text}`);
    } catch {
      throw new Error(`NATS server ${i + 1} of ${urls.length} is not a URL (nats://host:port)`);
    }
    if (u.protocol !== 'nats:' && u.protocol !== 'tls:')
      throw new Error(`NATS server ${i + 1} of ${urls.length}: ${u.protocol} is neither nats: nor tls:`);
    tls ||= u.protocol === 'tls:';
    if (u.username !== '') {
      const user = decodeURIComponent(u.username);
      const given = u.password === '' ? { token: user } : { user, pass: decodeURIComponent(u.password) };
      if (credentials !== undefined && JSON.stringify(credentials) !== JSON.stringify(given))
        throw new Error('the NATS servers carry different credentials: give the same to each, or to none');
      credentials = given;
    }
    return `${u.hostname}:${u.port === '' ? '4222' : u.port}`;
  });
  return { servers, tls, credentials };
}

/**
 * The servers as logs show them: each URL's credentials (user and password, or a token, which is written where a
 * user is) replaced by `***`; a value that does not parse keeps nothing of what it held.
 */
export function redactedServers(list: string): string {
  return list
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map((text) => {
      if (!text.includes('@')) return text;
      try {
        const u = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `nats://${text}`);
        return `${u.protocol}//***@${u.host}`;
      } catch {
        return '(not a URL)';
      }
    })
    .join(',');
}

const FIRST_WAIT_MS = 250;

/** Connects to NATS; waits (retrying with the same backoff) until one of the servers answers. */
export async function connectBus(options: BusOptions): Promise<BusConnection> {
  const { servers, tls, credentials } = parseServers(options.servers);
  const shown = redactedServers(options.servers);
  const maxWait = options.maxReconnectWaitMs ?? 5_000;
  // Attempts since the connection was last up: the wait doubles with each, up to maxWait, with a little jitter
  // so the nodes of a cluster do not all knock at once.
  let attempts = 0;
  const opts: NodeConnectionOptions = {
    servers,
    name: options.name ?? 'chainpost',
    ...(options.onceWithinMs === undefined
      ? { maxReconnectAttempts: -1, waitOnFirstConnect: true }
      : { maxReconnectAttempts: 0, timeout: options.onceWithinMs }),
    reconnectDelayHandler: () => Math.min(maxWait, FIRST_WAIT_MS * 2 ** Math.min(attempts, 16)) + Math.random() * 100,
    ...(tls ? { tls: {} } : {}),
    ...(credentials ?? {}),
    ...(options.credsFile === undefined ? {} : { authenticator: credsAuthenticator(readFileSync(options.credsFile)) }),
  };
  const nc = await connect(opts);
  let up = true;
  let closing = false;
  const listeners = new Set<(up: boolean) => void>();
  const set = (next: boolean): void => {
    if (next === up) return;
    up = next;
    if (!closing) options.log?.[next ? 'info' : 'warn'](next ? 'NATS connection up' : 'NATS connection down', { servers: shown });
    for (const l of listeners) l(next);
  };
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === 'reconnecting') attempts++;
      else if (s.type === 'reconnect') {
        attempts = 0;
        set(true);
      } else if (s.type === 'disconnect' || s.type === 'close') set(false);
    }
  })();
  void nc.closed().then(() => set(false));
  options.log?.info('NATS connected', { servers: shown });
  return {
    nc,
    up: () => up,
    onStatus: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    servers: shown,
    close: () => {
      closing = true;
      return nc.close();
    },
  };
}
