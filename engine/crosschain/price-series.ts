import { z } from 'zod';
import type { Chain } from '../chains/registry.js';
import { blockAtOrAfter, blockAtOrBefore, blockTime } from '../data-api/common/block-times.js';
import type { DataDeps } from '../data-api/common/deps.js';
import { indexedHead } from '../data-api/common/pages.js';
import { bool, cursor, date, limit } from '../data-api/common/params.js';
import { markKey, priceReader, toNumber } from '../data-api/dex/index/prices.js';
import { badRequest } from '../errors.js';
import { validate } from '../schema.js';
import { v1ChainId } from './chains.js';
import { readCursor, writeCursor } from './cursor.js';
import type { FailedChain, V1Meta } from './fan-out.js';
import type { pricePoint } from './responses.js';
import { bitcoinToken, evmToken, metaOf, wrappedBtc } from './token-price.js';

/**
 * A token's USD price over time, from the price marks the Data API keeps (engine/data-api/dex/index/marks-writer.ts):
 * GET /v1/chains/:chainAlias/tokens/:tokenAliasOrTokenAddress/price/timeseries and /price/sparkline. A
 * bucket's price is its close: the price at the last indexed block before the bucket ends. Without
 * forwardFill a bucket is listed only when the token's price was marked in it (one of its pools moved);
 * with it, every bucket from the first priced one. Bitcoin's series is its wrapped bitcoin's (token-price.ts).
 */

export type Interval = '5m' | 'hourly' | 'daily' | 'weekly' | 'monthly';
const SECONDS: Readonly<Record<Exclude<Interval, 'monthly'>, number>> = { '5m': 300, hourly: 3_600, daily: 86_400, weekly: 604_800 };
/** Buckets looked at per request at most (a sparse token over a long range): past it the page ends early, with a cursor. */
export const MAX_BUCKETS = 10_000;

/** The bucket holding `t` (Unix seconds): its start. Weeks start on Monday (UTC), months on their first day. */
export function bucketStart(t: number, interval: Interval): number {
  if (interval === 'monthly') {
    const d = new Date(t * 1000);
    return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1) / 1000;
  }
  // 1970-01-01 was a Thursday: weeks are counted from Monday 1969-12-29.
  const offset = interval === 'weekly' ? 3 * 86_400 : 0;
  return Math.floor((t + offset) / SECONDS[interval]) * SECONDS[interval] - offset;
}

export function nextBucket(start: number, interval: Interval): number {
  if (interval !== 'monthly') return start + SECONDS[interval];
  const d = new Date(start * 1000);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) / 1000;
}

export const timeseriesQuery = z.object({
  chainAlias: z.string(),
  tokenAliasOrTokenAddress: z.string(),
  interval: z.enum(['5m', 'hourly', 'daily', 'weekly', 'monthly'], '5m, hourly, daily, weekly or monthly').default('5m'),
  fromDate: date.optional(),
  toDate: date.optional(),
  limit: limit(100),
  cursor,
  forwardFill: bool(false),
});

export const sparklineQuery = z.object({
  chainAlias: z.string(),
  tokenAliasOrTokenAddress: z.string(),
  range: z.enum(['24h', '7d', '30d', '90d', '1y'], '24h, 7d, 30d, 90d or 1y'),
});

export type SparklineRange = z.output<typeof sparklineQuery>['range'];
/** A sparkline's span and the interval of its points. */
const RANGES: Readonly<Record<SparklineRange, { seconds: number; interval: Interval }>> = {
  '24h': { seconds: 86_400, interval: '5m' },
  '7d': { seconds: 7 * 86_400, interval: 'hourly' },
  '30d': { seconds: 30 * 86_400, interval: 'hourly' },
  '90d': { seconds: 90 * 86_400, interval: 'daily' },
  '1y': { seconds: 365 * 86_400, interval: 'daily' },
};

/** A sparkline's window ending at `to` (Unix seconds), and the interval of its points. */
export function sparklineWindow(range: SparklineRange, to: number): { from: number; to: number; interval: Interval } {
  const { seconds, interval } = RANGES[range];
  return { from: to - seconds, to, interval };
}

export type PricePointV1 = z.output<typeof pricePoint>;

const iso = (t: number): string => new Date(t * 1000).toISOString();

/** The EVM chain and token a series is read on (none: no wrapped bitcoin is priced). */
export type SeriesRead = { chain: Chain; token: string } | undefined;

/** Where a series is read: the EVM chain and token (Bitcoin: its wrapped bitcoin's), and the chains `meta` names. */
interface Source {
  read: SeriesRead;
  meta: { chains: Chain[]; failed: FailedChain[] };
}
async function source(deps: DataDeps, chain: Chain, alias: string, evmChains: readonly Chain[]): Promise<Source> {
  if (chain.family !== 'bitcoin') return { read: { chain, token: evmToken(deps, chain, alias) }, meta: { chains: [chain], failed: [] } };
  bitcoinToken(alias);
  const { chains, best, failed } = await wrappedBtc(deps, evmChains);
  return {
    read: best === undefined ? undefined : { chain: best.chain, token: best.address },
    meta: { chains: [chain, ...chains], failed },
  };
}

interface Window {
  from: number;
  to: number;
  interval: Interval;
  limit: number;
  forwardFill: boolean;
}

