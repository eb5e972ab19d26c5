import { describe, expect, it } from 'vitest';
import { ServiceClock } from '../../../../engine/clock.js';
import { BACKFILL_LOG_MS, BackfillProgress, RATE_WINDOW_MS, logBackfill, percent } from '../../../../engine/ingest/backfill.js';
import { jsonLogger } from '../../../../engine/log.js';
import { bar, chainLine } from '../../../../app/cli/status.js';

/** A backfill's rate over a sliding window of the injected clock, its log line, and the CLI's bar. */
const START = Date.parse('2026-11-24T00:00:00Z');
const frozen = { elapsedMs: () => 0, wake: () => () => {} };

describe('BackfillProgress', () => {
  it('measures blocks per second over the last RATE_WINDOW_MS and the time left at that rate', async () => {
    const clock = new ServiceClock(frozen, START);
    const p = new BackfillProgress({ from: 1000, to: 10_999 }, () => clock.now());
    p.note(999);
    expect(p.status(999)).toEqual({ from: 1000, to: 10_999, done: false, blocksPerSec: 0, etaSeconds: null });
    // 100 blocks a second for 10 s.
    for (let s = 1; s <= 10; s++) {
      await clock.advance(1000);
      p.note(999 + s * 100);
    }
    expect(p.status(1999)).toEqual({ from: 1000, to: 10_999, done: false, blocksPerSec: 100, etaSeconds: 90 });
    // Then 10 a second for a whole window: the old pace leaves the window.
    for (let s = 1; s <= RATE_WINDOW_MS / 1000; s++) {
      await clock.advance(1000);
      p.note(1999 + s * 10);
    }
    expect(p.status(1999 + 300)).toMatchObject({ blocksPerSec: 10, etaSeconds: 870 });
    // Stalled for a window: no rate, no estimate.
    await clock.advance(RATE_WINDOW_MS + 1000);
    expect(p.status(2299)).toMatchObject({ done: false, blocksPerSec: 0, etaSeconds: null });
    // Past `to` (blocks after it are followed, not backfilled): done, nothing left.
    await clock.advance(1000);
    p.note(11_500);
    expect(p.status(11_500)).toMatchObject({ done: true, etaSeconds: 0 });
  });

  it('logs a progress line every BACKFILL_LOG_MS of service time while the backfill moves (one while it stands still) until stopped', async () => {
    const clock = new ServiceClock(frozen, START);
    const lines: string[] = [];
    let head = 99;
    const p = new BackfillProgress({ from: 100, to: 299 }, () => clock.now());
    p.note(head);
    const log = logBackfill(
      clock,
      jsonLogger(
        (l) => void lines.push(l),
        () => clock.now(),
        'info',
      ),
      '0x539',
      () => ({ ...p.status(head), head }),
    );
    await clock.advance(BACKFILL_LOG_MS - 1);
    expect(lines).toEqual([]);
    head = 149;
    await clock.advance(1);
    expect(lines.map((l) => JSON.parse(l))).toEqual([
      {
        time: new Date(START + BACKFILL_LOG_MS).toISOString(),
        level: 'info',
        msg: 'backfill',
        chain: '0x539',
        head: 149,
        from: 100,
        to: 299,
        percent: 25,
        blocksPerSec: 5,
        etaSeconds: 30,
      },
    ]);
    // Standing still: one line says so, then none until it moves again.
    await clock.advance(BACKFILL_LOG_MS);
    expect(lines).toHaveLength(2);
    await clock.advance(5 * BACKFILL_LOG_MS);
    expect(lines).toHaveLength(2);
    head = 199;
    await clock.advance(BACKFILL_LOG_MS);
    expect(lines).toHaveLength(3);
    expect(JSON.parse(lines[2]!)).toMatchObject({ head: 199, percent: 50 });
    log.stop();
    head = 250;
    await clock.advance(5 * BACKFILL_LOG_MS);
    expect(lines).toHaveLength(3);
  });

  it('says how much of the range is stored, and the CLI draws it as a plain bar', () => {
    expect(percent({ from: 100, to: 299, head: 99 })).toBe(0);
    expect(percent({ from: 100, to: 299, head: 199 })).toBe(50);
    expect(percent({ from: 100, to: 299, head: 400 })).toBe(100);
    expect(bar(0)).toBe(`[${'-'.repeat(30)}]`);
    expect(bar(50)).toBe(`[${'#'.repeat(15)}${'-'.repeat(15)}]`);
    expect(
      chainLine(
        {
          chain: '0x539',
          head: 199,
          nodeHead: 400,
          backfill: { from: 100, to: 299, done: false, blocksPerSec: 12.5, etaSeconds: 8 },
          indexed: 190,
        },
        5,
      ),
    ).toBe(`0x539  [${'#'.repeat(15)}${'-'.repeat(15)}]  50.0%  backfill 100-299 at 199, 12.5 blocks/s, eta 8 s, indexed 190`);
    expect(chainLine({ chain: 'bitcoin', head: 50, nodeHead: 100, upstream: 'failing', lastError: 'refused' }, 7)).toBe(
      `bitcoin  [${'#'.repeat(15)}${'-'.repeat(15)}]  50.0%  head 50 of 100, upstream failing: refused`,
    );
    expect(chainLine({ chain: '0x539', head: 50, nodeHead: 50, upstream: 'ok', stalled: true }, 5)).toBe(
      `0x539  [${'#'.repeat(30)}] 100.0%  head 50 of 50, stalled: the head has not moved for 10 block times`,
    );
  });
});
