import type { Clock } from '../clock.js';
import { UnitsTakenBack } from '../cluster/partition-log.js';
import type { Dispatcher, Staged } from '../delivery/dispatcher.js';
import { settleAfter, type EnqueueItem } from '../delivery/enqueue.js';
import { streamKey } from '../delivery/dispatcher.js';
import type { Logger } from '../log.js';
import type { StagedElsewhere } from '../match/lanes.js';
import type { FilterSets } from '../match/match-blocks.js';
import type { CompiledChain, Watchlist } from '../match/watchlist.js';
import { NodeError, type Kv, type Upstream } from '../ports.js';
import { onNewWebhook } from '../streams/transitions.js';
import { fillPrevouts, unresolvedInputs, type BtcTransaction } from './block.js';
import { mempoolBody } from './body.js';
import { prevoutOf, txFromCore, type CoreScriptPubKey, type CoreTransaction } from './core-json.js';
import { outputKey, prevoutsOf, type Prevout } from './prepared.js';
import { buildBtcProbe } from './probe.js';
import type { BitcoinStreamRecord } from './stream.js';
import { xpubMatches } from './webhook.js';
import type { XpubWindows } from './xpub-windows.js';

/**
 * The mempool phase: at each poll, the transactions new to Bitcoin Core's
 * mempool are read (getrawtransaction, and the outputs they spend by gettxout,
 * so a watched address matches as a spender too), matched against the chain's filter set
 * here on the main thread (one transaction's probe column is a few keys), and
 * each matched stream gets the mempool form of the body — at most once per
 * transaction: what was sent is kept (`btcMempool`) and never sent again.
 *
 * On a cluster the webhooks of a stream whose partition another node owns are staged by that owner (`elsewhere`, as a
 * moving stream's are by the lanes), and recorded sent here once it answered: an ask that failed is asked again at
 * the next poll, never recorded without being staged (docs/decisions/cluster.md, Part 2).
 */
export interface MempoolDeps {
  chain: string;
  upstream: Upstream;
  kv: Kv;
  clock: Clock;
  log: Logger;
  watchlist: Pick<Watchlist, 'ready'>;
  sets: FilterSets;
  windows: XpubWindows;
  grown(streamId: string): void;
  dispatcher: Pick<Dispatcher, 'stage'>;
  /** A cluster node's streams whose webhooks another node stages (their partition's owner); none in one process. */
  elsewhere?: StagedElsewhere;
}

/** New transactions read per poll at most: a node's mempool of 100,000 is taken in over several polls. */
const PER_POLL = 2_000;
/** How long the record of a mempool delivery is kept: a transaction that long unconfirmed has long been evicted. */
const KEEP_MS = 14 * 86_400_000;
/** Records looked at per poll for the purge. */
const PURGE_BATCH = 1_000;
/** The key of the record that a stream was sent a transaction's mempool webhook. */
const sentKey = (streamId: string, txid: string): string => `${streamId}/${txid}`;

export class BitcoinMempool {
  /** Txids read since they entered the mempool (forgotten when they leave it). */
  private readonly known = new Set<string>();
  private purgeFrom = '';
  /**
   * Partitions whose owner could not be asked during this poll: not asked again before the next one, so an owner
   * between nodes (a second's wait) or not answering (20 s) holds the follower's sync once a poll, not once a transaction.
   */
  private readonly unasked = new Set<number>();
  /**
   * By txid, the streams whose webhook an owner answered it staged while the transaction recording it here failed:
   * recorded at the next read, not asked again (forgotten when the transaction leaves the mempool).
   */
  private readonly forwarded = new Map<string, Set<string>>();

  constructor(private readonly deps: MempoolDeps) {}

