import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { WATCH } from '../../blocked-watchdog.js';

/**
 * The watchdog's thread (test/blocked-watchdog.ts) in a child process whose main thread beats as a test worker's
 * does, then blocks in Atomics.wait (as in a lock never released), or keeps beating.
 */
const CHILD = `
const { Worker } = require('node:worker_threads');
const beat = new SharedArrayBuffer(8);
const file = new SharedArrayBuffer(64);
new Uint8Array(file).set(new TextEncoder().encode('test/stuck.test.ts'));
const beats = new Float64Array(beat);
beats[0] = Date.now();
setInterval(() => (beats[0] = Date.now()), 100).unref();
new Worker(process.env.WATCH, { eval: true, workerData: { beat, file, blockedMs: 1000, checkMs: 100 } }).unref();
setTimeout(() => {
  if (process.env.BLOCK === '1') Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20000);
  else setTimeout(() => process.exit(0), 1500);
}, 300);
`;

function child(block: boolean): Promise<{ signal: string | null; code: number | null; stderr: string; ms: number }> {
  const started = performance.now();
  const c = spawn(process.execPath, ['-e', CHILD], {
    env: { ...process.env, WATCH, BLOCK: block ? '1' : '0' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  c.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  return new Promise((resolve) => c.on('exit', (code, signal) => resolve({ code, signal, stderr, ms: performance.now() - started })));
}

describe('the blocked-thread watchdog of the test workers', () => {
  it('behavior: kills a process whose main thread stopped running, naming the file it was in', async () => {
    const r = await child(true);
    expect(r.signal).toBe('SIGKILL');
    expect(r.stderr).toMatch(/has not run for \d+ s, in test\/stuck\.test\.ts/);
    // Blocked for 20 s: ended long before.
    expect(r.ms).toBeLessThan(15_000);
  });

  it('behavior: leaves a process whose main thread keeps running alone', async () => {
    const r = await child(false);
    expect({ code: r.code, signal: r.signal, stderr: r.stderr }).toEqual({ code: 0, signal: null, stderr: '' });
  });
});
