/**
 * A local JSON-RPC stand-in for an EVM node (node:http on 127.0.0.1), for
 * bench:ingest: a chain of BLOCKS blocks made from the mainnet fixture bundles
 * (test/kit/fixtures.ts), bundle after bundle, each renumbered and relinked to its
 * parent (number, hash, parentHash, and every blockHash and blockNumber of its
 * transactions, receipts and logs rewritten), so a follower takes them for one
 * chain. It answers eth_blockNumber, eth_getBlockByNumber (full and hash-only),
 * eth_getBlockReceipts and debug_traceBlockByNumber; anything else is -32601.
 * The bundles' JSON is cut around the fields that change and every answer is
 * made before the first request (some 0.8 MB a block), so serving one costs a
 * write of ready bytes.
 *
 *   node dist-bench/test/kit/node-standin.js BLOCKS   prints {"msg":"listening","port":N}
 */
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';
import { FIXTURE_BLOCKS, bundleJson } from './fixtures.js';

/** A JSON text cut around the values that change per copy: text, slot, text, slot, …, text. */
interface Template {
  parts: Buffer[];
  slots: Array<'number' | 'hash' | 'parentHash'>;
}

/** The hash of copy n: unique, 32 bytes. */
export const standInHash = (n: number): string => `0x${'c0ffee'.padEnd(48, '0')}${n.toString(16).padStart(16, '0')}`;

function template(text: string, original: { hash: string; number: string }): Template {
  const parts: Buffer[] = [];
  const slots: Template['slots'] = [];
  // The block's own hash wherever it stands (header, transactions, receipts, logs); number and parentHash by field name.
  const re = new RegExp(
    `("(?:number|blockNumber)"\\s*:\\s*)"${original.number}"|("parentHash"\\s*:\\s*)"0x[0-9a-f]{64}"|"${original.hash}"`,
    'g',
  );
  let last = 0;
  for (const m of text.matchAll(re)) {
    const prefix = m[1] ?? m[2] ?? '';
    parts.push(Buffer.from(text.slice(last, m.index) + prefix));
    slots.push(m[1] !== undefined ? 'number' : m[2] !== undefined ? 'parentHash' : 'hash');
    last = m.index + m[0].length;
  }
  parts.push(Buffer.from(text.slice(last)));
  return { parts, slots };
}

function fill(t: Template, n: number): Buffer {
  const values = {
    number: `"0x${n.toString(16)}"`,
    hash: `"${standInHash(n)}"`,
    parentHash: `"${n === 0 ? `0x${'00'.repeat(32)}` : standInHash(n - 1)}"`,
  };
  const bytes = { number: Buffer.from(values.number), hash: Buffer.from(values.hash), parentHash: Buffer.from(values.parentHash) };
  const out: Buffer[] = [t.parts[0]!];
  t.slots.forEach((s, i) => out.push(bytes[s], t.parts[i + 1]!));
  return Buffer.concat(out);
}

const NULL = Buffer.from('null');

interface Copyable {
  full: Template;
  hashes: Template;
  receipts: Template;
  traces: Buffer;
}

function load(n: number): Copyable {
  const [block, receipts, traces] = bundleJson(n);
  const parsed = JSON.parse(block) as { hash: string; number: string; transactions: Array<{ hash: string }> };
  const original = { hash: parsed.hash, number: parsed.number };
  const hashes = JSON.stringify({ ...parsed, transactions: parsed.transactions.map((t) => t.hash) });
  return {
    full: template(block, original),
    hashes: template(hashes, original),
    receipts: template(receipts, original),
    traces: Buffer.from(traces),
  };
}

/**
 * `hold`, when given, is awaited before answering a call about a block (by its number): a test can keep the chain's
 * catch-up from ending until it has seen what it waits for.
 */
export function startStandIn(
  blocks: number,
  port = 0,
  hold?: (block: number) => Promise<void>,
): Promise<{ port: number; close(): Promise<void> }> {
  const bundles = FIXTURE_BLOCKS.map(load);
  const chain = Array.from({ length: blocks }, (_, n) => {
    const b = bundles[n % bundles.length]!;
    return { full: fill(b.full, n), hashes: fill(b.hashes, n), receipts: fill(b.receipts, n), traces: b.traces };
  });
  const answer = (method: string, params: unknown[]): Buffer => {
    if (method === 'eth_blockNumber') return Buffer.from(JSON.stringify(`0x${(blocks - 1).toString(16)}`));
    if (method === 'eth_chainId') return Buffer.from('"0x1"');
    const block = chain[parseInt(String(params[0]), 16)];
    if (method === 'eth_getBlockByNumber') return block === undefined ? NULL : params[1] === true ? block.full : block.hashes;
    if (method === 'eth_getBlockReceipts') return block?.receipts ?? NULL;
    if (method === 'debug_traceBlockByNumber') return block?.traces ?? NULL;
    throw new Error(method);
  };
  const server = createServer((req, res) => {
    // No WebSocket here (the follower polls), nor anything but JSON-RPC over POST.
    if (req.method !== 'POST') return void res.writeHead(405).end();
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const call = JSON.parse(Buffer.concat(chunks).toString()) as { id: number; method: string; params?: unknown[] };
      const about = call.method === 'eth_blockNumber' || call.method === 'eth_chainId' ? NaN : parseInt(String(call.params?.[0]), 16);
      if (hold !== undefined && !Number.isNaN(about)) await hold(about);
      let result: Buffer;
      try {
        result = answer(call.method, call.params ?? []);
      } catch {
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            jsonrpc: '2.0',
            id: call.id,
            error: { code: -32601, message: `the method ${call.method} does not exist/is not available` },
          }),
        );
        return;
      }
      const head = Buffer.from(`{"jsonrpc":"2.0","id":${call.id},"result":`);
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': head.length + result.length + 1 });
      res.write(head);
      res.write(result);
      res.end('}');
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () =>
      resolve({
        port: (server.address() as { port: number }).port,
        close: () => new Promise<void>((r) => server.close(() => r())),
      }),
    );
  });
}

// Run as a process of its own: the bench's follower does not share its thread with the node it follows.
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { port } = await startStandIn(Number(process.argv[2] ?? 2_000));
  process.stdout.write(`${JSON.stringify({ msg: 'listening', port })}\n`);
  process.on('SIGTERM', () => process.exit(0));
}
