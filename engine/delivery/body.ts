/**
 * A webhook's body, serialized once when it is enqueued and kept as bytes from
 * the queue to the POST, history and replay. Only `retries` changes between
 * attempts, so the bytes are kept with `"retries":0` and the offset of that 0:
 * a later attempt writes its failure count there, and nothing is re-encoded.
 */
export interface WebhookBody {
  /** Compact JSON, exactly as JSON.stringify writes `{...payload, retries: 0}`. */
  bytes: Uint8Array;
  /** Byte offset of the 0 of `"retries":0`. */
  retriesAt: number;
}

const utf8 = new TextEncoder();
const text = new TextDecoder();

/** The body of `payload` (streamId and tag already set) with `retries` where the payload has it, else last. */
export function webhookBody(payload: Record<string, unknown>): WebhookBody {
  const before: Record<string, unknown> = {};
  const after: Record<string, unknown> = {};
  let seen = false;
  for (const [k, v] of Object.entries(payload)) {
    if (k === 'retries') seen = true;
    else (seen ? after : before)[k] = v;
  }
  // The object around `retries`, written by JSON.stringify in two halves: the same text as the whole, with no marker to collide.
  const b = JSON.stringify(before);
  const a = JSON.stringify(after);
  const head = `${b === '{}' ? '{' : `${b.slice(0, -1)},`}"retries":`;
  const bytes = utf8.encode(`${head}0${a === '{}' ? '}' : `,${a.slice(1)}`}`);
  return { bytes, retriesAt: utf8.encode(head).length };
}

/** The bytes POSTed at an attempt after `failures` failed ones. */
export function bodyAt(body: WebhookBody, failures: number): Uint8Array {
  if (failures === 0) return body.bytes;
  const digits = utf8.encode(String(failures));
  const out = new Uint8Array(body.bytes.length - 1 + digits.length);
  out.set(body.bytes.subarray(0, body.retriesAt), 0);
  out.set(digits, body.retriesAt);
  out.set(body.bytes.subarray(body.retriesAt + 1), body.retriesAt + digits.length);
  return out;
}

/** A copy of bytes read from the store, whose read buffer the next read reuses (a Buffer's slice() would be a view). */
export const ownBytes = (b: Uint8Array): Uint8Array => new Uint8Array(b);

/** The payload object of stored body bytes (history answers). */
export const payloadOf = (bytes: Uint8Array): Record<string, unknown> => JSON.parse(text.decode(bytes)) as Record<string, unknown>;
