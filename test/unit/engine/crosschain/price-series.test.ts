import { describe, expect, it } from 'vitest';
import { bucketStart, nextBucket, sparklineWindow, type Interval } from '../../../../engine/crosschain/price-series.js';

/** Unix seconds of an ISO time, and back: the expected bucket starts below are written by hand, as dates. */
const t = (iso: string): number => Date.parse(iso) / 1000;
const iso = (s: number): string => new Date(s * 1000).toISOString();

describe('bucketStart and nextBucket (the /v1 price timeseries intervals)', () => {
  // [interval, a time, its bucket's start, the next bucket's start]
  const cases: Array<[Interval, string, string, string]> = [
    ['5m', '2024-02-29T23:58:41Z', '2024-02-29T23:55:00.000Z', '2024-03-01T00:00:00.000Z'],
    ['5m', '2024-03-01T00:00:00Z', '2024-03-01T00:00:00.000Z', '2024-03-01T00:05:00.000Z'],
    ['5m', '2024-03-01T00:04:59Z', '2024-03-01T00:00:00.000Z', '2024-03-01T00:05:00.000Z'],
    ['hourly', '2023-12-31T23:59:59Z', '2023-12-31T23:00:00.000Z', '2024-01-01T00:00:00.000Z'],
    ['daily', '2024-02-29T12:34:56Z', '2024-02-29T00:00:00.000Z', '2024-03-01T00:00:00.000Z'],
    ['daily', '2023-02-28T23:59:59Z', '2023-02-28T00:00:00.000Z', '2023-03-01T00:00:00.000Z'],
    // Weeks start on Monday (UTC): a Sunday is the last day of the week begun six days before (over a leap day here).
    ['weekly', '2024-03-03T23:59:59Z', '2024-02-26T00:00:00.000Z', '2024-03-04T00:00:00.000Z'],
    ['weekly', '2024-03-04T00:00:00Z', '2024-03-04T00:00:00.000Z', '2024-03-11T00:00:00.000Z'],
    ['weekly', '2023-12-31T12:00:00Z', '2023-12-25T00:00:00.000Z', '2024-01-01T00:00:00.000Z'],
    ['weekly', '2024-12-31T08:00:00Z', '2024-12-30T00:00:00.000Z', '2025-01-06T00:00:00.000Z'],
    // 1970-01-01 was a Thursday: its week began on Monday 1969-12-29.
    ['weekly', '1970-01-01T00:00:00Z', '1969-12-29T00:00:00.000Z', '1970-01-05T00:00:00.000Z'],
    // Months are calendar months: 29, 31, 31 and 28 days here.
    ['monthly', '2024-02-29T23:59:59Z', '2024-02-01T00:00:00.000Z', '2024-03-01T00:00:00.000Z'],
    ['monthly', '2024-01-31T23:59:59Z', '2024-01-01T00:00:00.000Z', '2024-02-01T00:00:00.000Z'],
    ['monthly', '2024-12-31T23:59:59Z', '2024-12-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z'],
    ['monthly', '2023-02-01T00:00:00Z', '2023-02-01T00:00:00.000Z', '2023-03-01T00:00:00.000Z'],
  ];
  it.each(cases)('%s: %s is in the bucket from %s to %s', (interval, at, start, next) => {
    expect(iso(bucketStart(t(at), interval))).toBe(start);
    expect(iso(nextBucket(t(start), interval))).toBe(next);
    // A bucket's start is its own bucket's start, and the next bucket begins where this one ends.
    expect(bucketStart(t(start), interval)).toBe(t(start));
    expect(bucketStart(t(next) - 1, interval)).toBe(t(start));
  });

  it('walks calendar months and Monday weeks across a leap day and a year end', () => {
    const walk = (interval: Interval, from: string, n: number): string[] => {
      const out = [bucketStart(t(from), interval)];
      while (out.length < n) out.push(nextBucket(out.at(-1)!, interval));
      return out.map(iso);
    };
    expect(walk('monthly', '2023-11-15T06:00:00Z', 5)).toEqual(
      ['2023-11-01', '2023-12-01', '2024-01-01', '2024-02-01', '2024-03-01'].map((d) => `${d}T00:00:00.000Z`),
    );
    expect(walk('weekly', '2024-02-20T06:00:00Z', 3)).toEqual(['2024-02-19', '2024-02-26', '2024-03-04'].map((d) => `${d}T00:00:00.000Z`));
    expect(walk('daily', '2024-02-28T06:00:00Z', 3)).toEqual(['2024-02-28', '2024-02-29', '2024-03-01'].map((d) => `${d}T00:00:00.000Z`));
  });
});

describe('sparklineWindow (the /v1 price sparkline ranges)', () => {
  // Ending at 2024-03-01 00:00 UTC: the windows span February 2024's 29 days.
  const to = t('2024-03-01T00:00:00Z');
  it.each([
    ['24h', '2024-02-29T00:00:00.000Z', '5m'],
    ['7d', '2024-02-23T00:00:00.000Z', 'hourly'],
    ['30d', '2024-01-31T00:00:00.000Z', 'hourly'],
    ['90d', '2023-12-02T00:00:00.000Z', 'daily'],
    ['1y', '2023-03-02T00:00:00.000Z', 'daily'],
  ] as const)('%s starts at %s, its points %s', (range, from, interval) => {
    expect(sparklineWindow(range, to)).toEqual({ from: t(from), to, interval });
  });
});
