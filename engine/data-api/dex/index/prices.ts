import { factoryOf, type Pricing } from '../../../chains/pricing.js';
import { pos } from '../../../evm/store.js';
import { blockAtOrBefore, blockTime, n12 } from '../../common/block-times.js';
import type { TokenMetadata } from '../../../evm/token-metadata.js';
import type { Kv } from '../../../ports.js';
import { poolKey, poolRowsPrefix, tokenPoolsPrefix, type PoolRow, type StateRow } from './keys.js';
import { balanceKey, DAY, hex } from '../../erc20/index/keys.js';
import { metadata } from '../../common/node-reads.js';

/**
 * USD prices from the pools the DEX index holds (data-api-notes.md §3.2–3.3), in exact integer math: a token's
 * price at a block is its pricing pool's marginal price after that pool's last event at or before the block (V2:
 * the reserves of its last Sync; V3, V4: the sqrtPriceX96 of its last Swap or Initialize), times the other token's USD
 * price. The other token must route to USD: a stablecoin ($1), the wrapped native token (priced from its deepest
 * pool against a stablecoin), or a whitelisted token (priced against a stablecoin or the wrapped native token).
 * The pricing pool: among the token's pools whose two sides each hold at least `minSideUsd`, the one with the most
 * swaps in the 24 h before the block, then the deeper one. The asked token's options (`exchange`, the side rule,
 * inactivity) apply to its own pools; the tokens it routes through are priced by the defaults.
 */

/** A non-negative rational: exact prices, converted to decimals only when answered. */
export interface Ratio {
  num: bigint;
  den: bigint;
}

const ONE: Ratio = { num: 1n, den: 1n };
export const mul = (a: Ratio, b: Ratio): Ratio => ({ num: a.num * b.num, den: a.den * b.den });
export const add = (a: Ratio, b: Ratio): Ratio => ({ num: a.num * b.den + b.num * a.den, den: a.den * b.den });
/** A pool's price of one of its tokens in the other, from its price of token0 in token1 (whole units). */
export const sidePrice = (price0: Ratio, isToken0: boolean): Ratio => (isToken0 ? price0 : { num: price0.den, den: price0.num });
export const div = (a: Ratio, b: Ratio): Ratio => ({ num: a.num * b.den, den: a.den * b.num });
const pow10 = (n: number): bigint => 10n ** BigInt(n);
const Q192 = 1n << 192n;
/** An amount in a token's smallest units as whole tokens. */
const whole = (raw: bigint, decimals: number): Ratio => ({ num: raw, den: pow10(decimals) });
const atLeast = (a: Ratio, usd: number): boolean => a.num * 1_000_000n >= BigInt(Math.round(usd * 1_000_000)) * a.den;

/** Digits after the point kept when a ratio becomes a decimal. */
const FRACTION_DIGITS = 36;

/** The ratio as a decimal string, truncated to `digits` after the point, without trailing zeros. */
export function decimal(r: Ratio, digits = FRACTION_DIGITS): string {
  const scaled = ((r.num * pow10(digits)) / r.den).toString().padStart(digits + 1, '0');
  const int = scaled.slice(0, scaled.length - digits);
  const frac = scaled.slice(scaled.length - digits).replace(/0+$/, '');
  return frac === '' ? int : `${int}.${frac}`;
}
export const toNumber = (r: Ratio): number => Number(decimal(r));
/** A USD amount as the answers' strings write it: truncated to the cent, always two decimals. */
export function usdCents(r: Ratio): string {
  const [int, frac = ''] = decimal(r, 2).split('.');
  return `${int}.${frac.padEnd(2, '0')}`;
}

/** The store as prices read it: the server's, or an index's writer (marks are computed inside a block's write). */
export type PriceKv = Pick<Kv, 'get' | 'range' | 'count'>;
/** What a price needs: the store, token metadata (decimals), the chain's pricing entry. */
export interface PriceDeps {
  kv: PriceKv;
  tokens: TokenMetadata;
  pricing?: ((chain: string) => Pricing | undefined) | undefined;
}

export interface PriceOptions {
  /** Both sides of the pricing pool must hold at least this many USD (default 50). */
  minSideUsd: number;
  /** Only pools of this exchange: a factory's address, or its registry name (case, spaces and a version suffix aside). */
  exchange?: string;
  /** Pools without a swap in this many days before the block are left out. */
  maxInactivityDays?: number;
}

