import { rmSync } from 'node:fs';
import { ServiceClock } from '../../../../engine/clock.js';
import { Alerts } from '../../../../engine/delivery/alerts.js';
import { AttemptRecorder } from '../../../../engine/delivery/attempt-recorder.js';
import { RecordRows } from '../../../../engine/delivery/attempt-records.js';
import { webhookBody } from '../../../../engine/delivery/body.js';
import { KvDeliveryQueue } from '../../../../engine/delivery/kv-queue.js';
import type { QueueItem } from '../../../../engine/delivery/queue.js';
import type { RateStore } from '../../../../engine/delivery/rate-store.js';
import { StreamHealth } from '../../../../engine/delivery/stream-health.js';
import { StreamReads, type DeliveryStream, type DeliveryStreams } from '../../../../engine/delivery/stream-port.js';
import { Units } from '../../../../engine/delivery/unit.js';
import { summarize } from '../../../../engine/delivery/webhook.js';
import type { Kv } from '../../../../engine/ports.js';
import { openStore } from '../../../../storage/env.js';
import { tempDir } from '../../../helpers.js';
import { quietLog } from '../../../kit/quiet-log.js';

export const T0 = Date.parse('2026-11-23T00:00:00Z');

/** A block's webhook as the matcher builds it, block `n`, nothing matched in it. */
export const blockPayload = (n: number) => ({
  confirmed: false,
  chainId: '0x1',
  retries: 0,
  block: { number: String(n), hash: `0x${n.toString(16).padStart(64, '0')}`, timestamp: '1795000000' },
  logs: [],
  txs: [],
});

/** Service time that moves only when a test advances it. */
export const stillClock = (start = T0): ServiceClock => new ServiceClock({ elapsedMs: () => 0, wake: () => () => {} }, start);

/** Streams held in memory, behind delivery's port. */
export function memoryStreams(): DeliveryStreams & { put(s: DeliveryStream): void; records: Map<string, DeliveryStream> } {
  const records = new Map<string, DeliveryStream>();
  return {
    records,
    put: (s) => void records.set(`${s.tenantId}/${s.id}`, { ...s }),
    all: () => [...records.values()].map((s) => ({ ...s })),
    get: (tenant, id) => {
      const s = records.get(`${tenant}/${id}`);
      return s === undefined ? undefined : { ...s };
    },
    putState: (s) => void records.set(`${s.tenantId}/${s.id}`, { ...s }),
    secret: async (tenant) => `secret-of-${tenant}`,
  };
}

export const stream = (tenantId: string, id: string, webhookUrl: string, more: Partial<DeliveryStream> = {}): DeliveryStream => ({
  id,
  tenantId,
  webhookUrl,
  tag: `tag-${id}`,
  status: 'active',
  statusMessage: '',
  updatedAt: T0,
  ...more,
});

/** A fresh webhook for the queue, as the dispatcher stages it (block `n`). */
export function webhook(streamId: string, n: number, now = T0): Omit<QueueItem, 'seq'> {
  const payload = {
    chainId: '0x1',
    confirmed: false,
    retries: 0,
    block: { number: String(n), hash: '0x', timestamp: '0' },
    logs: [],
    txs: [],
  };
  return { ...webhookBody({ ...payload, streamId, tag: 't' }), summary: summarize(payload), failures: 0, nextAt: now };
}

/**
 * Delivery's parts over a real LMDB store on a temp directory (written through `wrap(store)`), streams in memory,
 * rates in memory, the still service clock, and e-mail caught in `mails`.
 */
export function deliveryParts(opts: { cap?: number; alertEmail?: string; wrap?: (kv: Kv) => Kv } = {}) {
  const store = openStore(tempDir());
  const kv = opts.wrap?.(store) ?? store;
  const clock = stillClock();
  const streams = memoryStreams();
  const rateRows = new Map<string, number>();
  const rates: RateStore = { get: (k) => rateRows.get(k), put: (k, r) => void rateRows.set(k, r) };
  const queue = new KvDeliveryQueue(kv, opts.cap);
  const reads = new StreamReads(streams);
  const units = new Units(kv, queue, new RecordRows(kv, 1_000), rates, reads);
  const mails: Array<{ to: string; subject: string; text: string }> = [];
  const log = quietLog(() => clock.now());
  const alerts = new Alerts(units, clock, { send: async (m) => void mails.push(m) }, log, opts.alertEmail);
  const health = new StreamHealth(units, clock, alerts, queue.cap);
  const recorder = new AttemptRecorder(units, health, clock, log);
  /** Registers a stream as the dispatcher does (its record, its tenant, its URL). */
  const add = (s: DeliveryStream): DeliveryStream => {
    streams.put(s);
    reads.track(s);
    health.usesUrl(s);
    return s;
  };
  /** Webhooks enqueued and committed. */
  const enqueue = (streamId: string, blocks: number[]): void => {
    const w = queue.begin();
    kv.transact(() => {
      for (const n of blocks) w.enqueue(streamId, 0, webhook(streamId, n, clock.now()));
      w.close();
    });
    w.committed();
  };
  return {
    store,
    kv,
    clock,
    streams,
    rateRows,
    rates,
    queue,
    reads,
    units,
    mails,
    log,
    alerts,
    health,
    recorder,
    add,
    enqueue,
    async close(): Promise<void> {
      health.stop();
      await store.close();
      rmSync(store.path, { recursive: true, force: true });
    },
  };
}
