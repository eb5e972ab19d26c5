/**
 * The bus's waits: how long to wait before trying again after failures, and a wait bounded in time. One policy for
 * every loop that retries against NATS (the ordered consumers, a takeover, the block publisher).
 */

/** The wait before the next try after `failures` failures in a row: 100 ms × 2^failures, 5 s at most. */
export const retryWaitMs = (failures: number): number => Math.min(5_000, 100 * 2 ** failures);

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
