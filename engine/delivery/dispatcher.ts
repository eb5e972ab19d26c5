import type { Clock, Timer } from '../clock.js';
import { timeKey } from '../expiry.js';
import type { Logger } from '../log.js';
import type { Entry, Kv, Mailer, Sender } from '../ports.js';
import { withoutPassword } from '../redact.js';
import type { StoredStream } from '../streams/model.js';
import { settingsOf } from '../streams/settings.js';
import { onNewWebhook, sends } from '../streams/transitions.js';
import type { Metrics } from '../metrics.js';
import { bodyAt, ownBytes, webhookBody, type WebhookBody } from './body.js';
import { DeliveryCounters } from './counters.js';
import { uuidV7, uuidV7Ms } from './ids.js';
import { DELIVERY_TIMEOUT_MS, ERROR_TO_TERMINATED_MS, HISTORY_RETENTION_MS, QUEUE_CAP } from './limits.js';
import { addCount, countKey, historyRange, isSuccessLogs, logRange, markDelivered, rangeOf, type DeliveryStatus, type StoredHistory, type StoredLog } from './records.js';
import { capRange, purgeExpired, type Retention } from './retention.js';
import { GIVE_UP_AFTER_MS, retryDelay } from './retry-schedule.js';
import { START_RATE, afterFailure, afterSuccess, inError } from './success-rate.js';
import { DEFAULT_TENANT_SLOTS, DEFAULT_UNANSWERED_SLOTS, MAX_IN_FLIGHT, Slots, type Heard } from './slots.js';
import { STAGE_CHUNK, stageInChunks } from './stage-chunks.js';
import { TimerWheel } from './timer-wheel.js';
import { TurnBudget } from './turn-budget.js';
import { summarize, webhookHeaders, type WebhookSummary } from './webhook.js';

/**
 * Delivers what is enqueued, with the interface's rules: a durable FIFO queue
 * per stream (LMDB), in order within a stream and concurrently across streams,
 * retries on the schedule kept in a timer wheel on the service clock, the
 * success rate per webhook URL, the queue cap, error → terminated after 24 h,
 * failed deliveries in history, and e-mail when a stream enters error or ends.
 */
export interface QueueItem extends WebhookBody {
  seq: number;
  summary: WebhookSummary;
  /** Failed attempts so far; the body's `retries`. */
  failures: number;
  firstFailedAt?: number;
  nextAt: number;
  historyId?: string;
}

export interface Stats {
  totalWebhooksDelivered: number;
  totalWebhooksFailed: number;
  totalLogsProcessed: number;
  totalTxsProcessed: number;
  totalTxsInternalProcessed: number;
  createdAt: string;
  updatedAt: string;
}

/** A stream's or tenant's statistics before anything happened. */
export const emptyStats = (iso: string): Stats => ({ totalWebhooksDelivered: 0, totalWebhooksFailed: 0, totalLogsProcessed: 0, totalTxsProcessed: 0, totalTxsInternalProcessed: 0, createdAt: iso, updatedAt: iso });

export interface DispatcherOptions {
  alertEmail: string | undefined;
  /** How long history and delivery logs are kept (defaults: the interface's week, success logs a day, 1,000,000 of them per tenant). */
  retention?: Partial<Retention>;
  /** Webhooks staged per write transaction by enqueueBatch (default STAGE_CHUNK, engine/delivery/stage-chunks.ts). */
  stageChunk?: number;
  /** Deliveries in flight at once, across all streams (default MAX_IN_FLIGHT). */
  maxInFlight?: number;
  /** Deliveries in flight at once to one receiver origin: the sender's connections to it (default 64). */
  maxInFlightPerOrigin?: number;
  /** Deliveries in flight at once for one tenant (default DEFAULT_TENANT_SLOTS). */
  maxInFlightPerTenant?: number;
  /** Deliveries in flight at once for one tenant to the receiver origins that have not answered it (Slots; default DEFAULT_UNANSWERED_SLOTS). */
  maxInFlightUnanswered?: number;
  /**
   * Under the test clock a wake-up waits for the deliveries it started, so a
   * jump sees each failure's next retry at its own instant. In real time it does
   * not: one slow receiver must not hold other timers back.
   */
  awaitDeliveriesOnWake?: boolean;
}

export type EnqueueResult = 'queued' | 'history' | 'dropped';

/** A webhook for a stream, as the matcher builds it. */
export interface EnqueueItem {
  streamId: string;
  payload: Record<string, unknown>;
}

/** A webhook's body serialized ahead of its transaction (Dispatcher.prepare), with the tag it was serialized with. */
export interface Prepared {
  ready?: { tag: string; body: WebhookBody; summary: ReturnType<typeof summarize> };
}

/** Deliveries started per event-loop turn (TurnBudget): each signs its body and opens its request, ~0.1 ms. */
const STARTS_PER_TURN = 32;

/** Delivery outcomes committed per transaction at most (queueFlush): about 5 ms of writes in its callback. */
export const FLUSH_MAX = 250;

/** Webhooks serialized per event-loop turn by prepare(): ~2 ms of work. */
const PREPARE_CHUNK = 100;

/** Webhooks written in a transaction not yet committed: `settle()` once it is, and they leave. */
export interface Staged {
  results: EnqueueResult[];
  settle(): void;
}

/** A stream's queue counters, kept apart from its definition: they change with every webhook. */
export interface QueueMeta {
  nextSeq: number;
  queued: number;
}

/** Defaults of the retention rules (engine/config/config.ts reads the variables). */
export const DEFAULT_RETENTION: Retention = { historyMs: HISTORY_RETENTION_MS, successLogMs: 86_400_000, successLogMax: 1_000_000 };

/**
 * One table's rows (`queueMeta` or `stats`) as committed, kept so that a transaction reads them without a get and a
 * decode (a block's 1,000 webhooks read 2,000). This dispatcher is their only writer. A row written by a transaction
 * not yet known to have committed is pending and read from the store, which holds what the transactions before
 * wrote; one whose transaction failed stays pending (read from the store) for good.
 */
