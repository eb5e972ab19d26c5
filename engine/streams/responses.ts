import { z } from 'zod';
import type { LastError, Stats } from '../delivery/dispatcher.js';
import type { EnqueueResult } from '../delivery/enqueue.js';
import type { DeliveryLog, HistoryRecord } from '../delivery/records.js';
import type { Page } from '../page.js';
import type { AddressAnswer } from './resources.js';
import type { ReplayAnswer, StreamReplay, StreamStats } from './service.js';
import { settingsBody } from './schemas.js';

/**
 * The Streams API's answers every family gives alike (the OpenAPI document's response schemas): the page envelope,
 * the address answers, history, logs, replay, stats, settings. A family's stream record is its own (its `api.stream`).
 */

/** A list a page at a time: `cursor` only when another page follows (engine/page.ts). */
export const pageOf = <T extends z.ZodType>(item: T) =>
  z.object({
    result: z.array(item),
    total: z.number(),
    page: z.number(),
    page_size: z.number(),
    cursor: z.string().optional(),
  }) satisfies z.ZodType<Page<z.output<T>>>;

const streamStatus = z.enum(['active', 'paused', 'error', 'terminated']);

/** The answer fields every family's stream has beside its definition (engine/streams/model.ts StreamState). */
export const streamAnswerFields = {
  id: z.string(),
  webhookUrl: z.string(),
  description: z.string(),
  tag: z.string(),
  demo: z.boolean(),
  status: streamStatus,
  statusMessage: z.string().meta({ description: 'Why the stream is in its status, or why it cannot fire (empty when it can)' }),
  updatedAt: z.string(),
  amountOfAddresses: z.number(),
};

/** POST and DELETE …/:id/address: the addresses as stored (one, or the list without repeats). */
export const addressAnswer = z.object({
  streamId: z.string(),
  address: z.union([z.string(), z.array(z.string())]),
}) satisfies z.ZodType<AddressAnswer>;

/** GET …/:id/address. */
export const addressesPage = pageOf(z.object({ address: z.string() }));

const enqueueResult = z.enum(['queued', 'history', 'dropped']).meta({
  description:
    'queued: to be delivered; history: kept as failed (the stream is in error); dropped: not kept (no such stream, or terminated)',
}) satisfies z.ZodType<EnqueueResult>;

/** The test hooks' answer: each webhook's fate, in the order given. */
export const enqueueAnswer = z.object({ results: z.array(enqueueResult) });

/** POST /streams/<family>/:chainId/block-to-webhook/:blockNumber/:streamId (engine/match/block-replay.ts). */
export const blockToWebhookAnswer = z.object({
  streamId: z.string(),
  blockNumber: z.number(),
  transactions: z.number(),
  result: enqueueResult,
});

/** POST /streams/<family>/:chainId/block/:blockNumber: the family's webhook body for the block, `{}` when nothing in it matches. */
export const blockBodyAnswer = z.record(z.string(), z.unknown());

const historyFields = {
  id: z.string(),
  date: z.string(),
  payload: z.record(z.string(), z.unknown()).meta({ description: 'The failed webhook, as sent' }),
  tinyPayload: z.object({
    chainId: z.string(),
    confirmed: z.boolean(),
    block: z.object({ number: z.string(), hash: z.string(), timestamp: z.string() }),
    records: z.number(),
    retries: z.number(),
    amount: z.number(),
    // What the stats count of the webhook, kept beside the summary (engine/delivery/webhook.ts summarize).
    logs: z.number().optional(),
    txs: z.number().optional(),
    txsInternal: z.number().optional(),
  }),
  streamId: z.string(),
  tag: z.string(),
  errorMessage: z.string(),
  webhookUrl: z.string(),
  delivered: z.boolean().meta({ description: 'Whether a later retry or a replay delivered it' }),
  deliveredAt: z.string().nullable(),
};

/** A failed-delivery record (engine/delivery/records.ts historyView). */
const historyRecord = z.object(historyFields) satisfies z.ZodType<HistoryRecord>;

/** GET /history: without the payload when excludePayload=true. */
export const historyPage = pageOf(historyRecord.extend({ payload: historyFields.payload.optional() }));

/** GET /history/logs (engine/delivery/records.ts logView). */
export const logsPage = pageOf(
  z.object({
    id: z.string(),
    streamId: z.string(),
    chain: z.string(),
    webhookUrl: z.string(),
    tag: z.string(),
    retries: z.number(),
    deliveryStatus: z.enum(['success', 'failed']),
    blockNumber: z.string(),
    errorMessage: z.string(),
    type: z.string(),
    createdAt: z.string(),
  }) satisfies z.ZodType<DeliveryLog>,
);

/** POST /history/replay/…: the record, whether this attempt delivered it, and the receiver's status when it answered. */
export const replayAnswer = historyRecord.extend({ status: z.number().optional() }) satisfies z.ZodType<ReplayAnswer>;

/** POST /history/replay/:streamId: each of the stream's records not delivered yet replayed, oldest first (StreamsService.replayStream). */
const streamReplayAnswer = z.object({
  streamId: z.string(),
  replayed: z.number().meta({ description: 'Records replayed by this call (each answer in `results`)' }),
  remaining: z.number().meta({ description: 'Records not delivered yet left for another call (at most 100 are replayed a call)' }),
  results: z.array(replayAnswer),
}) satisfies z.ZodType<StreamReplay>;

/** POST /history/replay/:id: one record's replay when the id is a history record's, the stream's every record when it is a stream's. */
export const replayOrStreamAnswer = z.union([replayAnswer, streamReplayAnswer]);

/** GET /stats (a tenant's), engine/delivery/attempt-records.ts. */
export const statsAnswer = z.object({
  totalWebhooksDelivered: z.number(),
  totalWebhooksFailed: z.number(),
  totalLogsProcessed: z.number(),
  totalTxsProcessed: z.number(),
  totalTxsInternalProcessed: z.number(),
  createdAt: z.string(),
  updatedAt: z.string(),
}) satisfies z.ZodType<Stats>;

/** A stream's last failed attempt (engine/delivery/attempt-records.ts LastError). */
const lastError = z.object({
  message: z.string().meta({ description: 'The error: what the receiver answered, or why it could not be reached' }),
  at: z.string().meta({ description: 'When (ISO 8601)' }),
  webhookUrl: z.string().meta({ description: 'The URL it was sent to' }),
  historyId: z.string().meta({ description: 'Its failed-delivery record (GET /history)' }),
}) satisfies z.ZodType<LastError>;

/** GET /stats/:streamId: the stream's statistics and the state of its delivery (StreamsService.stats). */
export const streamStatsAnswer = statsAnswer.extend({
  streamId: z.string(),
  webhookUrl: z.string(),
  successRate: z.number().meta({
    description:
      "The success rate of the stream's webhookUrl, per cent (the tenant's streams with that URL share it; below 70 they go to error)",
  }),
  queueSize: z.number().meta({ description: 'Webhooks of the stream waiting to be delivered (x-queue-size)' }),
  lastError: lastError.nullable().meta({ description: "The stream's last failed attempt, null when none failed" }),
}) satisfies z.ZodType<StreamStats>;

const { region } = settingsBody.shape;

/** GET /settings. */
export const settingsAnswer = z.object({
  region,
  secretKey: z.string().meta({ description: "The secret that signs the tenant's webhooks (x-signature)" }),
  standardWebhooksSecret: z.string().meta({ description: 'The same secret as Standard Webhooks libraries take it (whsec_…)' }),
});

/** POST /settings. */
export const regionAnswer = z.object({ region });