/** The side rule's default, and the options the tokens a price routes through are priced with. */
export const MIN_SIDE_USD = 50;
const ANCHOR: PriceOptions = { minSideUsd: MIN_SIDE_USD };
/** Whether a price with these options is the one the marks hold (the defaults), rather than computed from the pools at the block. */
const byMarks = (opts: PriceOptions): boolean =>
  opts.minSideUsd === MIN_SIDE_USD && opts.exchange === undefined && opts.maxInactivityDays === undefined;

/** A token's price at a block and where it comes from. */
export interface PricePoint {
  usd: Ratio;
  pool: string;
  /** The factory that made the pool, and the registry's name for it. */
  factory: string;
  exchangeName: string;
  /** The pool's two sides in USD. */
  liquidityUsd: Ratio;
}

/** A token's price at a block, 24 h of block time before, and the wrapped native token's price then. */
export interface Priced {
  now: PricePoint;
  dayAgo: PricePoint | null;
  nativeUsd: Ratio | null;
}

/**
 * `priceMarks` row, `chain/token/block` (written by engine/data-api/dex/index/marks-writer.ts at each block where one of the
 * token's pools moved): the token's price at the end of that block as its pricing pool gave it, in the pool's other
 * token (exact, whole units), with the pool's reserves then; or null: from that block no pool prices the token. The
 * other token's USD price and the side rule are applied when read, so a token priced through ether moves with
 * ether between its swaps, and a side that ether's fall takes under $50 no longer prices it.
 */
export type MarkRow =
  | [pool: string, other: string, num: string, den: string, reserve: string, otherReserve: string, decimals: number, otherDecimals: number]
  | null;
export const marksPrefix = (chain: string, token: string): string => `${chain}/${token}/`;
export const markKey = (chain: string, token: string, block: number): string => `${marksPrefix(chain, token)}${n12(block)}`;
/**
 * `priceMarks` row `chain/l/token`: the token's last mark and its block, so a price at the head is one read (a range
 * read costs about ten gets in lmdb-js).
 */
export type LatestMarkRow = [block: number, mark: MarkRow];
export const latestMarkKey = (chain: string, token: string): string => `${chain}/l/${token}`;

/** A price found from the pools, with the mark that records it. */
export type Candidate = PricePoint & { mark: NonNullable<MarkRow> };
/** A pool's price of the token in its other token, whose USD price is not known at the block (no side rule applied). */
interface Unvalued {
  pool: string;
  mark: NonNullable<MarkRow>;
}

/** Swaps counted per pool for its 24 h activity: past this many, pools count as equally active and the deeper wins. */
const ACTIVITY_CAP = 1_000;
/** The last log index pos() can write: a range "up to the end of a block" starts there. */
export const LAST_LOG = 0xffffff;
/** Routes are at most stablecoin ← native ← whitelisted ← token deep; a deeper chain of marks is a registry changed under them. */
const MAX_ROUTE = 3;

/** The routes a token may take to USD, by what it is. */
export type Role = 'stable' | 'native' | 'whitelist' | 'other';
/** The order marks of one block are computed in: each role routes only through roles before it (stablecoins: $1). */
export const ROLE_ORDER: Record<Role, number> = { native: 0, whitelist: 1, stable: 2, other: 3 };

const bareName = (name: string): string => name.toLowerCase().replace(/[^a-z0-9]/g, '');
/** `exchange` as a factory address, its registry name, or that name without its version (`uniswapv2`, `sushiswap`). */
export function isExchange(factory: { address: string; name: string }, exchange: string): boolean {
  const given = bareName(exchange);
  const name = bareName(factory.name);
  return exchange.toLowerCase() === factory.address || given === name || given === name.replace(/v\d+$/, '');
}

/**
 * Prices on one chain as of the indexed head `head`, for one request (or one block's marks). With the default
 * options a price is the token's last mark at or before the block, times its other token's USD price then; other
 * options compute it from the pools at the block. What it finds for the tokens a price routes through (the wrapped
 * native token above all) is found once.
 */
export class PriceReader {
  private readonly decimals: Map<string, number>;
  private readonly poolLists: Map<string, Array<[pool: string, other: string]>>;
  private readonly usds = new Map<string, Ratio | null>();
  private readonly values = new Map<string, Ratio | null>();
  private readonly before = new Map<string, number | undefined>();

