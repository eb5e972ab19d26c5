import { z } from 'zod';
import type { Stats } from '../delivery/dispatcher.js';
import type { EnqueueResult } from '../delivery/enqueue.js';
import type { DeliveryLog, HistoryRecord } from '../delivery/records.js';
import type { Page } from '../page.js';
import type { AddressAnswer } from './resources.js';
import type { ReplayAnswer } from './service.js';
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

export const streamStatus = z.enum(['active', 'paused', 'error', 'terminated']);

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
export const historyRecord = z.object(historyFields) satisfies z.ZodType<HistoryRecord>;

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

/** GET /stats/:streamId. */
export const streamStatsAnswer = statsAnswer.extend({ streamId: z.string() });

const { region } = settingsBody.shape;

/** GET /settings. */
export const settingsAnswer = z.object({
  region,
  secretKey: z.string().meta({ description: "The secret that signs the tenant's webhooks (x-signature)" }),
  standardWebhooksSecret: z.string().meta({ description: 'The same secret as Standard Webhooks libraries take it (whsec_…)' }),
});

/** POST /settings. */
export const regionAnswer = z.object({ region });
