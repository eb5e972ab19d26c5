/**
 * npm run bench:e2e — from the node announcing a block to the webhook received:
 * the real server following a real anvil, 1,000 streams each watching its own
 * wallets, 1,000 value transfers one after another, each to a wallet of one
 * stream. Latency = receiver's arrival of the block's (unconfirmed) webhook −
 * this process's arrival of the node's newHeads for that block. Beside it, in
 * the same run, a naive relay (newHeads → eth_getBlockByNumber → Set of hex
 * strings → POST) on the same node and receiver. Also: how soon 100,000
 * addresses added to a stream take effect.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { startAnvil } from '../http/clients/anvil.js';
import { startProcess } from './proc.js';
import { printRows, report } from './report.js';

const STREAMS = Number(process.env['BENCH_STREAMS'] ?? 1_000);
const TXS = Number(process.env['BENCH_TXS'] ?? 1_000);
const KEY = 'cpk_bench_e2e_key_0123456789abcdef';
const FROM = '0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266';
const BIN = fileURLToPath(new URL('../../bin/chainpost.js', import.meta.url));
/** A tx whose webhook has not come within this long counts as lost (the run says so). */
const TX_TIMEOUT_MS = 5_000;

const wallet = (i: number): string => `0x${(0xe2e00000 + i).toString(16)}${'7'.repeat(32)}`;
const quantile = (xs: number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN;
};
const round = (x: number): number => Math.round(x * 100) / 100;

