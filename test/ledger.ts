/**
 * The crash ledger's audit (test/crash-ledger.test.ts): what a receiver got from
 * EVM streams, held against the node's final canonical chain.
 *
 * What is required: for each stream and each final block holding a transaction
 * to or from an address the stream watches, one `confirmed: false` webhook and,
 * once the block is `confirmations` deep, one `confirmed: true` webhook, each
 * carrying exactly those transactions. Blocks that left the chain may have had
 * their unconfirmed webhook; never a confirmed one.
 *
 * What the delivery layer promises (engine/delivery/dispatcher.ts): one durable
 * FIFO queue per stream, one delivery in flight per stream, the next sent only
 * once the outcome of the one before is committed; the matcher
 * (engine/match/matcher.ts) enqueues a stream's webhooks in block-event order,
 * (number, then unconfirmed before confirmed), a reorg's new branch being
 * announced again from its fork. So, per stream, counting first arrivals only:
 * confirmed webhooks come in strictly increasing block numbers, unconfirmed
 * webhooks of final blocks too, and a final block's unconfirmed webhook comes
 * before its confirmed one. A kill can only repeat the one webhook of a stream
 * that was in flight or whose outcome was not yet committed: a duplicate is the
 * stream's first arrival from a later server run, and its previous copy the
 * stream's arrival just before it, from an earlier run.
 *
 * A cluster (test/system/cluster-kill.test.ts) counts a run from each kill or
 * rejoin. Its owner sends a webhook once its staging committed, without waiting
 * for the partition log, and publishes outcomes after they commit: a node killed
 * may have delivered a few of a stream's webhooks that the log does not hold as
 * delivered, and the next owner sends them again, in order. `seamDepth` says how
 * many: the next run's first arrivals of the stream may repeat, in order, up to
 * that many of its last arrivals of the run before (1 in one process).
 */
export interface Arrival {
  streamId: string;
  number: number;
  hash: string;
  confirmed: boolean;
  /** Hashes of the transactions the webhook carries. */
  txs: readonly string[];
  /** Which server run (1, 2, …) was up when it arrived. */
  run: number;
}

export interface ChainBlock {
  number: number;
  hash: string;
  txs: ReadonlyArray<{ hash: string; from: string; to: string | null }>;
}

export interface Duplicate {
  streamId: string;
  number: number;
  confirmed: boolean;
  /** The runs of the previous copy and of this one. */
  runs: [number, number];
  /** Its place among the stream's repeats at the start of its run (0: the first). */
  depth: number;
}

export interface LedgerOptions {
  /** How many of a stream's last webhooks of a run the next run may send again at its start, in order (default 1). */
  seamDepth?: number;
}

export interface LedgerReport {
  /** (stream, block) webhooks the final chain requires. */
  required: { unconfirmed: number; confirmed: number };
  /** POSTs received, and distinct (stream, hash, confirmed) among them. */
  arrivals: number;
  distinct: number;
  /** Unconfirmed webhooks of blocks that left the chain (allowed). */
  orphanedUnconfirmed: number;
  duplicates: Duplicate[];
  /** Each list holds a line per defect; all empty for a correct server. */
  missing: string[];
  confirmedOffChain: string[];
  wrongContent: string[];
  badDuplicates: string[];
  orderBroken: string[];
}

const keyOf = (streamId: string, hash: string, confirmed: boolean): string => `${streamId}|${hash}|${confirmed ? 'c' : 'u'}`;
const sameSet = (a: readonly string[], b: readonly string[]): boolean =>
  a.length === b.length && [...a].sort().join() === [...b].sort().join();