export class RowCache<T> {
  private readonly rows = new Map<string, T>();
  private readonly pending = new Map<string, number>();
  /** Per row, the write order of the transaction whose value is kept: commits may be told out of order. */
  private readonly versions = new Map<string, number>();

  /** The row as committed, unless a transaction not known to have committed wrote it. */
  known(key: string): T | undefined {
    return this.pending.has(key) ? undefined : this.rows.get(key);
  }

  /** Written by a transaction whose commit is not known yet. */
  wrote(key: string): void {
    this.pending.set(key, (this.pending.get(key) ?? 0) + 1);
  }

  /**
   * That transaction (its writes' `version`, their order among all) committed: the row as it wrote it, unless a later
   * one's is kept. Answers whether its row is kept.
   */
  committed(key: string, value: T, version: number): boolean {
    const n = (this.pending.get(key) ?? 1) - 1;
    if (n > 0) this.pending.set(key, n);
    else this.pending.delete(key);
    if (version <= (this.versions.get(key) ?? 0)) return false;
    this.versions.set(key, version);
    this.rows.set(key, value);
    return true;
  }
}

/** The rows a transaction reads from memory, and the order of transactions' writes (taken in their callbacks, which run in commit order). */
interface Rows {
  metas: RowCache<QueueMeta>;
  stats: RowCache<Stats>;
  nextVersion(): number;
}

/**
 * What one transaction (an enqueue batch or a flush of outcomes) changes in
 * counters, rates, stats and record counts: read once, changed in memory,
 * written once at the end.
 */
class Changes {
  readonly metas = new Map<string, QueueMeta>();
  readonly rates = new Map<string, number>();
  readonly stats = new Map<string, Record<string, number>>();
  /** Rows added per history or log range (`counts` key). */
  readonly added = new Map<string, number>();
  /** Per stream, the seq its fresh queue starts at once this commits. */
  readonly heads = new Map<string, number>();
  /** The `stats` rows as written (the cache takes them once this commits). */
  readonly statsWritten = new Map<string, Stats>();
  /** The order of this transaction's writes among all (RowCache). */
  version = 0;
  private readonly streams = new Map<string, StoredStream | undefined>();

  /** `read`: a stream's record as last committed (the dispatcher's copy in memory, not decoded again for each webhook). */
  constructor(
    private readonly kv: Kv,
    private readonly successLogMax: number,
    private readonly read: (tenant: string, id: string) => StoredStream | undefined,
    private readonly cache: Rows,
  ) {}

  /** The stream as this transaction sees it: a copy of its own, which the transaction may change and write. */
  stream(tenant: string, id: string): StoredStream | undefined {
    const key = streamKey(tenant, id);
    if (!this.streams.has(key)) {
      const s = this.read(tenant, id);
      this.streams.set(key, s === undefined ? undefined : { ...s });
    }
    return this.streams.get(key);
  }

  count(key: string, n = 1): void {
    this.added.set(key, (this.added.get(key) ?? 0) + n);
  }

  meta(streamId: string): QueueMeta {
    let m = this.metas.get(streamId);
    if (m === undefined) {
      const known = this.cache.metas.known(streamId);
      m = known !== undefined ? { ...known } : (this.kv.get<QueueMeta>('queueMeta', streamId) ?? { nextSeq: 0, queued: 0 });
      this.metas.set(streamId, m);
    }
    return m;
  }

  rate(key: string): number {
    let r = this.rates.get(key);
    if (r === undefined) {
      r = this.kv.get<number>('rates', key) ?? START_RATE;
      this.rates.set(key, r);
    }
    return r;
  }

  bump(tenant: string, streamId: string, add: Record<string, number>): void {
    for (const key of [tenant, streamKey(tenant, streamId)]) {
      const d = this.stats.get(key) ?? {};
      for (const [k, v] of Object.entries(add)) d[k] = (d[k] ?? 0) + v;
      this.stats.set(key, d);
    }
  }

  write(now: number): void {
    this.version = this.cache.nextVersion();
    for (const [id, m] of this.metas) {
      this.kv.put('queueMeta', id, m);
      this.cache.metas.wrote(id);
    }
    for (const [key, r] of this.rates) this.kv.put('rates', key, r);
    const iso = new Date(now).toISOString();
    for (const [key, d] of this.stats) {
      const known = this.cache.stats.known(key);
      const st = known !== undefined ? { ...known } : (this.kv.get<Stats>('stats', key) ?? emptyStats(iso));
      const counters = st as unknown as Record<string, number>;
      for (const [k, v] of Object.entries(d)) counters[k] = (counters[k] ?? 0) + v;
      st.updatedAt = iso;
      this.kv.put('stats', key, st);
      this.cache.stats.wrote(key);
      this.statsWritten.set(key, st);
    }
    for (const [key, n] of this.added) {
      const total = addCount(this.kv, key, n);
      // The success-log cap is kept in the same transaction: the oldest go as new ones come.
      const range = rangeOf(key);
      if (isSuccessLogs(range)) capRange(this.kv, range, total, this.successLogMax);
    }
  }
}

interface Outcome {
  s: StoredStream;
  item: QueueItem;
  /** Where the item waited (the fresh queue or the retry index) and under which key. */
  table: 'queue' | 'retries';
  key: string;
  /** The URL it was sent to (the stream's may have changed since). */
  url: string;
  res: { delivered: boolean; status?: number; error?: string };
  now: number;
}

/** A failed attempt as its `warn` line tells it, once its outcome is committed. */
interface FailedAttempt {
  streamId: string;
  webhookUrl: string;
  status?: number;
  error: string;
  /** 1 for the first try. */
  attempt: number;
  /** When it is sent again (ISO), or null when it is not. */
  nextRetryAt: string | null;
  historyId?: string;
  note?: string;
}

