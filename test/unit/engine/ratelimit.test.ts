import { describe, expect, it } from 'vitest';
import { RateLimiter } from '../../../engine/ratelimit.js';

describe('RateLimiter', () => {
  it('allows a burst of `rate`, then refuses with the seconds to wait, then refills', () => {
    let now = 0;
    const rl = new RateLimiter(5, () => now);
    for (let i = 0; i < 5; i++) expect(rl.take('k')).toBe(0);
    expect(rl.take('k')).toBe(1);
    expect(rl.take('other')).toBe(0);
    now += 200; // one token back at 5/s
    expect(rl.take('k')).toBe(0);
    expect(rl.take('k')).toBe(1);
    now += 10_000;
    for (let i = 0; i < 5; i++) expect(rl.take('k')).toBe(0);
    expect(rl.take('k')).toBe(1);
  });

  it('never refuses when the rate is 0 (unlimited)', () => {
    const rl = new RateLimiter(0, () => 0);
    for (let i = 0; i < 10_000; i++) expect(rl.take('k')).toBe(0);
  });

  it('at one request per second, asks for a whole second and lets the next through exactly then', () => {
    let now = 0;
    const rl = new RateLimiter(1, () => now);
    expect(rl.take('k')).toBe(0);
    expect(rl.take('k')).toBe(1);
    now += 999;
    expect(rl.take('k')).toBe(1);
    now += 1;
    expect(rl.take('k')).toBe(0);
  });
});
