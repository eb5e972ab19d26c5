import { factoryOf, type Pricing } from '../chains/pricing.js';
import { pos, posAt } from '../evm/store.js';
import { blockAtOrBefore, blockTime } from './block-times.js';
import type { DataDeps } from './deps.js';
import { poolKey, poolRowsPrefix, tokenPoolsPrefix, type PoolRow, type StateRow } from './dex-index.js';
import { balanceKey } from './erc20-keys.js';
import { viewUint } from './erc20-common.js';
import { metadata } from './nft-transfers.js';

/**
 * USD prices from the pools the DEX index holds (data-api-notes.md §3.2–3.3), in exact integer math: a token's
 * price at a block is its pricing pool's marginal price after that pool's last event at or before the block (V2:
 * the reserves of its last Sync; V3: the sqrtPriceX96 of its last Swap or Initialize), times the other token's USD
 * price. The other token must route to USD: a stablecoin ($1), the wrapped native token (priced from its own
 * pricing pool against a stablecoin), or a whitelisted token (priced against a stablecoin or the wrapped native
 * token). The pricing pool: among the token's pools whose two sides each hold at least `minSideUsd`, the one with
 * the most swaps in the 24 h before the block, then the deeper one.
 */

/** A non-negative rational: exact prices, converted to decimals only when answered. */
export interface Ratio {
  num: bigint;
  den: bigint;
}

const ONE: Ratio = { num: 1n, den: 1n };
const mul = (a: Ratio, b: Ratio): Ratio => ({ num: a.num * b.num, den: a.den * b.den });
const div = (a: Ratio, b: Ratio): Ratio => ({ num: a.num * b.den, den: a.den * b.num });
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

/** What a price needs: the store, eth_call for a past V3 pool balance, token decimals, the chain's pricing entry. */
export type PriceDeps = Pick<DataDeps, 'kv' | 'tokens' | 'reads'> & { pricing(chain: string): Pricing | undefined };

export interface PriceOptions {
  /** Both sides of the pricing pool must hold at least this many USD (default 50). */
  minSideUsd: number;
  /** Only pools of factories of this exchange name (the registry's name, case-insensitive). */
  exchange?: string;
  /** Pools whose last swap is older than this many days before the block are left out. */
  maxInactivityDays?: number;
}

/** A token's price at a block and where it comes from. */
export interface PricePoint {
  usd: Ratio;
  /** The block of the pool state the price is read from (the pool's last Sync or Swap at or before the block asked). */
  block: number;
  pool: string;
  /** The factory that made the pool, and the registry's name for it. */
  factory: string;
  exchangeName: string;
  /** The pool's two sides in USD. */
  liquidityUsd: Ratio;
}

const DAY = 86_400;
/** Swaps counted per pool for its 24 h activity: past this, pools count as equally active and the deeper wins. */
const ACTIVITY_CAP = 100_000;

/** The routes a token may take to USD, by what it is. */
type Role = 'stable' | 'native' | 'whitelist' | 'other';

class PriceRun {
  private readonly decimals = new Map<string, number>();
  private readonly memo = new Map<string, Promise<PricePoint | null>>();

  constructor(
    private readonly deps: PriceDeps,
    private readonly chain: string,
    private readonly pricing: Pricing,
    private readonly head: number,
    private readonly opts: PriceOptions,
  ) {}

  role(token: string): Role {
    if (this.pricing.stablecoins.includes(token)) return 'stable';
    if (token === this.pricing.wrappedNative) return 'native';
    return this.pricing.whitelist.includes(token) ? 'whitelist' : 'other';
  }

  /** The counter tokens a token of this role may be priced against. */
  private routes(role: Role, other: string): boolean {
    const r = this.role(other);
    if (role === 'native') return r === 'stable';
    if (role === 'whitelist') return r === 'stable' || r === 'native';
    return r !== 'other';
  }

  async tokenDecimals(token: string): Promise<number> {
    let d = this.decimals.get(token);
    if (d === undefined) {
      d = (await metadata(this.deps, this.chain, token)).decimals ?? 0;
      this.decimals.set(token, d);
    }
    return d;
  }

  /** USD per whole token at `block`: $1 for a stablecoin; null when no pool prices it there. */
  async usd(token: string, block: number): Promise<Ratio | null> {
    if (this.role(token) === 'stable') return ONE;
    return (await this.point(token, block))?.usd ?? null;
  }

  point(token: string, block: number): Promise<PricePoint | null> {
    const key = `${token}/${block}`;
    let p = this.memo.get(key);
    if (p === undefined) this.memo.set(key, (p = this.compute(token, block)));
    return p;
  }