/** Built for failures only: a delivered webhook allocates nothing for the log. */
function failedAttempt({ s, item, url, res }: Outcome, nextAt: number | undefined, historyId: string | undefined, note: string | undefined): FailedAttempt {
  // Logged: a receiver's basic-auth password stays out of the line.
  const f: FailedAttempt = { streamId: s.id, webhookUrl: withoutPassword(url), error: res.error ?? 'no answer', attempt: item.failures + 1, nextRetryAt: nextAt === undefined ? null : new Date(nextAt).toISOString() };
  if (res.status !== undefined) f.status = res.status;
  if (historyId !== undefined) f.historyId = historyId;
  if (note !== undefined) f.note = note;
  return f;
}

/** What an attempt tells of its receiver's origin (Slots): any answer proves it, no answer within the timeout does not; an error says nothing. */
const heard = (res: { status?: number; timedOut?: true } | undefined): Heard | undefined =>
  res?.status !== undefined ? 'answer'
  : res?.timedOut === true ? 'silence'
  : undefined;

const seqPart = (seq: number): string => String(seq).padStart(12, '0');
const seqKey = (streamId: string, seq: number): string => `${streamId}/${seqPart(seq)}`;
/** A failed webhook waits apart from the fresh queue, ordered by when it is due. */
const retryKey = (streamId: string, nextAt: number, seq: number): string => `${streamId}/${timeKey(nextAt)}/${seqPart(seq)}`;
const within = (id: string) => ({ start: `${id}/`, end: `${id}/\uffff` });
export const streamKey = (tenant: string, id: string): string => `${tenant}/${id}`;

export class Dispatcher {
  private readonly wheel: TimerWheel;
  private wake: Timer | undefined;
  private wakeAt = Infinity;
  /** Streams by a small number (the wheel's payload), and back. */
  private readonly numbers = new Map<string, number>();
  private readonly byNumber: string[] = [];
  private readonly tenants = new Map<string, string>();
  /**
   * Per `tenant/webhookUrl` (a success rate's key), the streams written with that URL since the start: those the
   * rate may put in error, each checked against its record. Entries are added inside the transactions that write
   * a URL, and leave only with the stream: a stream is never missing from its URL's, whatever commits when.
   */
  private readonly byUrl = new Map<string, Set<string>>();
  /** Per stream, the key (in `queue` or `retries`) of its webhook in flight. */
  private readonly inFlight = new Map<string, string>();
  private readonly budget = new TurnBudget(
    STARTS_PER_TURN,
    (id) => this.kick(id),
    () => this.pullLine(),
    () => this.notifyIfIdle(),
  );
  private readonly scheduled = new Map<string, { handle: number; at: number }>();
  private readonly slots: Slots;
  /** Receiver origins by webhook URL (the slots are per origin). */
  private readonly origins = new Map<string, string>();
  /** Each stream's origin when it was last read: a stream whose receiver has no free slot waits without reading the store. */
  private readonly streamOrigins = new Map<string, string>();
  /** Per stream, the seq of its fresh queue's first webhook, when known: read by its key (the queue only loses its head). */
  private readonly heads = new Map<string, number>();
  /** Streams that may have webhooks waiting for a retry; one leaves when its retry index is found empty. */
  private readonly mayRetry = new Set<string>();
  /** Each stream's undelivered count as last committed (x-queue-size), read from `queueMeta` once. */
  private readonly queued = new Map<string, number>();
  /** Stream records as read for sending; every write of a record drops its entry (changed()), so the next send reads it again. */
  private readonly live = new Map<string, StoredStream>();
  /** `queueMeta` and `stats` rows as committed (RowCache). */
  private writes = 0;
  private readonly rows: Rows = { metas: new RowCache(), stats: new RowCache(), nextVersion: () => ++this.writes };
  private readonly terminations = new Map<string, Timer>();
  private readonly retention: Retention;
  /** Webhook secrets by tenant: made once, never changed (POST /settings changes the region only). */
  private readonly secrets = new Map<string, string>();
  private purging: Promise<number> | undefined;
  /** Set by stop(): no delivery starts any more. */
  private stopping = false;
  private idle: Array<() => void> = [];
  /** Outcomes waiting for a flush, each with what settles its delivery once committed. */
  private outcomes: Array<{ o: Outcome; committed: () => void }> = [];
  /** A flush is queued whose transaction has not taken its outcomes yet. */
  private flushQueued = false;
  /** Outcomes since the start, for /metrics. */
  private readonly counters = new DeliveryCounters();

  constructor(
    private readonly kv: Kv,
    private readonly clock: Clock,
    private readonly sender: Sender,
    private readonly mailer: Mailer | undefined,
    private readonly log: Logger,
    private readonly opts: DispatcherOptions,
  ) {
    this.wheel = new TimerWheel(clock.now());
    this.retention = { ...DEFAULT_RETENTION, ...opts.retention };
    this.slots = new Slots({ max: opts.maxInFlight ?? MAX_IN_FLIGHT, perOrigin: opts.maxInFlightPerOrigin ?? 64, perTenant: opts.maxInFlightPerTenant ?? DEFAULT_TENANT_SLOTS, unanswered: opts.maxInFlightUnanswered ?? DEFAULT_UNANSWERED_SLOTS });
  }

  /** Rebuilds timers from the store (after a restart nothing is lost) and resumes delivery. */
  start(): void {
    for (const { value: s } of this.kv.range<StoredStream>('streams')) {
      this.track(s);
      if (s.status === 'error') this.scheduleTermination(s);
      if (sends(s.status) && this.queueSize(s.id) > 0) this.kick(s.id);
    }
  }

  /** Registers a stream (on create, and at start). */
  track(s: StoredStream): void {
    this.usesUrl(s);
    this.tenants.set(s.id, s.tenantId);
    this.counters.track(s.id);
    this.mayRetry.add(s.id);
    if (!this.numbers.has(s.id)) {
      this.numbers.set(s.id, this.byNumber.length);
      this.byNumber.push(s.id);
    }
  }

