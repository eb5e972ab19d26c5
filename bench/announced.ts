/**
 * The rig of the benches that time a block from the node announcing it to its webhook received (bench:e2e,
 * bench:cluster): this process's own newHeads subscription to anvil (the server's client, http/clients/rpc.ts), a
 * webhook receiver on 127.0.0.1 in this process, and transfers sent one at a time, each timed from its block's head
 * to its block's unconfirmed webhook; and where that time goes, from the server's CHAINPOST_TRACE_BLOCKS lines.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { jsonRpcUpstream } from '../http/clients/rpc.js';
import { minedReceipt } from '../test/kit/anvil-rpc.js';
import { percentile, round } from './report.js';

/** anvil's first dev account (unlocked: eth_sendTransaction signs with it). */
export const FROM = '0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266';

export interface Measured {
  latencies: number[];
  /** The block of each latency. */
  blocks: number[];
  lost: number;
  unmeasured: number;
}

export interface Announced {
  /** The server's JSON-RPC client on anvil, for this process's calls. */
  rpc: ReturnType<typeof jsonRpcUpstream>;
  /** The first arrival (performance.now()) of each block's head, as this process heard it. */
  heads: Map<number, number>;
  /** Called with every head heard (a naive relay hangs on it). */
  onHead: Array<(n: number) => void>;
  /** The receiver's base URL (`http://127.0.0.1:<port>`): a webhook to `${hook}/<path>`. */
  hook: string;
  /** The first arrival of each unconfirmed webhook, by `<path>/<block number>`. */
  arrivals: Map<string, number>;
  /** Every webhook received (confirmed or not): when it came, its path and its block. */
  received: Array<{ at: number; path: string; block: number }>;
  /** The block a transaction went into (anvil mines it just after answering eth_sendTransaction). */
  minedIn(hash: string): Promise<number>;
  /** Whether the unconfirmed webhook `<path>/<block number>` has come, or comes within `timeoutMs`. */
  came(key: string, timeoutMs: number): Promise<boolean>;
  /** Sends `value` from FROM to `to`; answers the block it was mined in. */
  pay(to: string): Promise<number>;
  /**
   * Sends `count` transfers one by one; per block and per path (servers side by side, each delivering to its own),
   * arrival at the path minus the head's arrival. A block whose webhook has not come within `timeoutMs` is lost; one
   * whose webhook came before this process heard its head (or whose head it never heard) is unmeasured: both are
   * counted, neither is a latency. Answers a Measured per path, in their order.
   */
  run(paths: readonly string[], count: number, to: (i: number) => string, timeoutMs: number): Promise<Measured[]>;
  close(): Promise<void>;
}