  private async compute(token: string, block: number): Promise<PricePoint | null> {
    const role = this.role(token);
    const { kv } = this.deps;
    const prefix = tokenPoolsPrefix(this.chain, token);
    const pools = kv.range<string>('dexPools', { start: prefix, end: `${prefix}\uffff` });
    const since = this.blockBefore(block, DAY);
    const idleSince = this.opts.maxInactivityDays === undefined ? undefined : this.blockBefore(block, this.opts.maxInactivityDays * DAY);
    let best: { point: PricePoint; swaps: number } | null = null;
    for (const { key, value: other } of pools) {
      if (!this.routes(role, other)) continue;
      const pool = key.slice(prefix.length);
      const row = kv.get<PoolRow>('dexPools', poolKey(this.chain, pool));
      if (row === undefined) continue;
      const factory = factoryOf(this.pricing, row[3]);
      if (factory === undefined || (this.opts.exchange !== undefined && factory.name.toLowerCase() !== this.opts.exchange.toLowerCase())) continue;
      const swaps = kv.count('dexSwaps', { start: poolRowsPrefix(this.chain, pool) + pos(since ?? 0, 0), end: poolRowsPrefix(this.chain, pool) + pos(block + 1, 0) });
      if (idleSince !== undefined && kv.count('dexSwaps', { start: poolRowsPrefix(this.chain, pool) + pos(idleSince, 0), end: poolRowsPrefix(this.chain, pool) + pos(block + 1, 0) }) === 0) continue;
      const point = await this.throughPool(token, other, pool, row, block, factory.name);
      if (point === null) continue;
      const active = Math.min(swaps, ACTIVITY_CAP);
      if (best === null || active > best.swaps || (active === best.swaps && point.liquidityUsd.num * best.point.liquidityUsd.den > best.point.liquidityUsd.num * point.liquidityUsd.den)) best = { point, swaps: active };
    }
    return best?.point ?? null;
  }

  /** The token's price through one pool at `block`, if the pool has a state there and passes the side rule. */
  private async throughPool(token: string, other: string, pool: string, row: PoolRow, block: number, exchangeName: string): Promise<PricePoint | null> {
    const prefix = poolRowsPrefix(this.chain, pool);
    const [last] = this.deps.kv.range<StateRow>('dexStates', { start: prefix + pos(block + 1, 0), end: prefix, reverse: true, limit: 1 });
    if (last === undefined) return null;
    const isToken0 = row[1] === token;
    const [d0, d1] = await Promise.all([this.tokenDecimals(row[1]), this.tokenDecimals(row[2])]);
    const state = last.value;
    // token0 in token1, whole units.
    let price0: Ratio;
    let reserves: [bigint, bigint];
    if (row[0] === 'v2') {
      reserves = [BigInt(state[0]), BigInt(state[1] as string)];
      if (reserves[0] === 0n || reserves[1] === 0n) return null;
      price0 = { num: reserves[1] * pow10(d0), den: reserves[0] * pow10(d1) };
    } else {
      const sqrt = BigInt(state[0]);
      if (sqrt === 0n) return null;
      price0 = { num: sqrt * sqrt * pow10(d0), den: Q192 * pow10(d1) };
      reserves = await this.poolBalances(pool, row, block);
    }
    const inOther = isToken0 ? price0 : div(ONE, price0);
    const otherUsd = await this.usd(other, block);
    if (otherUsd === null) return null;
    const usd = mul(inOther, otherUsd);
    const [tokenReserve, otherReserve] = isToken0 ? reserves : [reserves[1], reserves[0]];
    const tokenSide = mul(whole(tokenReserve, isToken0 ? d0 : d1), usd);
    const otherSide = mul(whole(otherReserve, isToken0 ? d1 : d0), otherUsd);
    if (!atLeast(tokenSide, this.opts.minSideUsd) || !atLeast(otherSide, this.opts.minSideUsd)) return null;
    const liquidityUsd = { num: tokenSide.num * otherSide.den + otherSide.num * tokenSide.den, den: tokenSide.den * otherSide.den };
    return { usd, block: posAt(last.key).blockNumber, pool, factory: row[3], exchangeName, liquidityUsd };
  }

  /** A V3 pool's token balances (its reserves): the index's at the head, balanceOf before it. */
  private async poolBalances(pool: string, row: PoolRow, block: number): Promise<[bigint, bigint]> {
    const one = async (token: string): Promise<bigint> => {
      if (block >= this.head) return BigInt(this.deps.kv.get<string>('erc20Balances', balanceKey(this.chain, pool, token)) ?? '0x0');
      return (await viewUint(this.deps, this.chain, token, block, 'balanceOf', [pool])) ?? 0n;
    };
    return Promise.all([one(row[1]), one(row[2])]);
  }

  /** The last indexed block at least `seconds` before `block`; undefined when the indexes hold none that old. */
  blockBefore(block: number, seconds: number): number | undefined {
    const t = blockTime(this.deps.kv, this.chain, block);
    return t === undefined ? undefined : blockAtOrBefore(this.deps.kv, this.chain, t - seconds);
  }
}

/** A token's USD price at `block` (at most the indexed `head`), and 24 h before; null when no pool prices it. */
export async function priceAt(deps: PriceDeps, chain: string, token: string, block: number, head: number, opts: PriceOptions): Promise<{ now: PricePoint; dayAgo: PricePoint | null; nativeUsd: Ratio | null } | null> {
  const pricing = deps.pricing(chain);
  if (pricing === undefined) return null;
  const run = new PriceRun(deps, chain, pricing, head, opts);
  const at = (b: number): Promise<PricePoint | null> => (run.role(token) === 'stable' ? stablePoint(run, token, b) : run.point(token, b));
  const now = await at(block);
  if (now === null) return null;
  const before = run.blockBefore(block, DAY);
  const dayAgo = before === undefined ? null : await at(before);
  return { now, dayAgo, nativeUsd: await run.usd(pricing.wrappedNative, block) };
}

/** A stablecoin is $1; its pool and exchange are those its price would have without that rule. */
async function stablePoint(run: PriceRun, token: string, block: number): Promise<PricePoint | null> {
  const p = await run.point(token, block);
  return p === null ? null : { ...p, usd: ONE };
}

