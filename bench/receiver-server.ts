/** A webhook receiver for bench:dispatch, alone in its own process: answers 200 to every POST. */
import { createServer } from 'node:http';

const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' }).end('ok'));
});
server.keepAliveTimeout = 30_000;
server.listen(0, '127.0.0.1', () => {
  const a = server.address();
  process.stdout.write(`${JSON.stringify({ msg: 'listening', port: typeof a === 'object' && a !== null ? a.port : 0 })}\n`);
});
process.on('SIGTERM', () => process.exit(0));
