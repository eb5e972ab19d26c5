import { describe, expect, it } from 'vitest';
import { startInProcess } from './in-process.js';
import { startupRun, type StartupRun } from './kit/startup-run.js';
import { BIN } from './helpers.js';

/**
 * Start-up at scale (docs/reliability.md): the real server started on a store of many streams and watched
 * addresses (STARTUP_STREAMS × STARTUP_PER_STREAM, in tenants of 1,000 streams), following a real anvil, with a real
 * receiver. It answers within 5 s of the start; every block mined while it was down, and right after it started,
 * reaches the stream watching its transfer's address (no block missed: matching waits for the filter set, it skips
 * nothing); the set is compiled in the worker pool, and requests go on being answered meanwhile.
 * The server runs in this process with the watchlist's read and the pool's compile held until requests were
 * answered meanwhile (test/kit/startup-run.ts): that they are answered is certain, at a scale that reads and compiles
 * in milliseconds (more watched keys than are compiled on the serving thread). How long a million addresses take
 * is bench:startup's (10,000 streams × 100, the binary spawned).
 */
const STREAMS = Number(process.env['STARTUP_STREAMS'] ?? 2_500);
const PER_STREAM = Number(process.env['STARTUP_PER_STREAM'] ?? 2);
/** A request held longer than this while the set compiles means the serving thread compiled it. */
const HELD_MS = 1_500;

describe('start-up at scale', () => {
  it(`answers within 5 s and matches every block, compiling off the serving thread (${STREAMS.toLocaleString('en-US')} streams, ${(STREAMS * PER_STREAM).toLocaleString('en-US')} addresses)`, {
    timeout: 120_000,
  }, async () => {
    let r: StartupRun | undefined;
    try {
      r = await startupRun({
        bin: BIN,
        start: (env, hold) => startInProcess(env, hold === undefined ? {} : { hold }),
        hold: true,
        scale: { streams: STREAMS, perStream: PER_STREAM },
        downBlocks: 3,
        upBlocks: 3,
        limitMs: 50_000,
      });
    } finally {
      if (r !== undefined) console.log(JSON.stringify({ ...r, output: undefined }));
    }
    // Within 5 s of the start; on a machine so busy that the same server on an empty store (same run) takes
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

describe('start-up on a kept watched set', () => {
  it('compiles nothing at the start (the set is read in place), misses no block, and takes a change to a stream from the next block', {
    timeout: 120_000,
  }, async () => {
    let r: StartupRun | undefined;
    let live: { block: number; to: string; stream: string; delivered: boolean } | undefined;
    try {
      r = await startupRun({
        bin: BIN,
        start: (env) => startInProcess(env),
        scale: { streams: STREAMS, perStream: PER_STREAM, keep: true },
        downBlocks: 3,
        upBlocks: 3,
        limitMs: 50_000,
        then: async (l) => {
          // An address added to a live stream: laid over the kept set, matched from the next block.
          const stream = l.ids[7]!;
          const to = `0x${'ab'.repeat(19)}cd`;
          const added = await l.call(`/streams/evm/${stream}/address`, { method: 'POST', body: { address: [to] } });
          expect(added.status).toBe(200);
          const block = await l.transfer(to);
          const until = performance.now() + 30_000;
          while (l.deliveredAt(stream, block, to) === undefined && performance.now() < until)
            await new Promise((res) => setTimeout(res, 20));
          live = { block, to, stream, delivered: l.deliveredAt(stream, block, to) !== undefined };
        },
      });
    } finally {
      if (r !== undefined) console.log(JSON.stringify({ ...r, output: undefined }));
    }
    expect({ down: r.deliveredDown, up: r.deliveredUp }).toEqual({ down: 3, up: 3 });
    // No filter set was compiled in the pool: the kept one was read.
    expect(r.compileStartMs).toBeNaN();
    expect(r.keptBytes).toBeGreaterThan(0);
    expect(live?.delivered).toBe(true);
  });
});