  constructor(
    private readonly deps: PriceDeps,
    private readonly chain: string,
    private readonly pricing: Pricing,
    private readonly head: number,
    /** Kept from one reader to the next of the chain (the price marks' index): see PoolsCache. */
    shared?: PoolsCache,
  ) {
    this.decimals = shared?.decimals ?? new Map();
    this.poolLists = shared?.pools ?? new Map();
  }

  /** A token's price at `block` (at most the head), 24 h before, and the native token's price at `block`; null when no pool prices it. */
  async price(token: string, block: number, opts: PriceOptions): Promise<Priced | null> {
    if (!byMarks(opts)) await this.loadDecimals(token);
    const now = this.pointOf(token, block, opts);
    if (now === null) return null;
    const before = this.blockBefore(block, DAY);
    const dayAgo = before === undefined ? null : this.pointOf(token, before, opts);
    return { now, dayAgo, nativeUsd: this.usd(this.pricing.wrappedNative, block) };
  }

  /** A stablecoin counts $1; its pool and exchange are those its price would have without that rule. */
  private pointOf(token: string, block: number, opts: PriceOptions): PricePoint | null {
    const p = byMarks(opts) ? this.marked(token, block, 0) : this.candidate(token, block, opts);
    return p !== null && this.role(token) === 'stable' ? { ...p, usd: ONE } : p;
  }

  role(token: string): Role {
    if (this.pricing.stablecoins.includes(token)) return 'stable';
    if (token === this.pricing.wrappedNative) return 'native';
    return this.pricing.whitelist.includes(token) ? 'whitelist' : 'other';
  }

  /** The tokens a token of this role may be priced against; undefined: any token that routes (an ordinary token's own pools). */
  private counters(token: string, role: Role): readonly string[] | undefined {
    const { stablecoins, wrappedNative, whitelist } = this.pricing;
    if (role === 'native') return stablecoins;
    if (role === 'whitelist') return [...stablecoins, wrappedNative];
    if (role === 'stable') return [...stablecoins, wrappedNative, ...whitelist].filter((t) => t !== token);
    return undefined;
  }

  /** Whether a pool of `token` against `other` may price `token` (the pools `candidate` weighs). */
  pricedBy(token: string, other: string): boolean {
    const counters = this.counters(token, this.role(token));
    return counters === undefined ? this.role(other) !== 'other' : counters.includes(other);
  }

  /** USD per whole token at `block` as prices route through it, by its marks ($1 for a stablecoin); null when no pool prices it. */
  usd(token: string, block: number): Ratio | null {
    return this.usdAt(token, block, 0);
  }

  /**
   * USD per whole token at `block` for valuing an amount of it: its price by the default options, so null when no
   * pool prices it, a stablecoin too (then it counts $1); what the price endpoint would answer, or its 404.
   */
  valueUsd(token: string, block: number): Ratio | null {
    const key = `${token}/${block}`;
    let v = this.values.get(key);
    if (v === undefined && !this.values.has(key)) this.values.set(key, (v = this.pointOf(token, block, ANCHOR)?.usd ?? null));
    return v ?? null;
  }

  private usdAt(token: string, block: number, depth: number): Ratio | null {
    if (this.role(token) === 'stable') return ONE;
    const key = `${token}/${block}`;
    let p = this.usds.get(key);
    if (p === undefined && !this.usds.has(key)) this.usds.set(key, (p = this.marked(token, block, depth)?.usd ?? null));
    return p ?? null;
  }

  /** The token's last mark at or before `block` (undefined: none). */
  private markAt(token: string, block: number): MarkRow | undefined {
    const { kv } = this.deps;
    const latest = kv.get<LatestMarkRow>('priceMarks', latestMarkKey(this.chain, token));
    if (latest === undefined || latest[0] <= block) return latest?.[1];
    const [last] = kv.range<MarkRow>('priceMarks', {
      start: markKey(this.chain, token, block),
      end: marksPrefix(this.chain, token),
      reverse: true,
      limit: 1,
    });
    return last?.value;
  }

  /** The token's price by its last mark at or before `block`, if its pool's sides each hold $50 at `block`. */
  private marked(token: string, block: number, depth: number): PricePoint | null {
    const mark = depth >= MAX_ROUTE ? undefined : this.markAt(token, block);
    if (mark === undefined || mark === null) return null;
    const [pool, other, num, den, reserve, otherReserve, decimals, otherDecimals] = mark;
    const row = this.deps.kv.get<PoolRow>('dexPools', poolKey(this.chain, pool));
    const factory = row === undefined ? undefined : factoryOf(this.pricing, row[3]);
    const otherUsd = this.usdAt(other, block, depth + 1);
    if (factory === undefined || otherUsd === null) return null;
    const usd = mul({ num: BigInt(num), den: BigInt(den) }, otherUsd);
    const sides = sidesUsd(whole(BigInt(reserve), decimals), whole(BigInt(otherReserve), otherDecimals), usd, otherUsd, ANCHOR);
    return sides === null ? null : { usd, pool, factory: factory.address, exchangeName: factory.name, liquidityUsd: sides };
  }

