import { Worker } from 'node:worker_threads';

/**
 * A thread beside a test worker's own that ends the process when the worker's main thread has not run for
 * BLOCKED_MS: a main thread blocked in a system call (a lock that is never released) fires no timer, so vitest's
 * test and hook timeouts never come and the run would wait for good. The file that was running is named on stderr
 * before the kill, and vitest reports the worker's end as that file's failure.
 */
const BLOCKED_MS = 120_000;
const BEAT_MS = 1_000;
const CHECK_MS = 5_000;
/** Room for the running file's path (UTF-8). */
const FILE_BYTES = 1024;

/** The watchdog thread's code (a thread's eval source: no module of ours to load there). */
export const WATCH = `
const { workerData: { beat, file, blockedMs, checkMs } } = require('node:worker_threads');
const { writeSync } = require('node:fs');
const beats = new Float64Array(beat);
const sleep = new Int32Array(new SharedArrayBuffer(4));
for (;;) {
  Atomics.wait(sleep, 0, 0, checkMs);
  const quiet = Date.now() - beats[0];
  if (quiet < blockedMs) continue;
  const bytes = new Uint8Array(file);
  const name = new TextDecoder().decode(bytes.subarray(0, bytes.indexOf(0) < 0 ? bytes.length : bytes.indexOf(0)));
  writeSync(2, '\\nblocked-watchdog: the main thread of test worker ' + process.pid + ' has not run for ' + Math.round(quiet / 1000) + ' s, in ' + (name || 'no file yet') + ': ended (a lock never released?)\\n');
  process.kill(process.pid, 'SIGKILL');
}
`;

const KEY = Symbol.for('chainpost.blockedWatchdog');
type Held = { beats: Float64Array; file: Uint8Array };

/** Starts the watchdog once per process (each file's setup calls it) and names `file` as the one running now. */
export function watchBlocked(file: string): void {
  const g = globalThis as { [KEY]?: Held };
  let held = g[KEY];
  if (held === undefined) {
    const beat = new SharedArrayBuffer(8);
    const fileBuf = new SharedArrayBuffer(FILE_BYTES);
    held = g[KEY] = { beats: new Float64Array(beat), file: new Uint8Array(fileBuf) };
    const beats = held.beats;
    beats[0] = Date.now();
    setInterval(() => (beats[0] = Date.now()), BEAT_MS).unref();
    new Worker(WATCH, { eval: true, workerData: { beat, file: fileBuf, blockedMs: BLOCKED_MS, checkMs: CHECK_MS } }).unref();
  }
  held.file.fill(0);
  held.file.set(new TextEncoder().encode(file).subarray(0, FILE_BYTES - 1));
}
