/**
 * Receivers for bench:fairness, alone in their own process: HANG_PORTS loopback ports (default 9, each its own
 * origin) that answer a test webhook 200 (a stream's create needs it) and hold every other request open, leaving the
 * sender's timeout to end it; and a control port: POST /answer makes them answer 200 from then on, POST /hang holds
 * requests open again, GET /held says how many they hold.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { listen, port } from './receiver-listen.js';

const PORTS = Number(process.env['HANG_PORTS'] ?? 9);
let answering = false;
let held = 0;

function receive(req: IncomingMessage, res: ServerResponse): void {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const raw = Buffer.concat(chunks).toString();
    // The test webhook: chainId "" (Solana's: an empty body).
    if (answering || raw === '' || (JSON.parse(raw) as { chainId?: string }).chainId === '') {
      res.writeHead(200).end('ok');
      return;
    }
    held++;
    res.on('close', () => held--);
  });
}

function control(req: IncomingMessage, res: ServerResponse): void {
  if (req.method === 'GET' && req.url === '/held')
    return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ held }));
  if (req.method === 'POST' && (req.url === '/answer' || req.url === '/hang')) {
    answering = req.url === '/answer';
    return void res.writeHead(200).end('ok');
  }
  res.writeHead(404).end();
}

const ctl = await listen(control);
const hang = await Promise.all(Array.from({ length: PORTS }, () => listen(receive)));
process.stdout.write(`${JSON.stringify({ msg: 'listening', port: port(ctl), hang: hang.map(port) })}\n`);
process.on('SIGTERM', () => process.exit(0));
