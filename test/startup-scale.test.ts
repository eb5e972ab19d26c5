import { describe, expect, it } from 'vitest';
import { startupRun, type StartupRun } from './kit/startup-run.js';
import { BIN } from './helpers.js';

/**
 * Start-up at scale (docs/reliability.md): the real server spawned on a store of many streams and watched addresses
 * (STARTUP_STREAMS × STARTUP_PER_STREAM; the full 10,000 × 100 is bench:startup), following a real anvil, with
 * a real receiver. It answers within 5 s of the spawn; every block mined while it was down, and right after it
 * started, reaches the stream watching its transfer's address (no block missed: matching waits for the filter
 * set, it skips nothing); the set is compiled in the worker pool, and requests go on being answered meanwhile.
 */
const STREAMS = Number(process.env['STARTUP_STREAMS'] ?? 4_000);
const PER_STREAM = Number(process.env['STARTUP_PER_STREAM'] ?? 100);
/** A request held longer than this while the set compiles means the serving thread compiled it. */
const HELD_MS = 1_500;

describe('start-up at scale', () => {
  it(`answers within 5 s and matches every block, compiling off the serving thread (${STREAMS.toLocaleString('en-US')} streams, ${(STREAMS * PER_STREAM).toLocaleString('en-US')} addresses)`, {
    timeout: 120_000,
  }, async () => {
    let r: StartupRun | undefined;
    try {
      r = await startupRun({ bin: BIN, scale: { streams: STREAMS, perStream: PER_STREAM }, downBlocks: 3, upBlocks: 3, limitMs: 50_000 });
    } finally {
      if (r !== undefined) console.log(JSON.stringify({ ...r, output: undefined }));
    }
    // Within 5 s of the spawn; on a machine so busy that the same server on an empty store (same run) takes
    // longer, within twice that (one start on a shared machine varies by half again from the next).
    expect(r.firstAnswerMs).toBeLessThan(Math.max(5_000, 2 * r.baselineFirstAnswerMs));
    // It answered while the watchlist was still being read (the listener opens first).
    expect(r.answeredWhileLoading).toBeGreaterThan(0);
    expect({ down: r.deliveredDown, up: r.deliveredUp }).toEqual({ down: 3, up: 3 });
    expect(r.matchingResumedMs).toBeGreaterThan(0);
    // The set was compiled in the pool, and requests were answered while it was.
    expect(r.compileEndMs).toBeGreaterThanOrEqual(r.compileStartMs);
    expect(r.answeredDuringCompile).toBeGreaterThan(0);
    expect(r.maxRequestDuringCompileMs).toBeLessThan(HELD_MS);
  });
});
