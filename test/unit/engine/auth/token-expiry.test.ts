import { describe, expect, it } from 'vitest';
import { tokenExpiry } from '../../../../engine/auth/service.js';

const NOW = 1_795_000_000_250; // 250 ms into a second
const IAT = Math.floor(NOW / 1000);
const SKEW = 30_000;

describe('tokenExpiry: the exp of a sign-in token', () => {
  it('is an hour after issue without an expirationTime, and the expirationTime otherwise, at most a day', () => {
    expect(tokenExpiry(NOW, undefined, SKEW)).toBe(IAT + 3_600);
    expect(tokenExpiry(NOW, NOW + 600_000 - 250, SKEW)).toBe(IAT + 600);
    expect(tokenExpiry(NOW, NOW + 400 * 86_400_000, SKEW)).toBe(IAT + 86_400);
  });

  it("is never at or before iat: an expirationTime later in the same second rounds up, one passed within the allowance gives the allowance's end", () => {
    expect(tokenExpiry(NOW, NOW + 100, SKEW)).toBe(IAT + 1);
    expect(tokenExpiry(NOW, NOW - 10_000, SKEW)).toBe(Math.ceil((NOW - 10_000 + SKEW) / 1000));
    expect(tokenExpiry(NOW, NOW - SKEW + 1, SKEW)).toBe(IAT + 1);
    expect(tokenExpiry(NOW, NOW, SKEW)).toBe(Math.ceil((NOW + SKEW) / 1000));
    for (let late = 0; late < SKEW; late += 777) expect(tokenExpiry(NOW, NOW - late, SKEW)).toBeGreaterThan(IAT);
  });
});