  /** The token's decimals if the store holds its metadata (0 for a contract without decimals()). */
  private decimalsOf(token: string): number | undefined {
    let d = this.decimals.get(token);
    if (d === undefined) {
      const info = this.deps.tokens.stored(this.chain, token);
      if (info !== undefined) this.decimals.set(token, (d = info.decimals ?? 0));
    }
    return d;
  }

  async tokenDecimals(token: string): Promise<number> {
    const known = this.decimalsOf(token);
    if (known !== undefined) return known;
    const d = (await metadata(this.deps, this.chain, token)).decimals ?? 0;
    this.decimals.set(token, d);
    return d;
  }

  /** Reads the metadata of the token and the other tokens of its pools: a price from the pools needs their decimals. */
  private async loadDecimals(token: string): Promise<void> {
    const tokens = new Set([token, ...this.pools(token, this.role(token)).map(([, other]) => other)]);
    await Promise.all([...tokens].map((t) => this.tokenDecimals(t)));
  }

  /** The token's pools a price may use: [pool, the other token]. */
  private pools(token: string, role: Role): Array<[pool: string, other: string]> {
    let list = this.poolLists.get(token);
    if (list === undefined) this.poolLists.set(token, (list = this.readPools(token, role)));
    return list;
  }

  /** Forgets the token's pools unless `pool` is among them (a pool it did not have moved: the list is read again). */
  knowPool(token: string, pool: string, other: string): void {
    // A pool the token's list leaves out by role (ether's against an ordinary token) is no news.
    if (this.pricedBy(token, other) && this.poolLists.get(token)?.some(([p]) => p === pool) === false) this.poolLists.delete(token);
  }

  private readPools(token: string, role: Role): Array<[pool: string, other: string]> {
    const { kv } = this.deps;
    const counters = this.counters(token, role);
    const prefixes =
      counters === undefined ? [tokenPoolsPrefix(this.chain, token)] : counters.map((c) => tokenPoolsPrefix(this.chain, token, c));
    const base = tokenPoolsPrefix(this.chain, token).length;
    return prefixes.flatMap((prefix) =>
      kv.range<number>('dexPools', { start: prefix, end: `${prefix}\uffff` }).flatMap(({ key }): Array<[string, string]> => {
        const [other, pool] = key.slice(base).split('/') as [string, string];
        return counters !== undefined || this.role(other) !== 'other' ? [[pool, other]] : [];
      }),
    );
  }

  /**
   * The token's price from its pools at `block`: among those that pass the side rule (and `opts`' other filters),
   * the busiest of the 24 h before, then the deepest (the wrapped native token: the deepest). Pools whose tokens'
   * decimals the store does not hold are skipped (the DEX index's batch reads them before it writes).
   */
  candidate(token: string, block: number, opts: PriceOptions = ANCHOR): Candidate | null {
    return this.busiest(token, block, this.weigh(token, block, opts).passing);
  }

  /**
   * The mark of the token at `block`: its pricing pool's price (candidate with the defaults); when no pool passes
   * and some pools' other token has no USD price yet, the busiest of those (its side rule is applied when it is
   * read, once that token has a price); null when no pool can price it.
   */
  markOf(token: string, block: number): MarkRow {
    const { passing, unvalued } = this.weigh(token, block, ANCHOR);
    return (this.busiest(token, block, passing) ?? this.busiest(token, block, unvalued))?.mark ?? null;
  }