  /** A stream is written with its webhookUrl; call inside the transaction that writes it (create, update). */
  usesUrl(s: StoredStream): void {
    const key = `${s.tenantId}/${s.webhookUrl}`;
    let ids = this.byUrl.get(key);
    if (ids === undefined) this.byUrl.set(key, (ids = new Set()));
    ids.add(s.id);
  }

  /** Removes a stream's queued webhooks and counters; call inside the transaction that deletes the stream. */
  dropQueue(id: string): void {
    for (const table of ['queue', 'retries'] as const) for (const { key } of this.kv.range(table, within(id))) this.kv.remove(table, key);
    this.kv.remove('queueMeta', id);
    // Never marked committed: the deleted stream's row is read from the store from now on.
    this.rows.metas.wrote(id);
  }

  /** Forgets a deleted stream's timers (its queue went in the delete's transaction; its history stays). */
  forget(id: string): void {
    const sched = this.scheduled.get(id);
    if (sched !== undefined) this.wheel.cancel(sched.handle);
    this.scheduled.delete(id);
    this.terminations.get(id)?.cancel();
    this.terminations.delete(id);
    this.tenants.delete(id);
    // Deletes are rare: every URL's set is looked at rather than keeping each stream's URLs beside them.
    for (const [key, ids] of this.byUrl) if (ids.delete(id) && ids.size === 0) this.byUrl.delete(key);
    this.streamOrigins.delete(id);
    this.heads.delete(id);
    this.mayRetry.delete(id);
    this.queued.delete(id);
    this.live.delete(id);
    this.counters.forget(id);
  }

  /** Delivered, failed and retried counters and queue sizes in all (with `perStream` per stream too), and the slots in use and waited for, on /metrics. */
  exportMetrics(metrics: Metrics, perStream: boolean): void {
    this.counters.export(metrics, (id) => this.queueSize(id), perStream);
    metrics.gauge('chainpost_webhooks_in_flight', 'Webhook POSTs under way (delivery slots held), all tenants.', () => [{ labels: {}, value: this.slots.inFlight }]);
    metrics.gauge('chainpost_webhook_streams_waiting', 'Streams waiting for a delivery slot, or for their turn to start one, all tenants.', () => [{ labels: {}, value: this.slots.inLine + this.budget.waiting }]);
  }

  /** A stream's record was written (call after the write): the next send reads it again. */
  changed(id: string): void {
    this.live.delete(id);
  }

  /**
   * Webhooks for streams, committed in transactions of their own (`stageChunk` webhooks each, in order); resolves
   * once all are on disk. The commits and their fsync happen off the event loop: a block's thousand webhooks never
   * hold requests (issue 19).
   */
  async enqueueBatch(items: ReadonlyArray<EnqueueItem>): Promise<EnqueueResult[]> {
    return stageInChunks(this.kv, this, await this.prepare(items), this.opts.stageChunk ?? STAGE_CHUNK);
  }

  /**
   * The engine function the matcher calls, inside the write transaction it commits with its own writes: an
   * active stream queues its webhook, a stream in error keeps it in history, paused and terminated streams
   * drop it. The caller calls `settle()` once that transaction committed: a webhook leaves only once on disk.
   */
  /**
   * Serializes the webhooks' bodies before the transaction that stages them, PREPARE_CHUNK to an event-loop turn:
   * a block's thousand webhooks are never serialized in one stretch, nor inside the write transaction. A body
   * carries the stream's tag as it is now; a stream whose tag changes before the transaction is serialized again there.
   */
  async prepare<I extends EnqueueItem>(items: readonly I[]): Promise<Array<I & Prepared>> {
    const out: Array<I & Prepared> = [];
    for (let i = 0; i < items.length; i++) {
      if (i > 0 && i % PREPARE_CHUNK === 0) await new Promise((resolve) => setImmediate(resolve));
      const item = items[i]!;
      const s = this.liveStream(item.streamId);
      out.push(s === undefined ? { ...item } : { ...item, ready: { tag: s.tag, body: webhookBody({ ...item.payload, streamId: item.streamId, tag: s.tag }), summary: summarize(item.payload) } });
    }
    return out;
  }

  stage(items: ReadonlyArray<EnqueueItem & Prepared>): Staged {
    const now = this.clock.now();
    const wentToError: StoredStream[] = [];
    const touched = new Set<string>();
    const changes = this.changes();
    const results = items.map(({ streamId, payload, ready }): EnqueueResult => {
      const tenant = this.tenants.get(streamId);
      if (tenant === undefined) return 'dropped';
      const s = changes.stream(tenant, streamId);
      if (s === undefined) return 'dropped';
      const fate = onNewWebhook(s.status);
      if (fate === 'drop') return 'dropped';
      const summary = ready?.summary ?? summarize(payload);
      changes.bump(tenant, streamId, { totalLogsProcessed: summary.logs, totalTxsProcessed: summary.txs, totalTxsInternalProcessed: summary.txsInternal });
      // Serialized once: the queue, the POSTs, history and replay keep these bytes.
      const body = ready !== undefined && ready.tag === s.tag ? ready.body : webhookBody({ ...payload, streamId, tag: s.tag });
      if (fate === 'history') {
        this.saveHistory(changes, tenant, s, body.bytes, summary, 0, `not sent: the stream is in error (${s.statusMessage})`, now);
        return 'history';
      }
      const meta = changes.meta(streamId);
      const item: QueueItem = { seq: meta.nextSeq, ...body, summary, failures: 0, nextAt: now };
      this.kv.put('queue', seqKey(streamId, meta.nextSeq), item);
      meta.nextSeq++;
      meta.queued++;
      if (meta.queued >= QUEUE_CAP) {
        this.toError(s, `the queue of undelivered webhooks reached ${QUEUE_CAP}`, now);
        this.kv.put('streams', streamKey(tenant, streamId), s);
        this.changed(streamId);
        wentToError.push(s);
      }
      touched.add(streamId);
      return 'queued';
    });
    changes.write(now);
    return {
      results,
      settle: () => {
        this.committed(changes);
        this.afterError(wentToError);
        for (const id of touched) this.kick(id);
        this.notifyIfIdle();
      },
    };
  }

