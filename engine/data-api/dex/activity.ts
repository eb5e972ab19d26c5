import { z } from 'zod';
import { pos, posAt } from '../../evm/store.js';
import { blockTime } from '../common/block-times.js';
import { newestFirst } from '../common/newest-first.js';
import type { DataDeps } from '../common/deps.js';
import { poolRowsPrefix, type SwapRow } from './index/keys.js';
import { LAST_LOG, mul, toNumber, type Ratio } from './index/prices.js';

/**
 * Swap activity by window, one piece of code for every answer that counts it (GET /tokens/:tokenAddress/analytics and
 * its POST form, GET /pairs/:address/stats, GET /tokens/trending): buys and sells, their USD volumes, distinct buyers
 * and sellers over windows of block time back from the indexed head. A buy takes the token out of a pool (the
 * pool's balance of it falls), a sell puts it in; a trader is the swap's transaction sender.
 */

/** A swap of a token as a tally counts it: its block time, the pool's balance change of the token (signed, positive into the pool), its trader. */
export interface TokenSwap {
  time: number;
  delta: bigint;
  trader: string;
}

/** Windows by name, each its length in seconds back from the head's block time. */
export type Windows<K extends string> = ReadonlyArray<readonly [K, number]>;
export type Windowed<K extends string, V = number> = Record<K, V>;

/** An object of one figure per name (a window's, a sub-score's), each `value`. */
export const keyed = <K extends string, V extends z.ZodType>(names: readonly K[], value: V) =>
  z.object(Object.fromEntries(names.map((name) => [name, value])) as Record<K, V>);

/** One figure per window. */
export const perWindow = <K extends string, V>(windows: Windows<K>, f: (name: K, seconds: number, i: number) => V): Windowed<K, V> =>
  Object.fromEntries(windows.map(([name, seconds], i) => [name, f(name, seconds, i)])) as Windowed<K, V>;

export interface Tally<K extends string> {
  buys: Windowed<K>;
  sells: Windowed<K>;
  buyVolume: Windowed<K>;
  sellVolume: Windowed<K>;
  buyers: Windowed<K>;
  sellers: Windowed<K>;
}

/**
 * The swaps counted per window back from `now` (a swap at `now − seconds` or later is in the window); the volumes
 * each swap's amount as `usdOf` values it (the raw amount, positive), summed in the order read.
 */
export function tally<K extends string>(
  windows: Windows<K>,
  now: number,
  swaps: Iterable<TokenSwap>,
  usdOf: (raw: bigint) => number,
): Tally<K> {
  const zero = (): Windowed<K> => perWindow(windows, () => 0);
  const t = { buys: zero(), sells: zero(), buyVolume: zero(), sellVolume: zero() };
  const buyers = windows.map(() => new Set<string>());
  const sellers = windows.map(() => new Set<string>());
  for (const { time, delta, trader } of swaps) {
    const bought = delta < 0n;
    const usd = usdOf(bought ? -delta : delta);
    windows.forEach(([name, seconds], i) => {
      if (time < now - seconds) return;
      if (bought) {
        t.buys[name]++;
        t.buyVolume[name] += usd;
        buyers[i]!.add(trader);
      } else {
        t.sells[name]++;
        t.sellVolume[name] += usd;
        sellers[i]!.add(trader);
      }
    });
  }
  return { ...t, buyers: perWindow(windows, (_, __, i) => buyers[i]!.size), sellers: perWindow(windows, (_, __, i) => sellers[i]!.size) };
}

/** A raw amount of a token of `decimals` at a USD price, as a number (0 without a price: the analytics' volumes). */
export const usdNumber =
  (decimals: number, usd: Ratio | null) =>
  (raw: bigint): number =>
    usd === null ? 0 : toNumber(mul({ num: raw, den: 10n ** BigInt(decimals) }, usd));

/** The percent change from `then` to `now`; null without either, or from 0. */
export const percentChange = (now: number | null, then: number | null): number | null =>
  now === null || then === null || then === 0 ? null : (100 * (now - then)) / then;

/** Block times read once per request. */
export function blockTimes(deps: Pick<DataDeps, 'kv'>, chain: string): (block: number) => number | undefined {
  const times = new Map<number, number | undefined>();
  return (block) => (times.has(block) ? times.get(block) : times.set(block, blockTime(deps.kv, chain, block)).get(block));
}

/**
 * One pool's swaps at or before block `head`, newest first, back to block time `since`, as swaps of its token0
 * (`isToken0`) or token1: `max` at most.
 */
export function* poolSwapsSince(
  deps: Pick<DataDeps, 'kv'>,
  chain: string,
  pool: string,
  isToken0: boolean,
  head: number,
  since: number,
  max: number,
): Generator<TokenSwap> {
  const timeOf = blockTimes(deps, chain);
  const prefix = poolRowsPrefix(chain, pool);
  let read = 0;
  for (const { key, value } of newestFirst<SwapRow>(deps.kv, 'dexSwaps', prefix + pos(head, LAST_LOG), prefix)) {
    if (read++ === max) return;
    const time = timeOf(posAt(key).blockNumber);
    if (time === undefined || time < since) return;
    yield { time, delta: BigInt(isToken0 ? value[3] : value[4]), trader: value[2] };
  }
}
