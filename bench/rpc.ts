/**
 * npm run bench:rpc — node access: eth_getLogs and eth_getBlockReceipts
 * answered by the server from its store, and the very same requests sent
 * straight to the node (anvil) it follows, under autocannon in one run; then a
 * forwarded method through the server and straight to anvil, one request at a
 * time, for the latency the server adds. Loopback only; stops by itself.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import { Agent, request } from 'undici';
import { startAnvil } from '../http/clients/anvil.js';
import { jsonRpcUpstream } from '../http/clients/rpc.js';
import { TRANSFER } from '../engine/evm/store.js';
import { startProcess } from '../test/kit/proc.js';
import { minedReceipt } from '../test/kit/anvil-rpc.js';
import { BIN, percentile, printRows, report, round, sized } from './report.js';

const BLOCKS = Number(process.env['BENCH_BLOCKS'] ?? sized(200, 16));
/** Per block: this many calls to each of two log-emitting contracts. */
const TXS_PER_CONTRACT = 2;
/** The log query spans the last this many blocks, of one of the two contracts. */
const LOG_RANGE = sized(100, 8);
const DURATION_S = Number(process.env['BENCH_SECONDS'] ?? sized(10, 1));
/** Seconds of each target's warm-up (none at the smoke size: autocannon's shortest run is a second). */
const WARM_UP_S = sized(2, 0);
const CONNECTIONS = Number(process.env['BENCH_CONNECTIONS'] ?? 10);
const FORWARD_REQUESTS = Number(process.env['BENCH_FORWARD_REQUESTS'] ?? sized(3_000, 50));
/** Forwarded requests of each target before those timed. */
const FORWARD_WARM_UP = sized(200, 10);
const KEY = 'cpk_bench_rpc_key_0123456789abcdef';
const ACCOUNTS = ['0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266', '0x70997970c51812dc3a010c7d01b50e0d17dc79c8'];

/**
 * A contract whose every call logs Transfer(caller, calldata word 0, calldata word 1), written in
 * bytecode (the bench is built without the test contracts): word 1 stored at memory 0, then
 * LOG3(0, 32, Transfer, caller, word 0). The init code returns the 49 bytes after its own 11.
 */
const RUNTIME = `602035600052600035337f${TRANSFER.slice(2)}60206000a300`;
const INIT = `0x603180600b6000396000f3${RUNTIME}`;

const hex = (n: number): string => `0x${n.toString(16)}`;
const rpcBody = (method: string, params: unknown[]): string => JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });

interface Run {
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
}

async function load(label: string, url: string, body: string): Promise<Run> {
  const opts = {
    url,
    method: 'POST' as const,
    headers: { 'content-type': 'application/json' },
    body,
    connections: CONNECTIONS,
    pipelining: 1,
  };
  if (WARM_UP_S > 0) await autocannon({ ...opts, duration: WARM_UP_S }); // warm-up: JIT, connections, page cache
  const r = await autocannon({ ...opts, duration: DURATION_S });
  const run = {
    reqPerSec: Math.round(r.requests.average),
    p50Ms: r.latency.p50,
    p99Ms: r.latency.p99,
    errors: r.non2xx + r.errors + r.timeouts,
  };
  console.log(`${label}: ${run.reqPerSec} req/s, p50 ${run.p50Ms} ms, p99 ${run.p99Ms} ms, ${run.errors} non-2xx/errors`);
  return run;
}

/**
 * Requests one at a time over one keep-alive connection per target, alternating between the
 * targets; `body(i)` is the i-th request. Per-request latency in ms, after `warmup` rounds.
 */
async function sequential(urls: readonly string[], rounds: number, warmup: number, body: (i: number) => string): Promise<number[][]> {
  const agents = urls.map(() => new Agent({ connections: 1, keepAliveTimeout: 30_000 }));
  const out = urls.map(() => [] as number[]);
  try {
    for (let i = 0; i < warmup + rounds; i++) {
      for (const [k, url] of urls.entries()) {
        const started = performance.now();
        const res = await request(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: body(i),
          dispatcher: agents[k],
        });
        const text = await res.body.text();
        const ms = performance.now() - started;
        if (res.statusCode !== 200 || !text.includes('"result"')) throw new Error(`${url}: ${res.statusCode} ${text.slice(0, 200)}`);
        if (i >= warmup) out[k]!.push(ms);
      }
    }
  } finally {
    await Promise.all(agents.map((a) => a.close()));
  }
  return out;
}

async function post(url: string, body: string): Promise<unknown> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  return res.json();
}

