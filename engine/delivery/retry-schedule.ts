/**
 * The interface's retry schedule: after a failed delivery, retry N waits this
 * long. Retries 0..6; when the last one fails the webhook stays in history only.
 */
const MIN = 60_000;
const HOUR = 60 * MIN;

export const RETRY_SCHEDULE_MS: readonly number[] = [1 * MIN, 10 * MIN, 1 * HOUR, 2 * HOUR, 6 * HOUR, 12 * HOUR, 24 * HOUR];

/** A webhook not delivered within this long after it was first tried is left to history (manual replay). */
export const GIVE_UP_AFTER_MS = 24 * HOUR;

/** Wait before retry number `retry` (0-based), or undefined when there is none left. */
export const retryDelay = (retry: number): number | undefined => RETRY_SCHEDULE_MS[retry];