  /** Webhooks of the stream waiting undelivered (the x-queue-size header). */
  queueSize(streamId: string): number {
    let n = this.queued.get(streamId);
    if (n === undefined) this.queued.set(streamId, (n = this.kv.get<QueueMeta>('queueMeta', streamId)?.queued ?? 0));
    return n;
  }

  /** What a committed transaction changed that is kept in memory. */
  private committed(changes: Changes): void {
    for (const [id, seq] of changes.heads) this.heads.set(id, seq);
    for (const [id, m] of changes.metas) {
      // A later transaction's count may be known already: a replay's commits at once, before an earlier flush is told.
      if (this.rows.metas.committed(id, m, changes.version)) this.queued.set(id, m.queued);
    }
    for (const [key, st] of changes.statsWritten) this.rows.stats.committed(key, st, changes.version);
  }

  /** A stream set active from error: its URL's rate restarts at 100. Call inside the transaction that sets it active. */
  restartRate(s: StoredStream): void {
    this.kv.put('rates', `${s.tenantId}/${s.webhookUrl}`, START_RATE);
  }

  /** The owner set a stream active again (committed, with restartRate from error): delivery resumes. */
  resumed(s: StoredStream, from: StoredStream['status']): void {
    if (from === 'error') {
      this.terminations.get(s.id)?.cancel();
      this.terminations.delete(s.id);
    }
    this.kick(s.id);
  }

  /**
   * A replay of history record `h` was answered 200: the record says so and the pending retry of its webhook, if
   * any, leaves the stream's queue and its count, in one transaction (a crash before its commit leaves both, and the
   * retry is sent at its time). Failed webhooks wait apart from the fresh queue (`retries`), so this never moves the
   * queue's head. A retry in flight completes: its outcome finds the record delivered and schedules no other.
   * Answers the record's deliveredAt, or undefined when the record is gone.
   */
  replayDelivered(tenant: string, h: Pick<StoredHistory, 'id' | 'streamId' | 'seq'>): string | undefined {
    const changes = this.changes();
    const deliveredAt = this.kv.transact(() => {
      const now = this.clock.now();
      const at = markDelivered(this.kv, tenant, h.id, now);
      const retry = h.seq === undefined ? undefined : this.pendingRetry(h.streamId, h.seq);
      if (retry !== undefined) {
        this.kv.remove('retries', retry);
        changes.meta(h.streamId).queued--;
      }
      changes.write(now);
      return at;
    });
    this.committed(changes);
    return deliveredAt;
  }

  /** The key of webhook `seq`'s retry waiting in `retries`, unless none is or it is in flight. Its keys only are read. */
  private pendingRetry(streamId: string, seq: number): string | undefined {
    const end = `/${seqPart(seq)}`;
    const sending = this.inFlight.get(streamId);
    return this.kv.keys('retries', within(streamId)).find((key) => key.endsWith(end) && key !== sending);
  }

  /** Posts one signed webhook body for a tenant now (test webhooks and replays). `timedOut`: no answer within the timeout. */
  async post(tenant: string, url: string, body: Uint8Array, queueSize: number): Promise<{ delivered: boolean; status?: number; error?: string; timedOut?: true }> {
    const res = await this.sender.post(url, body, webhookHeaders(body, this.secret(tenant), queueSize), DELIVERY_TIMEOUT_MS);
    if ('error' in res) return res.timedOut === true ? { delivered: false, error: res.error, timedOut: true } : { delivered: false, error: res.error };
    return res.status === 200 ? { delivered: true, status: 200 } : { delivered: false, status: res.status, error: `the receiver answered HTTP ${res.status}` };
  }

