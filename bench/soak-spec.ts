/**
 * The interface's delivery rules as npm run soak checks them: written out from the spec
 * (Streams API), not imported from engine/delivery, so a change there cannot change what
 * the soak expects.
 */
const MIN = 60_000;
const HOUR = 60 * MIN;

/** Waits before retries 1…7 after a failed attempt; none is sent later than 24 h after the first failure. */
export const SPEC_RETRY_SCHEDULE_MS: readonly number[] = [1 * MIN, 10 * MIN, 1 * HOUR, 2 * HOUR, 6 * HOUR, 12 * HOUR, 24 * HOUR];
export const SPEC_GIVE_UP_AFTER_MS = 24 * HOUR;
/** A URL's success rate starts at 100, −1 a failure; below 70 its streams go to error. */
export const SPEC_START_RATE = 100;
export const SPEC_ERROR_BELOW = 70;
/** A stream whose undelivered queue reaches this goes to error. */
export const SPEC_QUEUE_CAP = 10_000;
/** 24 h in error: terminated. */
export const SPEC_ERROR_TO_TERMINATED_MS = 24 * HOUR;
/** No answer within this long is a failure. */
export const SPEC_DELIVERY_TIMEOUT_MS = 10_000;