export function auditLedger(
  arrivals: readonly Arrival[],
  chain: readonly ChainBlock[],
  watches: ReadonlyMap<string, ReadonlySet<string>>,
  confirmations: number,
  options: LedgerOptions = {},
): LedgerReport {
  const seamDepth = options.seamDepth ?? 1;
  const head = chain.reduce((m, b) => Math.max(m, b.number), -1);
  const finalByHash = new Map(chain.map((b) => [b.hash, b]));
  /** Per stream, per final block hash: the transactions it must carry. */
  const expected = new Map<string, Map<string, string[]>>();
  const report: LedgerReport = {
    required: { unconfirmed: 0, confirmed: 0 },
    arrivals: arrivals.length,
    distinct: 0,
    orphanedUnconfirmed: 0,
    duplicates: [],
    missing: [],
    confirmedOffChain: [],
    wrongContent: [],
    badDuplicates: [],
    orderBroken: [],
  };
  for (const [streamId, watched] of watches) {
    const mine = new Map<string, string[]>();
    expected.set(streamId, mine);
    for (const b of chain) {
      const txs = b.txs.filter((t) => watched.has(t.from) || (t.to !== null && watched.has(t.to))).map((t) => t.hash);
      if (txs.length > 0) mine.set(b.hash, txs);
    }
  }

  const byStream = new Map<string, Arrival[]>();
  for (const a of arrivals) {
    const list = byStream.get(a.streamId);
    if (list === undefined) byStream.set(a.streamId, [a]);
    else list.push(a);
  }
  const seen = new Set<string>();
  for (const [streamId, list] of byStream) {
    const want = expected.get(streamId);
    /** Index (in `list`) of the first arrival of each key. */
    const first = new Map<string, number>();
    const seams = seamRepeats(list, seamDepth);
    let lastConfirmed = -1;
    let lastFinalUnconfirmed = -1;
    list.forEach((a, i) => {
      const key = keyOf(streamId, a.hash, a.confirmed);
      const where = `stream ${streamId} block ${a.number} ${a.hash.slice(0, 10)} ${a.confirmed ? 'confirmed' : 'unconfirmed'}`;
      const prior = first.get(key);
      if (prior !== undefined) {
        const seam = seams.get(i);
        if (seam !== undefined)
          report.duplicates.push({ streamId, number: a.number, confirmed: a.confirmed, runs: [seam.run, a.run], depth: seam.depth });
        else
          report.badDuplicates.push(
            `${where}: again in run ${a.run} (first in run ${list[prior]!.run}, ${i - prior} of the stream's arrivals between)`,
          );
        return;
      }
      first.set(key, i);
      seen.add(key);
      const block = finalByHash.get(a.hash);
      if (block === undefined) {
        if (a.confirmed) report.confirmedOffChain.push(where);
        else report.orphanedUnconfirmed++;
      } else {
        const txs = want?.get(a.hash);
        if (block.number !== a.number || txs === undefined || !sameSet(txs, a.txs))
          report.wrongContent.push(`${where}: txs ${a.txs.join(',')}, expected ${txs?.join(',') ?? 'no webhook'} at block ${block.number}`);
        if (!a.confirmed) {
          if (a.number <= lastFinalUnconfirmed) report.orderBroken.push(`${where}: after unconfirmed block ${lastFinalUnconfirmed}`);
          lastFinalUnconfirmed = Math.max(lastFinalUnconfirmed, a.number);
        } else if (!first.has(keyOf(streamId, a.hash, false))) report.orderBroken.push(`${where}: before its unconfirmed webhook`);
      }
      if (a.confirmed) {
        if (a.number <= lastConfirmed) report.orderBroken.push(`${where}: after confirmed block ${lastConfirmed}`);
        lastConfirmed = Math.max(lastConfirmed, a.number);
      }
    });
  }
  report.distinct = seen.size;

  for (const [streamId, mine] of expected) {
    for (const hash of mine.keys()) {
      const b = finalByHash.get(hash)!;
      for (const confirmed of [false, true]) {
        if (confirmed && b.number > head - confirmations) continue;
        if (confirmed) report.required.confirmed++;
        else report.required.unconfirmed++;
        if (!seen.has(keyOf(streamId, hash, confirmed)))
          report.missing.push(`stream ${streamId} block ${b.number} ${hash.slice(0, 10)} ${confirmed ? 'confirmed' : 'unconfirmed'}`);
      }
    }
  }
  return report;
}

/**
 * The arrivals of one stream that repeat, at the start of a run, the stream's last arrivals of the run before, in the
 * same order (at most `depth` of them): index → the run of the copy before and the place among the repeats. Runs only
 * grow along the list.
 */
function seamRepeats(list: readonly Arrival[], depth: number): Map<number, { run: number; depth: number }> {
  const out = new Map<number, { run: number; depth: number }>();
  const key = (a: Arrival): string => keyOf(a.streamId, a.hash, a.confirmed);
  const seen = new Set<string>();
  for (let j = 0; j < list.length; ) {
    const run = list[j]!.run;
    let end = j;
    while (end < list.length && list[end]!.run === run) end++;
    // The segment's leading arrivals seen before, as many as the run before ends with, in the same order.
    let r = 0;
    while (j + r < end && seen.has(key(list[j + r]!))) r++;
    for (let k = Math.min(r, depth); k > 0; k--) {
      const from = j - k;
      if (from < 0 || list[from]!.run >= run) continue;
      let same = true;
      for (let m = 0; m < k && same; m++) same = key(list[j + m]!) === key(list[from + m]!);
      if (!same) continue;
      for (let m = 0; m < k; m++) out.set(j + m, { run: list[from + m]!.run, depth: m });
      break;
    }
    for (let m = j; m < end; m++) seen.add(key(list[m]!));
    j = end;
  }
  return out;
}

/** anvil's canonical chain from block `from` to `to`, as the ledger reads it, through `call` (a JSON-RPC call). */
export async function canonicalChain(
  call: <T>(method: string, params: unknown[]) => Promise<T>,
  from: number,
  to: number,
): Promise<ChainBlock[]> {
  type Block = { number: string; hash: string; transactions: Array<{ hash: string; from: string; to: string | null }> };
  const chain: ChainBlock[] = [];
  for (let n = from; n <= to; n += 16) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(16, to - n + 1) }, (_, i) => call<Block>('eth_getBlockByNumber', [`0x${(n + i).toString(16)}`, true])),
    );
    for (const b of batch)
      chain.push({
        number: Number(b.number),
        hash: b.hash,
        txs: b.transactions.map((t) => ({ hash: t.hash, from: t.from.toLowerCase(), to: t.to?.toLowerCase() ?? null })),
      });
  }
  return chain;
}