  /** The token's pools at `block` by `opts`: those that pass the side rule, and those whose other token has no USD price then. */
  private weigh(token: string, block: number, opts: PriceOptions): { passing: Candidate[]; unvalued: Unvalued[] } {
    const { kv } = this.deps;
    const idleSince = opts.maxInactivityDays === undefined ? undefined : (this.blockBefore(block, opts.maxInactivityDays * DAY) ?? 0);
    const passing: Candidate[] = [];
    const unvalued: Unvalued[] = [];
    for (const [pool, other] of this.pools(token, this.role(token))) {
      const row = kv.get<PoolRow>('dexPools', poolKey(this.chain, pool));
      const factory = row === undefined ? undefined : factoryOf(this.pricing, row[3]);
      if (row === undefined || factory === undefined || (opts.exchange !== undefined && !isExchange(factory, opts.exchange))) continue;
      if (
        idleSince !== undefined &&
        kv.range('dexSwaps', {
          start: poolRowsPrefix(this.chain, pool) + pos(block, LAST_LOG),
          end: poolRowsPrefix(this.chain, pool) + pos(idleSince, 0),
          reverse: true,
          limit: 1,
        }).length === 0
      )
        continue;
      const found = this.throughPool(token, other, pool, row, block, factory.name, opts);
      if (found === null) continue;
      if ('usd' in found) passing.push(found);
      else unvalued.push(found);
    }
    return { passing, unvalued };
  }

  /**
   * Among pools, the one with the most swaps in the 24 h before `block` (counted only when there is a choice to
   * make; past ACTIVITY_CAP as many as the cap), then the deeper one; for the wrapped native token, the deepest.
   */
  private busiest<P extends { pool: string; liquidityUsd?: Ratio }>(token: string, block: number, pools: P[]): P | null {
    if (pools.length < 2) return pools[0] ?? null;
    const { kv } = this.deps;
    const native = this.role(token) === 'native';
    const deeper = (a: P, b: P): boolean =>
      a.liquidityUsd !== undefined &&
      b.liquidityUsd !== undefined &&
      a.liquidityUsd.num * b.liquidityUsd.den > b.liquidityUsd.num * a.liquidityUsd.den;
    const since = this.blockBefore(block, DAY) ?? 0;
    // Counted by lmdb-js in native code (no key is decoded: a key-by-key count cost 138 s of bench:prices' 406 s
    // build), so a count walks the pool's whole day, which bounds it.
    const swaps = (p: P): number =>
      native
        ? 0
        : Math.min(
            ACTIVITY_CAP,
            kv.count('dexSwaps', {
              start: poolRowsPrefix(this.chain, p.pool) + pos(since, 0),
              end: poolRowsPrefix(this.chain, p.pool) + pos(block + 1, 0),
            }),
          );
    let best = { pool: pools[0]!, swaps: swaps(pools[0]!) };
    for (const pool of pools.slice(1)) {
      const n = swaps(pool);
      if (n > best.swaps || (n === best.swaps && deeper(pool, best.pool))) best = { pool, swaps: n };
    }
    return best.pool;
  }

  /** The token's price through one pool at `block`, if the pool has a state there and passes the side rule; unvalued when the other token has no USD price. */
  private throughPool(
    token: string,
    other: string,
    pool: string,
    row: PoolRow,
    block: number,
    exchangeName: string,
    opts: PriceOptions,
  ): Candidate | Unvalued | null {
    const [d0, d1] = [this.decimalsOf(row[1]), this.decimalsOf(row[2])];
    if (d0 === undefined || d1 === undefined) return null;
    const at = poolAt(this.deps.kv, this.chain, pool, row, block, this.head, d0, d1);
    if (at === null) return null;
    const { price0, reserves } = at;
    const isToken0 = row[1] === token;
    const inOther = sidePrice(price0, isToken0);
    const [tokenReserve, otherReserve] = isToken0 ? reserves : [reserves[1], reserves[0]];
    const [tokenDecimals, otherDecimals] = isToken0 ? [d0, d1] : [d1, d0];
    const mark: NonNullable<MarkRow> = [
      pool,
      other,
      hex(inOther.num),
      hex(inOther.den),
      hex(tokenReserve),
      hex(otherReserve),
      tokenDecimals,
      otherDecimals,
    ];
    const otherUsd = this.usd(other, block);
    if (otherUsd === null) return { pool, mark };
    const usd = mul(inOther, otherUsd);
    const liquidityUsd = sidesUsd(whole(tokenReserve, tokenDecimals), whole(otherReserve, otherDecimals), usd, otherUsd, opts);
    return liquidityUsd === null ? null : { usd, pool, factory: row[3], exchangeName, liquidityUsd, mark };
  }

  /** The last indexed block at least `seconds` before `block`; undefined when the indexes hold none that old. Kept: a search of blockTimes each. */
  blockBefore(block: number, seconds: number): number | undefined {
    const key = `${block}-${seconds}`;
    if (this.before.has(key)) return this.before.get(key);
    const t = blockTime(this.deps.kv, this.chain, block);
    const found = t === undefined ? undefined : blockAtOrBefore(this.deps.kv, this.chain, t - seconds);
    this.before.set(key, found);
    return found;
  }
}