  /** Reads what is new in the mempool and delivers what matches; resolves when done. */
  async poll(): Promise<void> {
    const { chain, upstream } = this.deps;
    this.unasked.clear();
    await this.purge();
    // Not compiled yet (the load, a change): the mempool is read at the next poll; blocks do not wait for it.
    const set = this.deps.watchlist.ready(chain);
    if (set === undefined || set.streams.length === 0) return;
    const txids = await upstream.call<string[]>('getrawmempool', [false]);
    const current = new Set(txids);
    for (const t of this.known) if (!current.has(t)) this.known.delete(t);
    for (const t of this.forwarded.keys()) if (!current.has(t)) this.forwarded.delete(t);
    let read = 0;
    for (const txid of txids) {
      if (this.known.has(txid)) continue;
      if (read++ >= PER_POLL) break;
      const tx = await this.read(txid);
      // The set as it is now: a stream changed while the transactions were read sees the ones after. While the
      // new set compiles, this one and the rest are read again at the next poll (not marked known).
      const now = this.deps.watchlist.ready(chain);
      if (now === undefined) break;
      // Known once every stream it concerns has it staged: one whose owner could not be asked is read again.
      if (tx === undefined || (await this.deliver(tx, now))) this.known.add(txid);
    }
  }

  /** A mempool transaction with the outputs it spends; undefined when it left the mempool meanwhile. */
  private async read(txid: string): Promise<BtcTransaction | undefined> {
    let json: CoreTransaction;
    try {
      // Verbose: for a mempool transaction Core has no undo data, so verbosity 2 would give no prevouts either.
      json = await this.deps.upstream.call<CoreTransaction>('getrawtransaction', [txid, true]);
    } catch (err) {
      if (err instanceof NodeError && err.code === -5) return undefined;
      throw err;
    }
    const tx = txFromCore(json);
    const missing = unresolvedInputs([tx]);
    if (missing.length > 0) {
      const found = prevoutsOf(this.deps.kv, this.deps.chain, missing);
      for (const m of missing) if (!found.has(outputKey(m.txid, m.vout))) await this.spentOutput(m.txid, m.vout, found);
      fillPrevouts([tx], (t, v) => found.get(outputKey(t, v)));
    }
    return tx;
  }

  /**
   * The output an input spends: from the chain's unspent outputs (gettxout, no -txindex needed), else from a
   * parent still in the mempool (getrawtransaction finds those without -txindex too).
   */
  private async spentOutput(txid: string, vout: number, into: Map<string, Prevout>): Promise<void> {
    const utxo = await this.deps.upstream.call<{ value: number; scriptPubKey: CoreScriptPubKey } | null>('gettxout', [txid, vout, false]);
    if (utxo !== null) {
      into.set(outputKey(txid, vout), prevoutOf(utxo));
      return;
    }
    try {
      const parent = await this.deps.upstream.call<CoreTransaction>('getrawtransaction', [txid, true]);
      for (const o of parent.vout) into.set(outputKey(txid, o.n), prevoutOf(o));
    } catch (err) {
      if (!(err instanceof NodeError && err.code === -5)) throw err;
    }
  }

