/** An error the API answers with its own status and a JSON body `{message, details?}`. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly details?: unknown,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** 400 naming the offending field, so a client can point at it. */
export const badRequest = (field: string, message: string): ApiError => new ApiError(400, `${field}: ${message}`, { field });

export const notFound = (message: string): ApiError => new ApiError(404, message);

/**
 * A request past an operator's limit (CHAINPOST_MAX_STREAMS, CHAINPOST_MAX_ADDRESSES, CHAINPOST_MAX_TRIGGERS, CHAINPOST_MAX_XPUBS): 400
 * naming the field and the limit. Why 400 and not 403: the spec's error table and CONVENTIONS list no 403 for the Streams API,
 * the hosted service documents its stream and address caps (per plan) but not their status, and the SDK
 * prints `message` whatever the status; 400 is what this API already answers a request it cannot take.
 */
export function overLimit(field: string, what: string, limit: number, variable: string): ApiError {
  return new ApiError(400, `${field}: ${what} at most ${limit.toLocaleString('en-US')} (${variable})`, { field, limit, variable });
}

/**
 * 503 with Retry-After: the answer needs a part that cannot be reached now (a cluster node's message bus), and the
 * same request sent again after `retryAfterSeconds` may succeed.
 */
export const unavailable = (message: string, retryAfterSeconds: number): ApiError =>
  new ApiError(503, message, undefined, { 'retry-after': String(retryAfterSeconds) });