async function main(): Promise<void> {
  const anvil = await startAnvil({ chainId: 1337 });
  const rpc = async <T>(method: string, params: unknown[]): Promise<T> => {
    const res = await fetch(anvil.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
    const body = (await res.json()) as { result?: T; error?: { message: string } };
    if (body.error !== undefined) throw new Error(`${method}: ${body.error.message}`);
    return body.result as T;
  };

  // The node's announcements, as this process hears them.
  const heads = new Map<number, number>();
  const ws = new WebSocket(anvil.url.replace(/^http/, 'ws'));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const onHead: Array<(n: number) => void> = [];
  ws.on('message', (raw: Buffer) => {
    const msg = JSON.parse(raw.toString()) as { params?: { result?: { number?: string } } };
    const n = msg.params?.result?.number;
    if (n === undefined) return;
    heads.set(Number(n), performance.now());
    for (const f of onHead) f(Number(n));
  });
  ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_subscribe', params: ['newHeads'] }));

  // The receiver: first arrival per (source, block).
  const arrivals = new Map<string, number>();
  const waiting = new Map<string, () => void>();
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = performance.now();
      const body = JSON.parse(Buffer.concat(chunks).toString()) as { confirmed?: boolean; block?: { number?: string } };
      const key = `${req.url}/${body.block?.number ?? ''}`;
      if (body.confirmed === false && !arrivals.has(key)) {
        arrivals.set(key, at);
        waiting.get(key)?.();
      }
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;

  /** The block a transaction went into (anvil mines it just after answering eth_sendTransaction). */
  const minedIn = async (hash: string): Promise<number> => {
    for (;;) {
      const receipt = await rpc<{ blockNumber: string } | null>('eth_getTransactionReceipt', [hash]);
      if (receipt !== null) return Number(receipt.blockNumber);
      await new Promise((r) => setTimeout(r, 1));
    }
  };

  /** Sends the txs one by one; per block, arrival at `path` minus the head's arrival. */
  const run = async (path: string, count: number, to: (i: number) => string): Promise<{ latencies: number[]; lost: number }> => {
    const latencies: number[] = [];
    let lost = 0;
    for (let i = 0; i < count; i++) {
      const hash = await rpc<string>('eth_sendTransaction', [{ from: FROM, to: to(i), value: '0x1' }]);
      const n = await minedIn(hash);
      const key = `${path}/${n}`;
      if (!arrivals.has(key)) {
        const came = await new Promise<boolean>((resolve) => {
          const t = setTimeout(() => resolve(false), TX_TIMEOUT_MS);
          waiting.set(key, () => {
            clearTimeout(t);
            resolve(true);
          });
        });
        waiting.delete(key);
        if (!came) {
          lost++;
          continue;
        }
      }
      const head = heads.get(n);
      if (head !== undefined) latencies.push(arrivals.get(key)! - head);
    }
    return { latencies, lost };
  };

  // chainpost: 1,000 streams, each watching its own 10 wallets.
  const dir = mkdtempSync(join(tmpdir(), 'chainpost-bench-e2e-'));
  const server = await startProcess([BIN, 'serve'], { CHAINPOST_DATA: dir, CHAINPOST_PORT: '0', CHAINPOST_API_KEY: KEY, CHAINPOST_CHAINS: `0x539=${anvil.url}`, CHAINPOST_POLL_MS: '1000', CHAINPOST_RATE_LIMIT: '0' });
  const api = async (method: string, path: string, json?: unknown): Promise<any> => {
    const res = await fetch(`http://127.0.0.1:${server.port}${path}`, { method, headers: { 'x-api-key': KEY, 'content-type': 'application/json' }, body: json === undefined ? undefined : JSON.stringify(json) });
    const body = await res.json();
    if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(body)}`);
    return body;
  };
  let figures: Record<string, number>;
  try {
    const t0 = performance.now();
    for (let s = 0; s < STREAMS; s++) {
      const { id } = await api('PUT', '/streams/evm', { webhookUrl: `${hook}/chainpost`, description: 'bench', tag: `s${s}`, chainIds: ['0x539'], includeNativeTxs: true });
      await api('POST', `/streams/evm/${id}/address`, { address: Array.from({ length: 10 }, (_, k) => wallet(s * 10 + k)) });
    }
    console.log(`${STREAMS} streams with ${STREAMS * 10} addresses made in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    // Warm up (worker start, first compile, connections), then measure.
    await run('/chainpost', 20, (i) => wallet(i * 10));
    const chainpost = await run('/chainpost', TXS, (i) => wallet((i % STREAMS) * 10 + (i % 10)));

    // 100,000 addresses added to a new stream: from the last call's answer to the webhook for a tx to one of them.
    const { id: big } = await api('PUT', '/streams/evm', { webhookUrl: `${hook}/big`, description: 'bench', tag: 'big', chainIds: ['0x539'], includeNativeTxs: true });
    const bigWallet = (i: number): string => `0x${(0xb1600000 + i).toString(16)}${'9'.repeat(32)}`;
    let added = 0;
    for (let part = 0; part < 10; part++) {
      await api('POST', `/streams/evm/${big}/address`, { address: Array.from({ length: 10_000 }, (_, k) => bigWallet(part * 10_000 + k)) });
      added = performance.now();
    }
    const hash = await rpc<string>('eth_sendTransaction', [{ from: FROM, to: bigWallet(99_999), value: '0x1' }]);
    const n = await minedIn(hash);
    await new Promise<void>((resolve) => {
      if (arrivals.has(`/big/${n}`)) resolve();
      else waiting.set(`/big/${n}`, resolve);
      setTimeout(resolve, TX_TIMEOUT_MS);
    });
    const effective = (arrivals.get(`/big/${n}`) ?? NaN) - added;
    await server.stop('SIGTERM');

    // The naive relay on the same node and receiver.
    const watched = new Set(Array.from({ length: STREAMS * 10 }, (_, i) => wallet(i)));
    onHead.push((num) => {
      void (async () => {
        const block = await rpc<{ number: string; hash: string; transactions: Array<{ from: string; to: string | null; hash: string }> }>('eth_getBlockByNumber', [`0x${num.toString(16)}`, true]);
        const txs = block.transactions.filter((t) => watched.has(t.from.toLowerCase()) || (t.to !== null && watched.has(t.to.toLowerCase())));
        if (txs.length === 0) return;
        await fetch(`${hook}/naive`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ confirmed: false, block: { number: String(num), hash: block.hash }, txs }) });
      })();
    });
    await run('/naive', 20, (i) => wallet(i * 10));
    const naive = await run('/naive', TXS, (i) => wallet((i % STREAMS) * 10 + (i % 10)));

    figures = {
      p50Ms: round(quantile(chainpost.latencies, 0.5)),
      p99Ms: round(quantile(chainpost.latencies, 0.99)),
      streams: STREAMS,
      transactions: chainpost.latencies.length,
      lost: chainpost.lost,
      naiveP50Ms: round(quantile(naive.latencies, 0.5)),
      naiveP99Ms: round(quantile(naive.latencies, 0.99)),
      addressesTakeEffectMs: round(effective),
    };
  } finally {
    ws.close();
    receiver.close();
    await server.stop('SIGKILL').catch(() => undefined);
    await anvil.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  printRows([
    ['p50 (node head → webhook)', figures['p50Ms']!, 'ms', figures['naiveP50Ms']],
    ['p99', figures['p99Ms']!, 'ms', figures['naiveP99Ms']],
    ['naive relay p50', figures['naiveP50Ms']!, 'ms'],
    ['naive relay p99', figures['naiveP99Ms']!, 'ms'],
    ['lost webhooks', figures['lost']!, `of ${TXS}`],
    ['100,000 addresses effective', figures['addressesTakeEffectMs']!, 'ms'],
  ]);
  const met = figures['p50Ms']! <= 10 && figures['p99Ms']! <= 50 && figures['lost'] === 0 && figures['addressesTakeEffectMs']! <= 1000;
  report('e2e', 'npm run bench:e2e', figures, { p50Ms: '≤ 10', p99Ms: '≤ 50', lost: '= 0', addressesTakeEffectMs: '≤ 1000' }, met, [
    `Latency is from this process receiving the node's newHeads for the block to the receiver (same process) receiving the block's unconfirmed webhook; ${STREAMS} streams, each watching 10 wallets; ${TXS} value transfers one at a time, each to one stream's wallet (one webhook per block). The naive relay (newHeads → eth_getBlockByNumber → Set of hex strings → POST, no store, no queue) ran on the same node and receiver after chainpost stopped.`,
    'addressesTakeEffectMs: from the answer to the last of ten calls adding 10,000 addresses each to a new stream, to the webhook of a transfer to the last address (the transfer mined in between).',
  ]);
}

await main();
process.exit(0);
