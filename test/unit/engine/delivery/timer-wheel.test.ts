import { describe, expect, it } from 'vitest';
import { TimerWheel } from '../../../../engine/delivery/timer-wheel.js';

/** A small deterministic PRNG, so a failure can be replayed. */
function prng(seed: number) {
  return () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed / 0x7fffffff;
  };
}

describe('TimerWheel', () => {
  const T0 = Date.parse('2026-11-22T12:00:00.123Z');

  it('fires each timer at its exact due time, across every level and the overflow', () => {
    const w = new TimerWheel(T0);
    const delays = [
      0,
      1,
      255,
      256,
      257,
      60_000,
      65_535,
      65_536,
      600_000,
      3_600_000,
      16_777_216,
      86_400_000,
      7 * 86_400_000,
      60 * 86_400_000,
    ];
    delays.forEach((d, i) => w.schedule(T0 + d, i));
    const fired: Array<[number, number]> = [];
    // Walk in uneven steps, as a clock that jumps does.
    let now = T0;
    const r = prng(7);
    while (w.size > 0) {
      const next = w.nextAt()!;
      now = r() < 0.5 ? next : Math.max(now, next - Math.floor(r() * 1000));
      w.advance(now, (data, at) => {
        expect(at).toBeLessThanOrEqual(now);
        fired.push([data, at]);
      });
    }
    expect(fired.map(([, at]) => at - T0)).toEqual(delays);
    expect(fired.map(([d]) => d)).toEqual(delays.map((_, i) => i));
  });

  it('matches a sorted reference under random schedules, cancels and jumps', () => {
    const r = prng(42);
    const w = new TimerWheel(T0);
    const live = new Map<number, { at: number; data: number }>();
    let now = T0;
    let id = 0;
    for (let step = 0; step < 3_000; step++) {
      const op = r();
      if (op < 0.6) {
        const span = [300, 70_000, 20_000_000, 5_000_000_000][Math.floor(r() * 4)]!;
        const at = now + Math.floor(r() * span);
        const data = id++;
        live.set(w.schedule(at, data), { at, data });
      } else if (op < 0.75 && live.size > 0) {
        const handles = [...live.keys()];
        const h = handles[Math.floor(r() * handles.length)]!;
        w.cancel(h);
        live.delete(h);
      } else {
        const to = now + Math.floor(r() * [500, 100_000, 30_000_000, 6_000_000_000][Math.floor(r() * 4)]!);
        const expected = [...live.entries()].filter(([, t]) => t.at <= to).sort((a, b) => a[1].at - b[1].at);
        const got: Array<[number, number]> = [];
        w.advance(to, (data, at) => got.push([data, at]));
        expect(got.map(([, at]) => at)).toEqual(expected.map(([, t]) => t.at));
        expect(new Set(got.map(([d]) => d))).toEqual(new Set(expected.map(([, t]) => t.data)));
        for (const [h] of expected) live.delete(h);
        now = to;
        const min = Math.min(...[...live.values()].map((t) => t.at));
        expect(w.nextAt()).toBe(live.size === 0 ? undefined : min);
      }
      expect(w.size).toBe(live.size);
    }
  });

  it('fires a timer scheduled in the past at once, and lets a firing timer schedule the next', () => {
    const w = new TimerWheel(T0);
    const seen: number[] = [];
    w.schedule(T0 - 5_000, 1);
    w.advance(T0, (d) => seen.push(d));
    expect(seen).toEqual([1]);
    let n = 0;
    const tick = (_d: number, at: number) => {
      seen.push(at - T0);
      if (++n < 5) w.schedule(at + 60_000, 2);
    };
    w.schedule(T0 + 60_000, 2);
    w.advance(T0 + 3_600_000, tick);
    expect(seen).toEqual([1, 60_000, 120_000, 180_000, 240_000, 300_000]);
  });
});