/** The buckets of a window from `first`, oldest first: at most `limit` points; `next`: where another page starts (none: the window is done). */
function series(
  deps: DataDeps,
  src: { chain: Chain; token: string },
  head: number,
  w: Window,
  first: number,
): { points: PricePointV1[]; next: number | undefined } {
  const { kv } = deps;
  const chain = src.chain.key;
  const reader = priceReader(deps, chain, head);
  const points: PricePointV1[] = [];
  let start = bucketStart(first, w.interval);
  for (let looked = 0; start <= w.to && points.length < w.limit && looked < MAX_BUCKETS; looked++, start = nextBucket(start, w.interval)) {
    const close = blockAtOrBefore(kv, chain, Math.min(nextBucket(start, w.interval) - 1, w.to));
    if (close === undefined || reader === undefined) continue;
    if (!w.forwardFill) {
      const open = blockAtOrAfter(kv, chain, start);
      if (open === undefined || open > close) continue;
      const marked =
        kv.range('priceMarks', { start: markKey(chain, src.token, open), end: markKey(chain, src.token, close + 1), limit: 1 }).length > 0;
      if (!marked) continue;
    }
    const usd = reader.usd(src.token, close);
    if (usd !== null) points.push({ timestamp: iso(start), price: toNumber(usd) });
  }
  return { points, next: start <= w.to ? start : undefined };
}

/** The source's last indexed block and its time (none: nothing to read). */
async function headOf(deps: DataDeps, read: SeriesRead): Promise<{ read: SeriesRead; head: number; headTime: number | undefined }> {
  if (read === undefined) return { read: undefined, head: -1, headTime: undefined };
  const head = await indexedHead(deps, read.chain.key);
  return { read, head, headTime: blockTime(deps.kv, read.chain.key, head) };
}

/** Where a series continues (cursor.ts keeps the query it was made for, as asked). */
interface SeriesPosition {
  /** The window the first page settled (Unix seconds): later pages keep it while blocks arrive. */
  f: number;
  e: number;
  /** The next page's first bucket and number. */
  t: number;
  p: number;
}

const validPosition = (c: Record<string, unknown>): boolean =>
  [c.f, c.e, c.t, c.p].every(Number.isSafeInteger) && (c.f as number) <= (c.t as number) && (c.f as number) <= (c.e as number);

/** `now`: the service clock (Unix seconds), the end of a window while nothing is indexed. */
export async function timeseries(deps: DataDeps, chain: Chain, raw: Record<string, string>, evmChains: readonly Chain[], now: number) {
  const q = validate(timeseriesQuery, raw, 'query');
  const src = await source(deps, chain, q.tokenAliasOrTokenAddress, evmChains);
  const { read, head, headTime } = await headOf(deps, src.read);
  const list = JSON.stringify([
    v1ChainId(chain),
    q.tokenAliasOrTokenAddress.toLowerCase(),
    q.interval,
    q.fromDate ?? null,
    q.toDate ?? null,
    q.forwardFill,
    q.limit,
  ]);
  const c = q.cursor === null ? undefined : readCursor<SeriesPosition>(q.cursor, list, validPosition);
  // The window ends at the last indexed block when the first page is asked; its cursor keeps that window.
  const to = c?.e ?? Math.min(q.toDate ?? Number.MAX_SAFE_INTEGER, headTime ?? now);
  const from =
    c?.f ?? q.fromDate ?? bucketStart(to, q.interval) - (q.limit - 1) * (q.interval === 'monthly' ? 31 * 86_400 : SECONDS[q.interval]);
  if (from > to) throw badRequest('fromDate', 'after toDate (or after the last indexed block)');
  const at = c ?? { t: from, p: 0 };
  const page =
    read === undefined
      ? { points: [], next: undefined }
      : series(deps, read, head, { from, to, interval: q.interval, limit: q.limit, forwardFill: q.forwardFill }, at.t);
  const meta: V1Meta = metaOf(deps, src.meta.chains, src.meta.failed);
  return {
    cursor: page.next === undefined ? null : writeCursor(list, { f: from, e: to, t: page.next, p: at.p + 1 } satisfies SeriesPosition),
    chain: v1ChainId(chain),
    fromDate: iso(from),
    toDate: iso(to),
    interval: q.interval,
    page: at.p,
    result: page.points,
    meta,
  };
}

/**
 * A sparkline's window (ending at the source's last indexed block) and points, read where a price was already looked
 * up: the endpoint's source, or a wallet's token row's (wallet-tokens.ts), so a row's line is its price's.
 */
export async function sparklineOf(
  deps: DataDeps,
  src: SeriesRead,
  range: SparklineRange,
  now: number,
): Promise<{ from: number; to: number; points: PricePointV1[] }> {
  const { read, head, headTime } = await headOf(deps, src);
  const { from, to, interval } = sparklineWindow(range, headTime ?? now);
  return {
    from,
    to,
    points: read === undefined ? [] : series(deps, read, head, { from, to, interval, limit: MAX_BUCKETS, forwardFill: true }, from).points,
  };
}

export async function sparkline(deps: DataDeps, chain: Chain, raw: Record<string, string>, evmChains: readonly Chain[], now: number) {
  const q = validate(sparklineQuery, raw, 'query');
  const src = await source(deps, chain, q.tokenAliasOrTokenAddress, evmChains);
  const { from, to, points } = await sparklineOf(deps, src.read, q.range, now);
  return {
    chain: v1ChainId(chain),
    range: q.range,
    fromDate: iso(from),
    toDate: iso(to),
    page: 0,
    cursor: null,
    result: points,
    meta: metaOf(deps, src.meta.chains, src.meta.failed),
  };
}
