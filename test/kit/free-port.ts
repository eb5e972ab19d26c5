import { createServer } from 'node:net';

/**
 * A loopback port nothing listens on once this resolves: for a server a test starts on a port of its choosing, or a
 * URL that must find nothing. Another process may take it before it is used; anvil is started on port 0 instead.
 */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
