import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A webhook receiver of the benches on a free loopback port. A request it holds open is never timed out here:
 * the sender's own delivery timeout ends it.
 */
export const listen = (handle: (req: IncomingMessage, res: ServerResponse) => void): Promise<Server> =>
  new Promise((resolve) => {
    const s = createServer(handle);
    s.keepAliveTimeout = 30_000;
    s.requestTimeout = 0;
    s.listen(0, '127.0.0.1', () => resolve(s));
  });

export const port = (s: Server): number => (s.address() as AddressInfo).port;
