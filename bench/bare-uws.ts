/**
 * bench:http's ceiling: bare uWebSockets.js serving the benchmarked route
 * (GET /api/v2.2/web3/version) with a constant answer and the same headers as
 * chainpost's, and nothing else: no key, no rate limit, no log, no metrics.
 * Alone in its own process, like the servers it is compared with.
 */
import uWS from 'uWebSockets.js';

const BODY = '{"version":"2.2"}';

const app = uWS.App().get('/api/v2.2/web3/version', (res) => {
  res.cork(() => {
    res.writeStatus('200 OK');
    res.writeHeader('content-type', 'application/json');
    res.writeHeader('x-request-id', 'bare');
    res.end(BODY);
  });
});
app.listen('127.0.0.1', Number(process.env['CHAINPOST_PORT'] ?? 0), (socket) => {
  if (socket === false) {
    process.stderr.write('bare-uws: cannot listen\n');
    process.exit(1);
  }
  const port = uWS.us_socket_local_port(socket as unknown as uWS.us_socket);
  process.stdout.write(`${JSON.stringify({ msg: 'listening', port })}\n`);
});
process.on('SIGTERM', () => process.exit(0));