/**
 * A pool's last state at (block, logIndex) or before. A swap's own (V3, V4) or the V2 Sync just before it first, by
 * key: a get costs a tenth of a range read in lmdb-js, and the candles price every swap so.
 */
function stateAt(kv: Pick<Kv, 'range' | 'get'>, prefix: string, block: number, logIndex: number): StateRow | undefined {
  if (logIndex !== LAST_LOG)
    for (const at of logIndex > 0 ? [logIndex, logIndex - 1] : [logIndex]) {
      const state = kv.get<StateRow>('dexStates', prefix + pos(block, at));
      if (state !== undefined) return state;
    }
  return kv.range<StateRow>('dexStates', { start: prefix + pos(block, logIndex), end: prefix, reverse: true, limit: 1 })[0]?.value;
}

/**
 * A pool at `block` (at most the indexed `head`), after its log `logIndex` there (by default its last): its reserves (V2: those of its last Sync; V3: its balances, the
 * ERC-20 index's at the head, before it those its last state row kept; V4: the virtual reserves of its active
 * liquidity its last state row kept) and its price of token0 in token1 in whole units (decimals d0, d1); null before
 * its first state, or with an empty side (V2).
 */
export function poolAt(
  kv: Pick<Kv, 'range' | 'get'>,
  chain: string,
  pool: string,
  row: PoolRow,
  block: number,
  head: number,
  d0: number,
  d1: number,
  logIndex = LAST_LOG,
): { reserves: [bigint, bigint]; price0: Ratio } | null {
  const state = stateAt(kv, poolRowsPrefix(chain, pool), block, logIndex);
  if (state === undefined) return null;
  if (state.length === 2) {
    const reserves: [bigint, bigint] = [BigInt(state[0]), BigInt(state[1])];
    if (reserves[0] === 0n || reserves[1] === 0n) return null;
    return { reserves, price0: { num: reserves[1] * pow10(d0), den: reserves[0] * pow10(d1) } };
  }
  const sqrt = BigInt(state[0]);
  if (sqrt === 0n) return null;
  const balance = (token: string): bigint => BigInt(kv.get<string>('erc20Balances', balanceKey(chain, pool, token)) ?? '0x0');
  // V4: the virtual reserves its row keeps (the PoolManager's balances are every pool's).
  const reserves: [bigint, bigint] =
    block >= head && row[0] === 'v3' ? [balance(row[1]), balance(row[2])] : [BigInt(state[3]), BigInt(state[4])];
  return { reserves, price0: { num: sqrt * sqrt * pow10(d0), den: Q192 * pow10(d1) } };
}

/**
 * What readers of one chain may keep from one to the next: tokens' decimals (immutable) and each token's pools. A
 * pool list may hold pools a reorg took back (their rows are gone: skipped), and misses a pool made since until
 * `knowPool` hears it moved (a pool that never moved has no state, so no price). Bounded: cleared past MAX_KEPT.
 */
export interface PoolsCache {
  decimals: Map<string, number>;
  pools: Map<string, Array<[pool: string, other: string]>>;
}
const MAX_KEPT = 100_000;
export const poolsCache = (): PoolsCache => ({ decimals: new Map(), pools: new Map() });
/** The cache, cleared when it grew past its bound. */
export function boundedCache(c: PoolsCache): PoolsCache {
  if (c.pools.size > MAX_KEPT) c.pools.clear();
  if (c.decimals.size > MAX_KEPT) c.decimals.clear();
  return c;
}

/** A pool's two sides in USD (whole amounts times prices), if each holds at least `opts.minSideUsd`; else null. */
function sidesUsd(amount: Ratio, otherAmount: Ratio, usd: Ratio, otherUsd: Ratio, opts: PriceOptions): Ratio | null {
  const side = mul(amount, usd);
  const otherSide = mul(otherAmount, otherUsd);
  return atLeast(side, opts.minSideUsd) && atLeast(otherSide, opts.minSideUsd) ? add(side, otherSide) : null;
}

/** A reader of the chain's prices; undefined when the chain has no pricing entry. */
export function priceReader(deps: PriceDeps, chain: string, head: number): PriceReader | undefined {
  const pricing = deps.pricing?.(chain);
  return pricing === undefined ? undefined : new PriceReader(deps, chain, pricing, head);
}
