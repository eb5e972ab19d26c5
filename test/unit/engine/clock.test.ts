import { describe, expect, it } from 'vitest';
import { ServiceClock } from '../../../engine/clock.js';
import { MinHeap } from '../../../engine/heap.js';
import { manualTicker } from '../../helpers.js';

const START = Date.parse('2026-05-28T00:00:00Z');

describe('ServiceClock', () => {
  it('starts at the configured instant and runs at real speed', async () => {
    const m = manualTicker();
    const clock = new ServiceClock(m.ticker, START);
    expect(clock.now()).toBe(START);
    await m.pass(1500);
    expect(clock.now()).toBe(START + 1500);
  });

  it('fires the timers that fall due within a jump, in due order, and only those', async () => {
    const m = manualTicker();
    const clock = new ServiceClock(m.ticker, START);
    const fired: string[] = [];
    clock.at(START + 3_000, () => void fired.push('c'));
    clock.at(START + 1_000, () => void fired.push('a'));
    clock.at(START + 2_000, () => void fired.push('b1'));
    clock.at(START + 2_000, () => void fired.push('b2'));
    clock.at(START + 60_000, () => void fired.push('late'));
    const now = await clock.advance(5_000);
    expect(now).toBe(START + 5_000);
    expect(fired).toEqual(['a', 'b1', 'b2', 'c']);
    await clock.advance(55_000);
    expect(fired).toEqual(['a', 'b1', 'b2', 'c', 'late']);
  });

  it('fires timers scheduled by a firing timer when they too fall inside the jump, and awaits async ones', async () => {
    const m = manualTicker();
    const clock = new ServiceClock(m.ticker, START);
    const fired: number[] = [];
    clock.at(START + 10, async () => {
      await new Promise((r) => setTimeout(r, 5));
      fired.push(clock.now() - START);
      clock.at(START + 20, () => void fired.push(-20));
      clock.at(START + 5_000, () => void fired.push(-5000));
    });
    clock.at(START + 15, () => void fired.push(15));
    await clock.advance(100);
    expect(fired).toEqual([10, 15, -20]);
  });

  it('steps through a jump: each timer sees its own due time, and a self-rescheduling timer fires at every step', async () => {
    const m = manualTicker();
    const clock = new ServiceClock(m.ticker, START);
    const seen: number[] = [];
    const retry = () => {
      seen.push(clock.now() - START);
      clock.at(clock.now() + 60_000, retry);
    };
    clock.at(START + 60_000, retry);
    const end = await clock.advance(3_600_000);
    expect(seen).toEqual(Array.from({ length: 60 }, (_, i) => (i + 1) * 60_000));
    expect(end).toBe(START + 3_600_000);
  });

  it('does not fire a cancelled timer, and survives a timer that throws', async () => {
    const m = manualTicker();
    const errors: unknown[] = [];
    const clock = new ServiceClock(m.ticker, START, (e) => errors.push(e));
    const fired: string[] = [];
    const t = clock.at(START + 10, () => void fired.push('cancelled'));
    clock.at(START + 20, () => {
      throw new Error('boom');
    });
    clock.at(START + 30, () => void fired.push('after'));
    t.cancel();
    await clock.advance(100);
    expect(fired).toEqual(['after']);
    expect(errors).toHaveLength(1);
  });

  it('fires on real time through the ticker, without any advance', async () => {
    const m = manualTicker();
    const clock = new ServiceClock(m.ticker, START);
    const fired: number[] = [];
    clock.at(START + 250, () => void fired.push(clock.now()));
    expect(m.armed()).toBe(250);
    await m.pass(249);
    expect(fired).toEqual([]);
    await m.pass(1);
    expect(fired).toEqual([START + 250]);
  });

  it('re-arms to an earlier timer and caps long waits', () => {
    const m = manualTicker();
    const clock = new ServiceClock(m.ticker, START);
    clock.at(START + 86_400_000, () => {});
    expect(m.armed()).toBe(3_600_000);
    clock.at(START + 1_000, () => {});
    expect(m.armed()).toBe(1_000);
  });

  it('adds up jumps asked for at the same time', async () => {
    const clock = new ServiceClock(manualTicker().ticker, START);
    const fired: number[] = [];
    clock.at(START + 1500, () => void fired.push(clock.now()));
    const [a, b] = await Promise.all([clock.advance(1000), clock.advance(1000)]);
    expect([a, b, clock.now()]).toEqual([START + 1000, START + 2000, START + 2000]);
    expect(fired).toEqual([START + 1500]);
  });

  it('refuses a negative or infinite jump', () => {
    const clock = new ServiceClock(manualTicker().ticker, START);
    expect(() => clock.advance(-1)).toThrow(RangeError);
    expect(() => clock.advance(Infinity)).toThrow(RangeError);
  });
});

describe('MinHeap', () => {
  it('pops in (at, seq) order for any insertion order', () => {
    const h = new MinHeap<{ at: number; seq: number }>();
    const items = Array.from({ length: 500 }, (_, i) => ({ at: (i * 7919) % 97, seq: i }));
    for (const it of items) h.push(it);
    const out: Array<{ at: number; seq: number }> = [];
    for (let x = h.pop(); x !== undefined; x = h.pop()) out.push(x);
    const sorted = [...items].sort((a, b) => a.at - b.at || a.seq - b.seq);
    expect(out).toEqual(sorted);
  });
});
