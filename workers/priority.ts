import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';

/**
 * How much lower a worker thread runs than the thread that serves HTTP. The pool decodes and matches
 * blocks with every core it can have; at the same priority the serving thread waited its turn behind
 * the workers (a GET's p99 was ~65 ms during a catch-up on 2 cores). A nice of 10 gives it about ten times
 * the workers' share whenever it has work, and leaves them every cycle it does not use.
 */
export const WORKER_NICE = 10;

/** Lowers the calling thread's own priority (Linux: a thread's id is its pid for setpriority); elsewhere does nothing. */
export function lowerThreadPriority(nice = WORKER_NICE): boolean {
  try {
    // /proc/thread-self names the calling thread: "<pid>/task/<tid>".
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (!Number.isSafeInteger(tid)) return false;
    setPriority(tid, nice);
    return true;
  } catch {
    return false; // not Linux, or not allowed: the pool runs at the server's priority
  }
}
