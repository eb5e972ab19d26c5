/**
 * The bus's waits: how long to wait before trying again after failures, and a wait bounded in time. One policy for
 * every loop that retries against NATS (the ordered consumers, a takeover, the block publisher).
 */

/**
 * The wait before the next try after `failures` failures in a row: 100 ms × 2^failures, `maxMs` at most (5 s by
 * default; a loop whose tries hold a lease's work waits a lease poll at most, so a stream's new leader after a
 * failover is found within it).
 */
export const retryWaitMs = (failures: number, maxMs = 5_000): number => Math.min(maxMs, 100 * 2 ** failures);

/**
 * What is left of retryWaitMs(failures, maxMs) after a try sent at `sentAt` (performance.now()) failed: a try that
 * timed out has waited already.
 */
export const retryLeftMs = (failures: number, sentAt: number, maxMs?: number): number =>
  Math.max(0, sentAt + retryWaitMs(failures, maxMs) - performance.now());

/** What `work` resolves with, or undefined once `ms` passed first (or when it rejects). */
export async function within<T>(work: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work,
      new Promise<undefined>((resolve) => {
        timer = setTimeout(() => resolve(undefined), ms);
      }),
    ]).catch(() => undefined);
  } finally {
    clearTimeout(timer);
  }
}
