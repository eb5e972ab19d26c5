import type { Dispatcher } from '../engine/delivery/dispatcher.js';
import type { ChainEvents } from '../engine/ingest/follow.js';
import type { Sender, Upstream } from '../engine/ports.js';
import type { MatchPool } from '../engine/match/ports.js';

/**
 * Where a block's time goes between the node's announcement and its webhook
 * leaving (CHAINPOST_TRACE_BLOCKS, read by bench:e2e): the ports a block passes
 * through, wrapped so that each stage marks the block. Nothing here knows the
 * time; `mark` (app/process.ts) does. Only unconfirmed webhooks are marked, the
 * ones the node's announcement of their block is measured against.
 */
export type Stage = 'head' | 'fetched' | 'written' | 'committed' | 'matchSent' | 'matchDone' | 'built' | 'enqueued' | 'posted';
export type Mark = (stage: Stage, chain: string, block: number) => void;

/** The follower's reads of one block (fetched = when each answered). */
const BLOCK_READS = new Set(['eth_getBlockReceipts', 'debug_traceBlockByNumber']);

export function tracedUpstream<U extends Upstream>(chain: string, upstream: U, mark: Mark): U {
  const traced: U = Object.create(upstream) as U;
  // A full block (transactions included), its receipts or its traces.
  const fetched = (method: string, params: unknown[]): void => {
    if (BLOCK_READS.has(method) || (method === 'eth_getBlockByNumber' && params[1] === true)) mark('fetched', chain, Number(params[0]));
  };
  traced.call = async <T>(method: string, params: unknown[]): Promise<T> => {
    const out = await upstream.call<T>(method, params);
    fetched(method, params);
    return out;
  };
  if (upstream.callRaw !== undefined) {
    const callRaw = upstream.callRaw.bind(upstream);
    traced.callRaw = async (method, params) => {
      const out = await callRaw(method, params);
      fetched(method, params);
      return out;
    };
  }
  if (upstream.subscribeHeads !== undefined) {
    const subscribe = upstream.subscribeHeads.bind(upstream);
    traced.subscribeHeads = (handlers) =>
      subscribe({
        ...handlers,
        onHead: (n) => {
          mark('head', chain, n);
          handlers.onHead(n);
        },
      });
  }
  return traced;
}

/** `seen` runs inside the follower's transaction (written, not yet committed); `committed` once that is durable. */
export function tracedEvents(events: ChainEvents, mark: Mark): ChainEvents {
  const written = new Map<string, number[]>();
  return {
    ...events,
    seen(chain, number, hash) {
      mark('written', chain, number);
      written.set(chain, [...(written.get(chain) ?? []), number]);
      events.seen(chain, number, hash);
    },
    committed(chain) {
      for (const n of written.get(chain) ?? []) mark('committed', chain, n);
      written.delete(chain);
      events.committed?.(chain);
    },
  };
}

export function tracedPool(pool: MatchPool, mark: Mark): MatchPool {
  return {
    async match(chain, numbers, filter) {
      for (const n of numbers) mark('matchSent', chain, n);
      const out = await pool.match(chain, numbers, filter);
      for (const n of numbers) mark('matchDone', chain, n);
      return out;
    },
    close: () => pool.close(),
  };
}

/** An unconfirmed webhook's chain and block, read from its payload. */
function unconfirmed(payload: Record<string, unknown>): { chain: string; block: number } | undefined {
  const p = payload as { confirmed?: boolean; chainId?: string; block?: { number?: string } };
  return p.confirmed === false && p.block?.number !== undefined ? { chain: p.chainId ?? '', block: Number(p.block.number) } : undefined;
}

/** The matcher stages its webhooks inside its transaction (the bodies built); they are enqueued once that committed. */
export function tracedEnqueue(dispatcher: Pick<Dispatcher, 'prepare' | 'stage'>, mark: Mark): Pick<Dispatcher, 'prepare' | 'stage'> {
  return {
    prepare: (items) => dispatcher.prepare(items),
    stage(items) {
      const blocks = items.map(({ payload }) => unconfirmed(payload)).filter((u) => u !== undefined);
      for (const u of blocks) mark('built', u.chain, u.block);
      const staged = dispatcher.stage(items);
      return {
        results: staged.results,
        partitions: staged.partitions,
        failed: () => staged.failed(),
        settle() {
          // Marked before the deliveries start: enqueued comes before posted.
          for (const u of blocks) mark('enqueued', u.chain, u.block);
          staged.settle();
        },
        durable: () => staged.durable?.(),
      };
    },
  };
}

export function tracedSender<S extends Sender>(sender: S, mark: Mark): S {
  const traced: S = Object.create(sender) as S;
  traced.post = (url, body, headers, timeoutMs) => {
    const u = unconfirmed(JSON.parse(new TextDecoder().decode(body)) as Record<string, unknown>);
    if (u !== undefined) mark('posted', u.chain, u.block);
    return sender.post(url, body, headers, timeoutMs);
  };
  return traced;
}
