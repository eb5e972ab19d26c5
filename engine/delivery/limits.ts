/** The interface's stream limits. */

/** A stream whose undelivered queue reaches this goes to error. */
export const QUEUE_CAP = 10_000;

/** A stream this long in error becomes terminated. */
export const ERROR_TO_TERMINATED_MS = 24 * 3_600_000;

/** A delivery with no answer within this long is a failure. */
export const DELIVERY_TIMEOUT_MS = 10_000;

/** Failed-delivery history is kept this long by default (the interface: up to one week). */
export const HISTORY_RETENTION_MS = 7 * 24 * 3_600_000;