  /** Resolves once nothing is in flight (tests and shutdown). */
  settled(): Promise<void> {
    if (this.idleNow()) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  /** Nothing in flight, nothing waiting for a slot or a turn (unless stopping). */
  private idleNow(): boolean {
    return this.inFlight.size === 0 && ((this.slots.inLine === 0 && this.budget.waiting === 0) || this.stopping);
  }

  private notifyIfIdle(): void {
    if (this.idleNow()) for (const f of this.idle.splice(0)) f();
  }

  /**
   * A clean stop: no delivery starts any more. Resolves once those in flight
   * were answered (each within the delivery timeout) and their outcomes
   * committed, and a retention purge under way is done; the queue keeps the
   * rest for the next start.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    this.slots.clear();
    this.wake?.cancel();
    for (const t of this.terminations.values()) t.cancel();
    await Promise.all([this.settled(), this.purging]);
  }

  /** Removes the history and delivery logs whose retention ended (every minute of service time); one purge at a time. */
  purge(): Promise<number> {
    this.purging ??= purgeExpired(this.kv, this.clock.now(), this.retention)
      .catch((err: unknown) => {
        this.log.error('retention purge failed; the next one goes on', { err });
        return 0;
      })
      .finally(() => (this.purging = undefined));
    return this.purging;
  }

  private originOf(url: string): string {
    let o = this.origins.get(url);
    if (o === undefined) this.origins.set(url, (o = new URL(url).origin));
    return o;
  }

  private secret(tenant: string): string {
    let s = this.secrets.get(tenant);
    if (s === undefined) this.secrets.set(tenant, (s = settingsOf(this.kv, tenant).secretKey));
    return s;
  }

  // ---- delivery -------------------------------------------------------------

  /** Sends the stream's head webhook if it is due; returns the delivery it started, if any. */
  private kick(streamId: string): Promise<void> | undefined {
    if (this.inFlight.has(streamId) || this.stopping) return undefined;
    const tenant = this.tenants.get(streamId);
    const known = this.streamOrigins.get(streamId);
    if (tenant !== undefined && known !== undefined && !this.slots.free(tenant, known)) {
      this.slots.wait(tenant, known, streamId);
      return undefined;
    }
    const s = this.liveStream(streamId);
    if (s === undefined || !sends(s.status)) return undefined;
    // Counted from here: what follows reads the queue's head, signs the body and opens the request.
    if (!this.budget.take()) return this.budget.defer(streamId);
    const head = this.due(streamId, this.clock.now());
    if (head === undefined) return undefined;
    const origin = this.originOf(s.webhookUrl);
    this.streamOrigins.set(streamId, origin);
    if (!this.slots.take(s.tenantId, origin, streamId)) return undefined;
    this.inFlight.set(streamId, head.entry.key);
    return this.deliver(s, head.entry.value, head.table, head.entry.key, origin)
      .catch((err: unknown) => this.log.error('delivery failed', { streamId, err }))
      .finally(() => {
        this.inFlight.delete(streamId);
        this.kick(streamId);
        this.notifyIfIdle();
      });
  }

  /**
   * Streams in line take the free slots, while the turn has room (the next turn goes on); one with nothing to send
   * leaves its line. Taken out of line only to start: a deferred start would leave the slot free for the next.
   */
  private pullLine(): void {
    while (this.slots.inLine > 0 && this.budget.hasRoom()) {
      const id = this.slots.next();
      if (id === undefined) return;
      this.kick(id);
    }
  }

  private changes(): Changes {
    return new Changes(
      this.kv,
      this.retention.successLogMax,
      (tenant, id) => {
        const s = this.liveStream(id);
        return s?.tenantId === tenant ? s : undefined;
      },
      this.rows,
    );
  }

  private liveStream(id: string): StoredStream | undefined {
    let s = this.live.get(id);
    if (s !== undefined) return s;
    const tenant = this.tenants.get(id);
    s = tenant === undefined ? undefined : this.kv.get<StoredStream>('streams', streamKey(tenant, id));
    if (s !== undefined) this.live.set(id, s);
    return s;
  }

  /** The webhook the stream sends next, if one is due: a failed one whose retry is due, else the oldest fresh one. */
  private due(streamId: string, now: number): { table: 'queue' | 'retries'; entry: Entry<QueueItem> } | undefined {
    // A failed webhook waits aside for its retry; fresh ones keep going in enqueue order meanwhile.
    if (this.mayRetry.has(streamId)) {
      const retry = this.kv.range<QueueItem>('retries', { ...within(streamId), limit: 1 })[0];
      if (retry === undefined) this.mayRetry.delete(streamId);
      else if (retry.value.nextAt <= now) return { table: 'retries', entry: retry };
      else this.scheduleKick(streamId, retry.value.nextAt);
    }
    const seq = this.heads.get(streamId);
    if (seq !== undefined) {
      const key = seqKey(streamId, seq);
      const value = this.kv.get<QueueItem>('queue', key);
      if (value !== undefined) return { table: 'queue', entry: { key, value: { ...value, bytes: ownBytes(value.bytes) } } };
    }
    const fresh = this.kv.range<QueueItem>('queue', { ...within(streamId), limit: 1 })[0];
    if (fresh === undefined) return undefined;
    this.heads.set(streamId, fresh.value.seq);
    return { table: 'queue', entry: fresh };
  }

  /**
   * The slot is freed once the receiver answered, for the streams in line; the
   * stream itself sends its next webhook once this outcome is committed.
   */
  private async deliver(s: StoredStream, item: QueueItem, table: 'queue' | 'retries', key: string, origin: string): Promise<void> {
    const url = s.webhookUrl;
    let res: Awaited<ReturnType<Dispatcher['post']>> | undefined;
    try {
      res = await this.post(s.tenantId, url, bodyAt(item, item.failures), this.queueSize(s.id));
    } finally {
      this.slots.release(s.tenantId, origin, heard(res));
      this.pullLine();
    }
    this.counters.outcome(s.id, res.delivered, item.failures > 0);
    await this.record({ s, item, table, key, url, res, now: this.clock.now() });
  }

  /** Resolves once the outcome is committed. */
  private record(o: Outcome): Promise<void> {
    return new Promise((committed) => {
      this.outcomes.push({ o, committed });
      this.queueFlush();
    });
  }

  /**
   * Outcomes are committed together (group commit): one fsync for many deliveries. A crash before the commit
   * re-sends those webhooks (at least once). One flush is queued at a time, and its transaction takes, when it
   * runs, at most FLUSH_MAX of the outcomes waiting: lmdb-js runs the callbacks of every transaction queued meanwhile
   * in one stretch of the event loop, so flushes queued turn after turn while a commit waits for its fsync would
   * all run there together (issue 19's soak: up to about 20 ms).
   */
  private queueFlush(): void {
    if (this.flushQueued || this.outcomes.length === 0) return;
    this.flushQueued = true;
    setImmediate(() => {
      let batch: Array<{ o: Outcome; committed: () => void }> = [];
      const errored: StoredStream[] = [];
      const failed: FailedAttempt[] = [];
      const changes = this.changes();
      // The commit and its fsync happen off the event loop; the deliveries settle once it is on disk.
      this.kv
        .transactAsync(() => {
          batch = this.outcomes.splice(0, FLUSH_MAX);
          this.flushQueued = false;
          // What is left, or comes from now on, goes in the next transaction (queued in a later turn).
          this.queueFlush();
          for (const { o } of batch) errored.push(...this.apply(o, changes, failed));
          changes.write(this.clock.now());
        })
        .then(
          () => {
            this.committed(changes);
            for (const f of failed) this.log.warn('webhook delivery failed', { ...f });
            this.afterError(errored);
          },
          (err: unknown) => {
            this.log.error('delivery outcomes not committed; they will be sent again', { err, count: batch.length });
            // A transaction that failed before its callback took anything: the next flush takes them.
            if (batch.length === 0) {
              this.flushQueued = false;
              this.queueFlush();
            }
          },
        )
        .finally(() => {
          for (const { committed } of batch) committed();
        });
    });
  }

  /**
   * One delivery's outcome, inside the group transaction; returns the streams
   * that entered error, and adds a failed attempt to `failed` (logged once committed).
   */
  private apply(o: Outcome, changes: Changes, failed: FailedAttempt[]): StoredStream[] {
    const { s, item, table, key, url, res, now } = o;
    const tenant = s.tenantId;
    const cur = this.kv.has(table, key) ? changes.stream(tenant, s.id) : undefined;
    if (cur === undefined) {
      // The stream was deleted or ended meanwhile.
      if (!res.delivered) failed.push(failedAttempt(o, undefined, undefined, 'not retried: the stream was deleted or terminated meanwhile'));
      return [];
    }
    // Charged to the URL it was sent to, even if the stream has moved to another since.
    const sentTo: StoredStream = { ...cur, webhookUrl: url };
    const rateKey = `${tenant}/${url}`;
    const rate = changes.rate(rateKey);
    const meta = changes.meta(s.id);
    this.saveLog(changes, tenant, sentTo, item, res.delivered ? 'success' : 'failed', res.error ?? '', now);
    this.kv.remove(table, key);
    if (table === 'queue') changes.heads.set(s.id, item.seq + 1);
    if (res.delivered) {
      meta.queued--;
      changes.rates.set(rateKey, afterSuccess(rate));
      changes.bump(tenant, s.id, { totalWebhooksDelivered: 1 });
      if (item.historyId !== undefined) markDelivered(this.kv, tenant, item.historyId, now);
      return [];
    }
    const failures = item.failures + 1;
    const firstFailedAt = item.firstFailedAt ?? now;
    const record = this.saveHistory(changes, tenant, sentTo, bodyAt(item, item.failures), item.summary, item.failures, res.error ?? 'no answer', now, item.historyId, item.seq);
    const historyId = record.id;
    changes.bump(tenant, s.id, { totalWebhooksFailed: 1 });
    // A replay delivered it while this attempt was in flight: it is not sent again.
    const replayed = record.deliveredAt !== undefined;
    const delay = replayed ? undefined : retryDelay(failures - 1);
    const deadline = firstFailedAt + GIVE_UP_AFTER_MS;
    let nextAt: number | undefined;
    if (delay === undefined || now >= deadline) {
      // Delivered by a replay, out of retries, or 24 h without delivery: the webhook stays in history for manual replay.
      meta.queued--;
    } else {
      // The last retry of the schedule (1 day) falls at the 24-hour mark, then the webhook is given up.
      nextAt = Math.min(now + delay, deadline);
      this.mayRetry.add(s.id);
      this.kv.put('retries', retryKey(s.id, nextAt, item.seq), { ...item, failures, firstFailedAt, nextAt, historyId } satisfies QueueItem);
    }
    const newRate = afterFailure(rate);
    changes.rates.set(rateKey, newRate);
    const entered = inError(newRate) ? this.urlToError(tenant, url, `the success rate of ${url} fell to ${newRate}%, below 70%`, now) : [];
    const note =
      replayed ? 'not retried: a replay delivered it'
      : nextAt === undefined ? 'no retry left: the webhook stays in history for manual replay'
      : entered.some((e) => e.id === s.id) || cur.status !== 'active' ? 'the stream is not active: the retry waits until it is set active again'
      : undefined;
    failed.push(failedAttempt(o, nextAt, historyId, note));
    return entered;
  }

  private scheduleKick(streamId: string, at: number): void {
    const prev = this.scheduled.get(streamId);
    if (prev !== undefined) {
      if (prev.at === at) return;
      this.wheel.cancel(prev.handle);
    }
    this.scheduled.set(streamId, { handle: this.wheel.schedule(at, this.numbers.get(streamId)!), at });
    this.armWheel();
  }

  /** One service-clock timer, at the wheel's earliest due time. */
  private armWheel(): void {
    const next = this.wheel.nextAt();
    if (next === undefined || next >= this.wakeAt) return;
    this.wake?.cancel();
    this.wakeAt = next;
    this.wake = this.clock.at(next, async () => {
      this.wake = undefined;
      this.wakeAt = Infinity;
      const started: Array<Promise<void>> = [];
      this.wheel.advance(this.clock.now(), (n) => {
        const id = this.byNumber[n]!;
        this.scheduled.delete(id);
        const d = this.kick(id);
        if (d !== undefined) started.push(d);
      });
      this.armWheel();
      if (this.opts.awaitDeliveriesOnWake === true) await Promise.all(started);
    });
  }

  // ---- state changes --------------------------------------------------------

  /**
   * Every active stream of the tenant that uses `url` goes to error. Call inside a transaction. Only the streams
   * written with that URL are read: a tenant's every stream, read for each URL entering error, held the event
   * loop for hundreds of ms when a batch of receivers failed together (issue 19's soak).
   */
  private urlToError(tenant: string, url: string, why: string, now: number): StoredStream[] {
    const out: StoredStream[] = [];
    for (const id of [...(this.byUrl.get(`${tenant}/${url}`) ?? [])].sort()) {
      const s = this.kv.get<StoredStream>('streams', streamKey(tenant, id));
      if (s === undefined || s.webhookUrl !== url || s.status !== 'active') continue;
      this.toError(s, why, now);
      this.kv.put('streams', streamKey(tenant, s.id), s);
      this.changed(s.id);
      out.push(s);
    }
    return out;
  }

  private toError(s: StoredStream, why: string, now: number): void {
    s.status = 'error';
    s.statusMessage = `Stream in error: ${why}. Webhooks are kept in history; set the stream active to resume, or it is terminated 24 hours after ${new Date(now).toISOString()}.`;
    s.errorSince = now;
    s.updatedAt = now;
  }

  /** Streams whose entry into error has committed. */
  private afterError(streams: StoredStream[]): void {
    for (const s of streams) {
      // Read again: a send or prepare between the transaction's callback and its commit (LMDB's write thread)
      // may have cached the record as it still was, active, and would go on sending while it is in error.
      this.changed(s.id);
      this.scheduleTermination(s);
      void this.alert(s, `chainpost: stream ${s.id} is in error`, s.statusMessage);
    }
  }

  private scheduleTermination(s: StoredStream): void {
    this.terminations.get(s.id)?.cancel();
    const since = s.errorSince ?? this.clock.now();
    this.terminations.set(
      s.id,
      this.clock.at(since + ERROR_TO_TERMINATED_MS, () => this.terminate(s.tenantId, s.id, since)),
    );
  }

  /** 24 h in error: nothing more is sent; what was queued moves to history for manual replay. */
  private async terminate(tenant: string, id: string, since: number): Promise<void> {
    this.terminations.delete(id);
    const now = this.clock.now();
    const changes = this.changes();
    const ended = await this.kv.transactAsync(() => {
      const s = changes.stream(tenant, id);
      if (s === undefined || s.status !== 'error' || s.errorSince !== since) return undefined;
      for (const table of ['retries', 'queue'] as const) {
        for (const { key, value } of this.kv.range<QueueItem>(table, within(id))) {
          this.saveHistory(changes, tenant, s, bodyAt(value, value.failures), value.summary, value.failures, 'not sent: the stream was terminated', now, value.historyId);
          this.kv.remove(table, key);
        }
      }
      changes.meta(id).queued = 0;
      changes.write(now);
      s.status = 'terminated';
      s.statusMessage = `Stream terminated: it stayed in error for 24 hours (since ${new Date(since).toISOString()}). Nothing is sent and new blocks are dropped; its history stays for manual replay.`;
      s.updatedAt = now;
      this.kv.put('streams', streamKey(tenant, id), s);
      return s;
    });
    if (ended !== undefined) this.committed(changes);
    this.changed(id);
    this.queued.delete(id);
    if (ended !== undefined) void this.alert(ended, `chainpost: stream ${id} was terminated`, ended.statusMessage);
  }

  // ---- records --------------------------------------------------------------

  /**
   * Writes a failed-delivery record with the bytes last sent. The retries of
   * its first day rewrite it in place (its id, and so its retention, count from
   * the first failure); a failure after that (the stream was paused or in error
   * meanwhile) writes it anew, as a new record kept from now. `seq`: the webhook's in its stream's queue, when a
   * retry of it may wait there. Answers the record as written.
   */
  private saveHistory(changes: Changes, tenant: string, s: StoredStream, body: Uint8Array, summary: WebhookSummary, retries: number, errorMessage: string, now: number, id?: string, seq?: number): StoredHistory {
    const range = historyRange(tenant);
    const old = id === undefined ? undefined : range.prefix + id;
    // The last retry is sent at the 24-hour mark and answered within the delivery timeout.
    const inPlace = old !== undefined && uuidV7Ms(id!) >= now - GIVE_UP_AFTER_MS - DELIVERY_TIMEOUT_MS && this.kv.has('history', old);
    if (old !== undefined && !inPlace && this.kv.has('history', old)) {
      this.kv.remove('history', old);
      changes.count(countKey(range), -1);
    }
    // A replay may have delivered it meanwhile: the rewritten record still says so. (In place, `body` is a
    // retry's, made by bodyAt, not a view of the read buffer this get reuses.)
    const deliveredAt = inPlace ? this.kv.get<StoredHistory>('history', old!)?.deliveredAt : undefined;
    const historyId = inPlace ? id! : uuidV7(now);
    const key = range.prefix + historyId;
    if (!inPlace) changes.count(countKey(range));
    const record: StoredHistory = {
      id: historyId,
      date: new Date(now).toISOString(),
      body,
      tinyPayload: { ...summary, retries, amount: summary.records },
      streamId: s.id,
      tag: s.tag,
      errorMessage,
      webhookUrl: s.webhookUrl,
    };
    if (deliveredAt !== undefined) record.deliveredAt = deliveredAt;
    if (seq !== undefined) record.seq = seq;
    this.kv.put('history', key, record);
    return record;
  }

  private saveLog(changes: Changes, tenant: string, s: StoredStream, item: QueueItem, status: DeliveryStatus, errorMessage: string, now: number): void {
    const range = logRange(tenant, status);
    const row: StoredLog = [s.id, item.summary.chainId, s.webhookUrl, s.tag, item.failures, item.summary.block.number, errorMessage];
    this.kv.put('deliveryLogs', range.prefix + uuidV7(now), row);
    changes.count(countKey(range));
  }

  /** E-mail to the stream owner's key e-mail or CHAINPOST_ALERT_EMAIL; kept in the outbox when it cannot be sent. */
  private async alert(s: StoredStream, subject: string, text: string): Promise<void> {
    const to = s.ownerEmail ?? this.opts.alertEmail;
    const now = this.clock.now();
    // Committed off the event loop (a hundred streams entering error at once would be a hundred fsyncs on it); never rejects.
    const keep = (reason: string): Promise<void> =>
      this.kv.transactAsync(() => this.kv.put('outbox', `${timeKey(now)}/${uuidV7(now)}`, { to: to ?? null, subject, text, reason, at: new Date(now).toISOString() })).then(
        () => this.log.warn('stream alert not e-mailed', { streamId: s.id, subject, reason }),
        (err: unknown) => this.log.error('stream alert not e-mailed nor kept in the outbox', { streamId: s.id, subject, reason, err }),
      );
    if (to === undefined) return keep('no recipient: the key has no e-mail and CHAINPOST_ALERT_EMAIL is unset');
    if (this.mailer === undefined) return keep('no SMTP server: CHAINPOST_SMTP_URL is unset');
    try {
      await this.mailer.send({ to, subject, text });
      this.log.info('stream alert e-mailed', { streamId: s.id, to, subject });
    } catch (err) {
      await keep(`sending failed: ${(err as Error).message}`);
    }
  }
}
