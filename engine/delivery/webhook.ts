import { createHmac } from 'node:crypto';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';

/**
 * A webhook on the wire: compact JSON exactly as JSON.stringify writes it,
 * `x-signature` = 0x + hex(keccak256(utf8(body) + secret)) (Keccak-256, not
 * NIST SHA3), `x-queue-size` with the stream's undelivered count, and the Standard Webhooks headers
 * (docs/api.md, "Webhook signatures"): `webhook-id` (the webhook's id, the same on
 * each of its attempts and replays), `webhook-timestamp` (the service clock at the attempt, in seconds) and
 * `webhook-signature`.
 */
export function signature(body: Uint8Array | string, secret: string): string {
  // Hashed in two updates: the body's bytes are not copied to append the secret.
  return `0x${bytesToHex(
    keccak_256
      .create()
      .update(typeof body === 'string' ? utf8ToBytes(body) : body)
      .update(utf8ToBytes(secret))
      .digest(),
  )}`;
}

/**
 * Standard Webhooks' `webhook-signature`: `v1,` + base64 of HMAC-SHA256 over `id.timestamp.body`, keyed with the
 * tenant's secret's UTF-8 bytes (what `standardWebhooksSecret` shows, as `whsec_` + their base64).
 */
function standardSignature(webhookId: string, timestampSec: number, body: Uint8Array | string, secret: string): string {
  // Node's own HMAC (as engine/bitcoin/hash.ts's SHA-256): it runs per attempt, over bodies up to megabytes.
  return `v1,${createHmac('sha256', secret).update(`${webhookId}.${timestampSec}.`).update(body).digest('base64')}`;
}

/** The tenant's secret as Standard Webhooks libraries take it: `whsec_` + the base64 of its UTF-8 bytes. */
export const standardWebhooksSecret = (secret: string): string => `whsec_${Buffer.from(secret, 'utf8').toString('base64')}`;

/** The headers of one attempt of a webhook: `webhookId` its id, `timestampSec` the service clock's seconds now. */
export function webhookHeaders(
  body: Uint8Array,
  secret: string,
  queueSize: number,
  webhookId: string,
  timestampSec: number,
): Record<string, string> {
  return {
    'content-type': 'application/json',
    'x-signature': signature(body, secret),
    'x-queue-size': String(queueSize),
    'webhook-id': webhookId,
    'webhook-timestamp': String(timestampSec),
    'webhook-signature': standardSignature(webhookId, timestampSec, body, secret),
  };
}

/** At most this many characters of a receiver's refusal are kept (history, logs, stats): a receiver's text is the tenant's input. */
export const RECEIVER_TEXT_MAX = 300;

/**
 * A failed attempt's error for an answer other than 200: the status, and the start of what the receiver said (its
 * text with control characters as spaces, collapsed, cut at RECEIVER_TEXT_MAX), so an operator sees why.
 */
export function refusal(status: number, answer: string | undefined): string {
  const text = (answer ?? '').replace(/[\u0000-\u001f\u007f-\u009f\s]+/g, ' ').trim();
  const cut = text.length > RECEIVER_TEXT_MAX ? `${text.slice(0, RECEIVER_TEXT_MAX)}…` : text;
  return cut === '' ? `the receiver answered HTTP ${status}` : `the receiver answered HTTP ${status}: ${cut}`;
}

/**
 * What a webhook carries about its block, for history's tinyPayload and the logs (EVM bodies; Bitcoin's name the
 * height `height` and the transactions `transactions`; Solana's name them `slot`, `blockHash`, `blockTime`).
 */
export interface WebhookSummary {
  chainId: string;
  confirmed: boolean;
  block: { number: string; hash: string; timestamp: string };
  /** Items in the body (logs, txs, internal txs, transfers, approvals, balances). */
  records: number;
}

const LISTS = [
  'logs',
  'txs',
  'txsInternal',
  'erc20Transfers',
  'erc20Approvals',
  'nftTransfers',
  'nftTokenApprovals',
  'nativeBalances',
  'transactions',
] as const;

export function summarize(payload: Record<string, unknown>): WebhookSummary & { logs: number; txs: number; txsInternal: number } {
  const len = (k: string): number => (Array.isArray(payload[k]) ? (payload[k] as unknown[]).length : 0);
  const block = (payload['block'] ?? {}) as Record<string, unknown>;
  return {
    chainId: String(payload['chainId'] ?? ''),
    confirmed: payload['confirmed'] === true,
    block: {
      number: String(block['number'] ?? block['height'] ?? block['slot'] ?? ''),
      hash: String(block['hash'] ?? block['blockHash'] ?? ''),
      timestamp: String(block['timestamp'] ?? block['blockTime'] ?? ''),
    },
    records: LISTS.reduce((n, k) => n + len(k), 0),
    logs: len('logs'),
    txs: len('txs') + len('transactions'),
    txsInternal: len('txsInternal'),
  };
}

/** The test webhook sent before a stream is created, updated or set active again. */
export function testWebhook(streamId: string, tag: string): Record<string, unknown> {
  return {
    abi: [],
    block: { number: '', hash: '', timestamp: '' },
    txs: [],
    txsInternal: [],
    logs: [],
    chainId: '',
    confirmed: true,
    retries: 0,
    tag,
    streamId,
    erc20Approvals: [],
    erc20Transfers: [],
    nftApprovals: { ERC721: [], ERC1155: [] },
    nftTokenApprovals: [],
    nftTransfers: [],
    nativeBalances: [],
  };
}