  /**
   * Matches one transaction and enqueues its body for each stream it concerns that has not had it: here, or by its
   * partition's owner. Answers whether every one was staged (false: some are to be asked again at the next poll).
   */
  private async deliver(tx: BtcTransaction, compiled: CompiledChain): Promise<boolean> {
    const { kv, log } = this.deps;
    const built = this.build(tx, compiled);
    if (built.length === 0) return true;
    const forwarded = this.forwarded.get(tx.txid) ?? new Set<string>();
    const again = built.filter((item) => forwarded.has(item.streamId));
    const { here, away } = this.split(built.filter((item) => !forwarded.has(item.streamId)));
    const sent = (item: EnqueueItem): string => sentKey(item.streamId, tx.txid);
    // The owners' first: a webhook is recorded sent once its owner answered that it staged it.
    const asked = await Promise.all(
      [...away].map(async ([p, list]) => {
        if (this.unasked.has(p)) return undefined;
        try {
          await this.deps.elsewhere!.stage(p, list);
          for (const item of list) forwarded.add(item.streamId);
          this.forwarded.set(tx.txid, forwarded);
          return list;
        } catch (err) {
          this.unasked.add(p);
          log.warn('a mempool webhook could not be staged by its partition’s owner; asked again at the next poll', {
            chain: this.deps.chain,
            txid: tx.txid,
            partition: p,
            err,
          });
          return undefined;
        }
      }),
    );
    const recorded = [...here, ...again, ...asked.flatMap((list) => list ?? [])];
    const now = this.deps.clock.now();
    let staged: Staged | undefined;
    let committed = false;
    const commit = kv
      .transactAsync(() => {
        for (const item of recorded) kv.put('btcMempool', sent(item), now);
        if (here.length > 0) staged = this.deps.dispatcher.stage(here);
      })
      .then(() => {
        committed = true;
        this.forwarded.delete(tx.txid);
      });
    try {
      await settleAfter(commit, () => staged);
    } catch (err) {
      if (!committed) throw err;
      // Committed, then units of it taken back from this store (their partitions lost before the publish): those
      // webhooks are not sent, as far as the record goes, so the next poll has them staged (by their next owner, at
      // least once). Those of the partitions whose units were published are recorded: not staged twice. Each by the
      // partition it was staged in (a read now may find its queue moved on).
      const taken = err instanceof UnitsTakenBack ? err.partitions : undefined;
      const at = staged!.partitions;
      const lost = taken === undefined ? here : here.filter((_, i) => at[i] === undefined || taken.has(at[i]));
      await kv.transactAsync(() => lost.forEach((item) => kv.remove('btcMempool', sent(item))));
      log.warn('mempool webhooks were taken back with their partition; staged again at the next poll', {
        chain: this.deps.chain,
        txid: tx.txid,
        webhooks: lost.length,
        err,
      });
      return false;
    }
    return asked.every((list) => list !== undefined);
  }

  /** The mempool body of `tx` for each stream it matches that sends new webhooks and has not had it. */
  private build(tx: BtcTransaction, compiled: CompiledChain): EnqueueItem[] {
    const { chain, kv, clock, sets, windows } = this.deps;
    const probe = buildBtcProbe([tx]);
    const matched = sets.of(chain, compiled.filter).match(probe);
    const now = clock.now();
    const items: EnqueueItem[] = [];
    for (const index of matched.keys()) {
      const listed = compiled.streams[index];
      if (listed === undefined) continue;
      const { id, tenantId } = listed;
      const stream = kv.get<BitcoinStreamRecord>('streams', streamKey(tenantId, id));
      if (stream === undefined || onNewWebhook(stream.status) === 'drop' || kv.has('btcMempool', sentKey(id, tx.txid))) continue;
      // The xpub addresses it touches (a use moves the wallet's window on, as a block's does).
      const xpubs =
        windows.keysOf(id).length === 0 ? undefined : xpubMatches({ windows, grown: (s) => this.deps.grown(s) }, id, probe, new Set());
      const body = mempoolBody(tx, {
        streamId: id,
        tag: stream.tag,
        includeInputs: stream.includeInputs,
        includeOutputs: stream.includeOutputs,
        now: Math.floor(now / 1000),
        xpubsOf: (i) => xpubs?.get(i) ?? [],
      });
      items.push({ streamId: id, payload: body as unknown as Record<string, unknown> });
    }
    return items;
  }

  /** The webhooks staged here, and those of each partition another node owns (none in one process). */
  private split(items: readonly EnqueueItem[]): { here: EnqueueItem[]; away: Map<number, EnqueueItem[]> } {
    const here: EnqueueItem[] = [];
    const away = new Map<number, EnqueueItem[]>();
    for (const item of items) {
      const p = this.deps.elsewhere?.partitionOf(item.streamId);
      if (p === undefined) here.push(item);
      else away.set(p, [...(away.get(p) ?? []), item]);
    }
    return { here, away };
  }

  /** Drops delivery records older than KEEP_MS, a batch per poll, going round the table. */
  private async purge(): Promise<void> {
    const rows = this.deps.kv.range<number>('btcMempool', { start: this.purgeFrom, limit: PURGE_BATCH });
    this.purgeFrom = rows.length < PURGE_BATCH ? '' : `${rows.at(-1)!.key}\u0000`;
    const old = rows.filter((r) => r.value < this.deps.clock.now() - KEEP_MS);
    if (old.length > 0) await this.deps.kv.transactAsync(() => old.forEach((r) => this.deps.kv.remove('btcMempool', r.key)));
  }
}
