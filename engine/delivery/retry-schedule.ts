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

/**
 * When a webhook that failed its attempt is sent again: `failed` attempts had failed before this one, the first at
 * `firstFailedAt`. The last retry of the schedule (1 day) falls at the 24-hour mark; after that, or out of retries,
 * undefined: the webhook stays in history for manual replay.
 */
export function nextRetryAt(failed: number, firstFailedAt: number, now: number): number | undefined {
  const delay = retryDelay(failed);
  const deadline = firstFailedAt + GIVE_UP_AFTER_MS;
  return delay === undefined || now >= deadline ? undefined : Math.min(now + delay, deadline);
}