export async function announced(anvilUrl: string): Promise<Announced> {
  const rpc = jsonRpcUpstream(anvilUrl);
  const heads = new Map<number, number>();
  const onHead: Array<(n: number) => void> = [];
  let subscribed = false;
  let stopping = false;
  let unsubscribe = (): void => {};
  await new Promise<void>((resolve, reject) => {
    unsubscribe = rpc.subscribeHeads!({
      onHead: (n) => {
        if (!heads.has(n)) heads.set(n, performance.now());
        for (const f of onHead) f(n);
      },
      onOpen: () => {
        subscribed = true;
        resolve();
      },
      onClose: () => {
        if (!subscribed) reject(new Error('the node closed the newHeads subscription before accepting it'));
        else if (!stopping) console.log('warning: the newHeads subscription closed; blocks announced after this are unmeasured');
        subscribed = false;
      },
    });
  });

  // The receiver: first arrival per (path, block) of the unconfirmed webhooks, and every arrival.
  const arrivals = new Map<string, number>();
  const received: Announced['received'] = [];
  const waiting = new Map<string, () => void>();
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = performance.now();
      const body = JSON.parse(Buffer.concat(chunks).toString()) as { confirmed?: boolean; block?: { number?: string } };
      received.push({ at, path: req.url ?? '', block: Number(body.block?.number) });
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

  const minedIn = async (hash: string): Promise<number> => Number((await minedReceipt(rpc, hash)).blockNumber);
  const pay = async (to: string): Promise<number> =>
    minedIn(await rpc.call<string>('eth_sendTransaction', [{ from: FROM, to, value: '0x1' }]));

  const came = async (key: string, timeoutMs: number): Promise<boolean> => {
    if (arrivals.has(key)) return true;
    const got = await new Promise<boolean>((resolve) => {
      const t = setTimeout(() => resolve(false), timeoutMs);
      waiting.set(key, () => {
        clearTimeout(t);
        resolve(true);
      });
    });
    waiting.delete(key);
    return got;
  };
  const run = async (paths: readonly string[], count: number, to: (i: number) => string, timeoutMs: number): Promise<Measured[]> => {
    const out = paths.map((): Measured => ({ latencies: [], blocks: [], lost: 0, unmeasured: 0 }));
    for (let i = 0; i < count; i++) {
      const n = await pay(to(i));
      for (const [p, path] of paths.entries()) {
        const m = out[p]!;
        const key = `${path}/${n}`;
        if (!(await came(key, timeoutMs))) {
          m.lost++;
          continue;
        }
        const arrived = arrivals.get(key)!;
        const head = heads.get(n);
        if (head === undefined || head > arrived) m.unmeasured++;
        else {
          m.latencies.push(arrived - head);
          m.blocks.push(n);
        }
      }
    }
    return out;
  };

  return {
    rpc,
    heads,
    onHead,
    hook,
    arrivals,
    received,
    minedIn,
    came,
    pay,
    run,
    async close() {
      stopping = true;
      unsubscribe();
      await rpc.close();
      receiver.closeAllConnections();
      receiver.close();
    },
  };
}

export type Marks = Map<number, Map<string, number>>;

/** The server's trace lines (app/block-trace.ts): per block, each stage's first time, and the last block read (fetched). */
export function parseTraces(output: string): Marks {
  const marks: Marks = new Map();
  for (const line of output.split('\n')) {
    if (!line.includes('"msg":"trace"')) continue;
    const { stage, block, at } = JSON.parse(line) as { stage: string; block: number; at: number };
    let m = marks.get(block);
    if (m === undefined) marks.set(block, (m = new Map()));
    const prev = m.get(stage);
    // The three reads of a block answer one after another: it is fetched when the last one is in.
    if (prev === undefined || (stage === 'fetched' && at > prev && !m.has('committed'))) m.set(stage, at);
  }
  return marks;
}

/** The stages in order: figure name, the mark that ends it, label. The first starts at this process's head. */
export const STAGES: ReadonlyArray<[name: string, end: string, label: string]> = [
  ['Announce', 'head', 'head here → head in the server'],
  ['Fetch', 'fetched', 'head → block read from the node'],
  ['Write', 'written', 'read → block handed to the store (a devnet block prepared on the main thread)'],
  // Committed: LMDB's write thread has written and flushed it (Kv.writeBehind).
  ['Commit', 'committed', 'handed over → committed (write thread, fsync)'],
  ['ToMatch', 'matchSent', 'committed → match task sent'],
  ['Match', 'matchDone', 'match task sent → returned'],
  ['Build', 'built', 'returned → webhook built'],
  ['Enqueue', 'enqueued', 'built → enqueued (committed)'],
  ['Post', 'posted', 'enqueued → POST started'],
  ['Deliver', 'received', 'POST started → received'],
];

/** The median of each stage over the measured blocks (times in this process's performance.now()). */
export function breakdown(
  marks: Marks,
  blocks: readonly number[],
  head: (n: number) => number,
  received: (n: number) => number,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [i, [name, end]] of STAGES.entries()) {
    const spans: number[] = [];
    for (const n of blocks) {
      const m = marks.get(n);
      const at = (stage: string): number | undefined =>
        stage === 'received' ? received(n) : m?.get(stage) === undefined ? undefined : m.get(stage)! - performance.timeOrigin;
      const from = i === 0 ? head(n) : at(STAGES[i - 1]![1]);
      const to = at(end);
      if (from !== undefined && to !== undefined) spans.push(to - from);
    }
    out[`stage${name}P50Ms`] = round(percentile(spans, 0.5), 3);
    out[`stage${name}P99Ms`] = round(percentile(spans, 0.99), 3);
  }
  return out;
}