async function main(): Promise<void> {
  const anvil = await startAnvil({ chainId: 1337 });
  const node = jsonRpcUpstream(anvil.url);
  const dir = mkdtempSync(join(tmpdir(), 'chainpost-bench-rpc-'));
  let server: Awaited<ReturnType<typeof startProcess>> | undefined;
  try {
    // Two emitters, then blocks of 2 + 2 calls: the log query keeps one contract's logs out of each block's four.
    const created: string[] = [];
    for (const from of ACCOUNTS) created.push(await node.call<string>('eth_sendTransaction', [{ from, data: INIT }]));
    const contracts = await Promise.all(created.map(async (h) => (await minedReceipt(node, h)).contractAddress!));
    await node.call('evm_setAutomine', [false]);
    for (let b = 0; b < BLOCKS; b++) {
      for (let i = 0; i < TXS_PER_CONTRACT; i++) {
        for (const [k, to] of contracts.entries()) {
          const data = `0x${(b * 10 + i).toString(16).padStart(64, '0')}${(b + 1).toString(16).padStart(64, '0')}`;
          await node.call('eth_sendTransaction', [{ from: ACCOUNTS[k], to, data, gas: '0x20000' }]);
        }
      }
      await node.call('anvil_mine', ['0x1']);
    }
    await node.call('evm_setAutomine', [true]);
    const head = parseInt(await node.call<string>('eth_blockNumber', []), 16);

    process.on('exit', () => void server?.child.kill('SIGKILL'));
    server = await startProcess([BIN, 'serve'], {
      CHAINPOST_DATA: dir,
      CHAINPOST_PORT: '0',
      CHAINPOST_API_KEY: KEY,
      CHAINPOST_CHAINS: `0x539=${anvil.url}`,
      // Every block mined above is stored (a first start would begin at anvil's head).
      CHAINPOST_START_BLOCKS: '0x539=0',
      CHAINPOST_RATE_LIMIT: '0',
      CHAINPOST_ACCESS_LOG: '0',
    });
    const base = `http://127.0.0.1:${server.port}`;
    const rpc = `${base}/rpc/devnet/${KEY}`;
    const deadline = performance.now() + 60_000;
    for (;;) {
      const health = (await (await fetch(`${base}/health`)).json()) as { chains: Array<{ head: number; subscription: boolean }> };
      if (health.chains[0]?.head === head && health.chains[0].subscription) break;
      if (performance.now() > deadline) throw new Error(`the server did not catch up with anvil's ${head} blocks within 60 s`);
      await new Promise((r) => setTimeout(r, 50));
    }

    const logs = rpcBody('eth_getLogs', [{ fromBlock: hex(head - LOG_RANGE + 1), toBlock: hex(head), address: contracts[0] }]);
    const receipts = rpcBody('eth_getBlockReceipts', [hex(head - 1)]);
    // The server's answers are the node's before anything is measured.
    for (const body of [logs, receipts]) {
      const [ours, theirs] = await Promise.all([post(rpc, body), post(anvil.url, body)]);
      if (JSON.stringify(sortKeys(ours)) !== JSON.stringify(sortKeys(theirs)))
        throw new Error(`the server's answer differs from anvil's for ${body}`);
    }
    const logCount = ((await post(rpc, logs)) as { result: unknown[] }).result.length;

    // Cold: each block's first query, read from LMDB (the runs below repeat one range, which the server then keeps in memory).
    const coldBlocks = head - LOG_RANGE - 1;
    const oneBlock = (i: number): string => rpcBody('eth_getLogs', [{ fromBlock: hex(i + 2), toBlock: hex(i + 2), address: contracts[0] }]);
    const [coldLocal, coldNode] = await sequential([rpc, anvil.url], coldBlocks, 0, oneBlock);
    const storeBefore = await servedFromStore(base);

    const logsLocal = await load('eth_getLogs, chainpost (store)', rpc, logs);
    const logsNode = await load('eth_getLogs, anvil', anvil.url, logs);
    const receiptsLocal = await load('eth_getBlockReceipts, chainpost (store)', rpc, receipts);
    const receiptsNode = await load('eth_getBlockReceipts, anvil', anvil.url, receipts);
    const fromStore = (await servedFromStore(base)) - storeBefore;

    const balance = rpcBody('eth_getBalance', [ACCOUNTS[0], 'latest']);
    const [through, direct] = await sequential([rpc, anvil.url], FORWARD_REQUESTS, FORWARD_WARM_UP, () => balance);
    const forwardP50Ms = round(percentile(through!, 0.5), 3);
    const directP50Ms = round(percentile(direct!, 0.5), 3);
    const forwardAddedP50Ms = round(forwardP50Ms - directP50Ms, 3);

    const ratioLocalVsNode = round(logsLocal.reqPerSec / logsNode.reqPerSec);
    const ratioReceiptsLocalVsNode = round(receiptsLocal.reqPerSec / receiptsNode.reqPerSec);
    console.log('');
    printRows([
      ['eth_getLogs store req/s', logsLocal.reqPerSec, 'req/s', logsNode.reqPerSec],
      ['eth_getLogs anvil req/s', logsNode.reqPerSec, 'req/s'],
      ['eth_getBlockReceipts store', receiptsLocal.reqPerSec, 'req/s', receiptsNode.reqPerSec],
      ['eth_getBlockReceipts anvil', receiptsNode.reqPerSec, 'req/s'],
      ['first read of a block, p50', percentile(coldLocal!, 0.5), 'ms', percentile(coldNode!, 0.5)],
      ['same request to anvil, p50', percentile(coldNode!, 0.5), 'ms'],
      ['eth_getBalance via server p50', forwardP50Ms, 'ms', directP50Ms],
      ['eth_getBalance anvil p50', directP50Ms, 'ms'],
    ]);
    const errors = logsLocal.errors + logsNode.errors + receiptsLocal.errors + receiptsNode.errors;
    const met = ratioLocalVsNode > 1 && ratioReceiptsLocalVsNode > 1 && forwardAddedP50Ms <= 1 && errors === 0;
    report(
      'rpc',
      'npm run bench:rpc',
      {
        localReqPerSec: logsLocal.reqPerSec,
        nodeReqPerSec: logsNode.reqPerSec,
        ratioLocalVsNode,
        forwardAddedP50Ms,
        localP50Ms: logsLocal.p50Ms,
        localP99Ms: logsLocal.p99Ms,
        nodeP50Ms: logsNode.p50Ms,
        nodeP99Ms: logsNode.p99Ms,
        receiptsLocalReqPerSec: receiptsLocal.reqPerSec,
        receiptsNodeReqPerSec: receiptsNode.reqPerSec,
        ratioReceiptsLocalVsNode,
        receiptsLocalP50Ms: receiptsLocal.p50Ms,
        receiptsLocalP99Ms: receiptsLocal.p99Ms,
        receiptsNodeP50Ms: receiptsNode.p50Ms,
        receiptsNodeP99Ms: receiptsNode.p99Ms,
        coldLocalP50Ms: round(percentile(coldLocal!, 0.5), 3),
        coldNodeP50Ms: round(percentile(coldNode!, 0.5), 3),
        forwardP50Ms,
        forwardP99Ms: round(percentile(through!, 0.99), 3),
        directP50Ms,
        directP99Ms: round(percentile(direct!, 0.99), 3),
      },
      { ratioLocalVsNode: '> 1 (eth_getLogs; eth_getBlockReceipts too)', forwardAddedP50Ms: '<= 1' },
      met,
      [
        `anvil ${BLOCKS} blocks of ${2 * TXS_PER_CONTRACT} calls to two log-emitting contracts (one Transfer log each); the server follows it and holds every block. localReqPerSec/nodeReqPerSec/ratioLocalVsNode: eth_getLogs of one contract over the last ${LOG_RANGE} blocks (${logCount} logs, the newest not yet confirmed, so no answer is cached whole) from the server's store vs the same request to anvil; receipts*: eth_getBlockReceipts of the block before the head (${2 * TXS_PER_CONTRACT} transactions, unconfirmed). The same request repeats, so after its first answer the server serves those blocks from what it keeps of them in memory (probe columns and logs/receipts as JSON text, per block and reorg count), not from LMDB. autocannon: ${CONNECTIONS} connections, no pipelining, ${DURATION_S} s after a ${WARM_UP_S} s warm-up, server and anvil each in their own process on the same machine; latencies in whole ms (autocannon's resolution).`,
        `coldLocalP50Ms/coldNodeP50Ms: eth_getLogs of one block for one contract, each of ${coldBlocks} blocks asked once (read from LMDB and decoded: nothing kept yet), one request at a time, alternating with the same request to anvil.`,
        `${fromStore} eth_getLogs and eth_getBlockReceipts calls were answered from the store during the runs (chainpost_rpc_calls_total), and the server's answers equal anvil's (checked before the runs); ${errors} non-2xx answers or errors.`,
        `forward*: eth_getBalance(latest) through the server (forwarded to anvil, not cacheable) vs straight to anvil, ${FORWARD_REQUESTS} requests each, one at a time on one keep-alive connection, alternating, after ${FORWARD_WARM_UP} of each to warm up; forwardAddedP50Ms = forwardP50Ms − directP50Ms.`,
      ],
    );
    console.log(
      `\nratioLocalVsNode ${ratioLocalVsNode}, ratioReceiptsLocalVsNode ${ratioReceiptsLocalVsNode}, forwardAddedP50Ms ${forwardAddedP50Ms}: goal ${met ? 'met' : 'not met'}; wrote bench/results/rpc.json and bench/RESULTS.md`,
    );
  } finally {
    await server?.stop();
    await node.close();
    await anvil.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Node-access calls the server answered from its store so far, from its metrics. */
async function servedFromStore(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  let n = 0;
  for (const m of text.matchAll(/^chainpost_rpc_calls_total\{[^}]*served="store"\} (\d+)$/gm)) n += Number(m[1]);
  return n;
}

/** JSON with object keys in order, to compare answers whatever order their fields come in. */
function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (typeof v !== 'object' || v === null) return v;
  return Object.fromEntries(
    Object.keys(v)
      .sort()
      .map((k) => [k, sortKeys((v as Record<string, unknown>)[k])]),
  );
}

// The run is bounded: whatever happens, the process ends within five minutes.
setTimeout(() => {
  console.error('bench:rpc did not finish within 5 minutes');
  process.exit(1);
}, 300_000).unref();

await main();
