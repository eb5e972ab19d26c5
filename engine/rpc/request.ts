import { z } from 'zod';
import { ApiError } from '../errors.js';
import { validate } from '../schema.js';
import type { RpcId } from './envelope.js';
import { BATCH } from '../size-limits.js';

/**
 * The edge of node access: a body is one JSON-RPC 2.0 call or a batch of
 * them, each checked against the one schema below. A bad single call or batch
 * is a 400 naming the field (-32600); a bad element of a batch gets its own
 * error answer and the rest of the batch goes on.
 */

/** The most calls one batch may carry: a batch is one HTTP request, and one token of the key's rate. */
export const MAX_BATCH = BATCH.rpcCalls;

const callSchema = z.object(
  {
    jsonrpc: z.literal('2.0', { error: 'must be "2.0"' }),
    method: z.string({ error: 'must be a string' }).min(1, { error: 'must not be empty' }),
    params: z.array(z.unknown(), { error: 'must be an array' }).optional(),
    id: z.union([z.number(), z.string(), z.null()], { error: 'must be a number, a string or null' }).optional(),
  },
  { error: 'must be a JSON-RPC request object' },
);

export interface Call {
  id: RpcId;
  method: string;
  params: unknown[];
  /** No id: a notification, run but not answered (JSON-RPC 2.0, as nodes do). */
  notification: boolean;
}

/** A batch element that failed the schema: answered with its error and, where it had a usable one, its id. */
export interface Invalid {
  invalid: ApiError;
  id: RpcId;
}

export type Parsed = { batch: false; call: Call } | { batch: true; items: Array<Call | Invalid> };

export function parseRequest(body: unknown): Parsed {
  if (!Array.isArray(body)) return { batch: false, call: toCall(body) };
  if (body.length === 0) throw new ApiError(400, 'request: an empty batch', { field: 'request' });
  if (body.length > MAX_BATCH)
    throw new ApiError(400, `request: a batch of ${body.length} calls is over the limit of ${MAX_BATCH} per batch`, {
      field: 'request',
      limit: MAX_BATCH,
    });
  return {
    batch: true,
    items: body.map((element): Call | Invalid => {
      try {
        return toCall(element);
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        const id = (element as { id?: unknown } | null)?.id;
        return { invalid: err, id: typeof id === 'number' || typeof id === 'string' ? id : null };
      }
    }),
  };
}

function toCall(value: unknown): Call {
  const c = validate(callSchema, value, 'request');
  return { id: c.id ?? null, method: c.method, params: c.params ?? [], notification: c.id === undefined };
}
