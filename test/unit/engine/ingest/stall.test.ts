import { describe, expect, it } from 'vitest';
import { ServiceClock } from '../../../../engine/clock.js';
import { HeadWatch, stallAfterMs } from '../../../../engine/ingest/stall.js';

/** A service clock that moves only by advance(): real time stands still. */
const frozenClock = (): ServiceClock => new ServiceClock({ elapsedMs: () => 0, wake: () => () => {} }, Date.parse('2026-06-01T00:00:00Z'));

describe('HeadWatch', () => {
  it('waits 10 block times for a head to move, 30 s at least', () => {
    expect(stallAfterMs(250)).toBe(30_000);
    expect(stallAfterMs(1_000)).toBe(30_000);
    expect(stallAfterMs(12_000)).toBe(120_000);
    expect(stallAfterMs(600_000)).toBe(6_000_000);
  });

  it('shows a chain stalled once its head has stood still that long, and not once it moves again', async () => {
    const clock = frozenClock();
    const heads = { '0x1': 100, bitcoin: 800_000 };
    const watch = new HeadWatch(clock, (chain) => (chain === 'bitcoin' ? 600_000 : 12_000));
    watch.start(() => Object.entries(heads).map(([chain, head]) => ({ chain, head })));
    await clock.advance(119_999);
    expect(watch.stalled('0x1', heads['0x1'])).toBe(false);
    await clock.advance(1);
    expect(watch.stalled('0x1', heads['0x1'])).toBe(true);
    expect(watch.stalled('bitcoin', heads.bitcoin)).toBe(false);
    // A new block: counted from when it was seen.
    heads['0x1'] = 101;
    expect(watch.stalled('0x1', heads['0x1'])).toBe(false);
    await clock.advance(60_000);
    expect(watch.stalled('0x1', heads['0x1'])).toBe(false);
    await clock.advance(60_000);
    expect(watch.stalled('0x1', heads['0x1'])).toBe(true);
    await clock.advance(6_000_000);
    expect(watch.stalled('bitcoin', heads.bitcoin)).toBe(true);
  });

  it('counts a stall from its start, not from the first time anyone asks', async () => {
    const clock = frozenClock();
    let head = 7;
    const watch = new HeadWatch(clock, () => 1_000);
    watch.start(() => [{ chain: '0x539', head }]);
    await clock.advance(10_000);
    // The head moved, then stood still: nobody asked in between.
    head = 8;
    await clock.advance(35_000);
    expect(watch.stalled('0x539', head)).toBe(true);
  });
});
