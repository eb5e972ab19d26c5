import { describe, expect, it } from 'vitest';
import { GIVE_UP_AFTER_MS, nextRetryAt } from '../../../../engine/delivery/retry-schedule.js';
import { RetryScheduler } from '../../../../engine/delivery/retry-scheduler.js';
import { T0, stillClock } from './parts.js';

/** Retries woken on the service clock (moved by hand here), and the schedule they follow. */
const MIN = 60_000;
const HOUR = 60 * MIN;

function scheduler(awaitFired = false, fire: (id: string) => Promise<void> | undefined = () => undefined) {
  const clock = stillClock();
  const woken: Array<[string, number]> = [];
  const retries = new RetryScheduler(clock, (id) => (woken.push([id, clock.now() - T0]), fire(id)), awaitFired);
  return { clock, woken, retries };
}

describe('RetryScheduler', () => {
  it('wakes each stream at its own instant, however far the clock jumps', async () => {
    const { clock, woken, retries } = scheduler();
    retries.at('b', T0 + 6 * HOUR);
    retries.at('a', T0 + MIN);
    retries.at('c', T0 + MIN + 1);
    await clock.advance(7 * HOUR);
    expect(woken).toEqual([
      ['a', MIN],
      ['c', MIN + 1],
      ['b', 6 * HOUR],
    ]);
    expect(retries.size).toBe(0);
  });

  it('keeps one wake-up per stream: a new instant replaces the one before, the same instant changes nothing', async () => {
    const { clock, woken, retries } = scheduler();
    retries.at('a', T0 + 10 * MIN);
    retries.at('a', T0 + 2 * MIN);
    retries.at('a', T0 + 2 * MIN);
    expect(retries.size).toBe(1);
    await clock.advance(HOUR);
    expect(woken).toEqual([['a', 2 * MIN]]);
  });

  it('wakes no stream cancelled, and none once stopped', async () => {
    const { clock, woken, retries } = scheduler();
    retries.at('a', T0 + MIN);
    retries.at('b', T0 + 2 * MIN);
    retries.cancel('a');
    await clock.advance(MIN);
    retries.stop();
    await clock.advance(HOUR);
    expect(woken).toEqual([]);
  });

  it('under the test clock, a wake-up waits for the deliveries it started before the clock moves on', async () => {
    let answer: () => void = () => {};
    const delivery = new Promise<void>((resolve) => (answer = resolve));
    const { clock, woken, retries } = scheduler(true, () => delivery);
    retries.at('a', T0 + MIN);
    let moved = false;
    const jump = clock.advance(HOUR).then(() => (moved = true));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect([woken, moved]).toEqual([[['a', MIN]], false]);
    answer();
    await jump;
    expect(moved).toBe(true);
  });
});

describe('the retry schedule', () => {
  it('retries after 1 min, 10 min, 1 h, 2 h, 6 h and 12 h, the last at the 24-hour mark, then none', () => {
    const waits = [MIN, 10 * MIN, HOUR, 2 * HOUR, 6 * HOUR, 12 * HOUR];
    waits.forEach((wait, failed) => expect(nextRetryAt(failed, T0, T0)).toBe(T0 + wait));
    // The seventh wait (24 h) is cut at the mark: 24 hours after the first failure.
    expect(nextRetryAt(6, T0, T0 + 22 * HOUR)).toBe(T0 + GIVE_UP_AFTER_MS);
    expect(nextRetryAt(7, T0, T0 + 23 * HOUR)).toBeUndefined();
    // However many retries are left, none after 24 hours.
    expect(nextRetryAt(1, T0, T0 + GIVE_UP_AFTER_MS)).toBeUndefined();
  });
});
