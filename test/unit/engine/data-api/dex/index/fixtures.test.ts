import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURE_BLOCKS, bundle } from '../../../../../kit/fixtures.js';
import { PRICING } from '../../../../../../engine/chains/pricing.js';
import { ServiceClock } from '../../../../../../engine/clock.js';
import { V2_SWAP, V2_SYNC, V3_SWAP } from '../../../../../../engine/data-api/dex/index/events.js';
import {
  poolKey,
  poolRowsPrefix,
  tokenPoolsPrefix,
  type PoolRow,
  type StateRow,
  type SwapRow,
} from '../../../../../../engine/data-api/dex/index/keys.js';
import { DataIndexer, IndexWriter, indexedBlock } from '../../../../../../engine/data-api/common/indexer.js';
import { dataIndexes } from '../../../../../../engine/data-api/indexes.js';
import { poolAt, type MarkRow } from '../../../../../../engine/data-api/dex/index/prices.js';
import { normalizeBlock } from '../../../../../../engine/evm/record.js';
import { pos, writeBlock } from '../../../../../../engine/evm/store.js';
import { TokenMetadata } from '../../../../../../engine/evm/token-metadata.js';
import { openStore, type Store } from '../../../../../../storage/env.js';
import { tempDir } from '../../../../../helpers.js';
import { noNode } from '../../../../../kit/no-node.js';
import { quietLog } from '../../../../../kit/quiet-log.js';

/**
 * The DEX index over the real mainnet blocks of test/fixtures (chainstorage bundles): every Uniswap V2 Sync/Swap
 * and V3 Swap logged there, decoded by hand here from the receipts' words, against what the index stores and what
 * poolAt() reads back. No mainnet node runs here to say which factory made each pool, so the emitters of those logs
 * are entered as pools of the registry's Uniswap factories before the blocks are indexed; the prices are raw
 * (token1 units per token0 unit), which need no token decimals: the formula applied to each pool's own last
 * Sync (V2: reserve1 / reserve0) or Swap (V3: sqrtPriceX96² / 2^192).
 */

const CHAIN = '0x1';
type Json = Record<string, any>;

interface Seen {
  block: number;
  logIndex: number;
  words: bigint[];
  topics: string[];
}
const syncs = new Map<string, Seen[]>();
const v2Swaps = new Map<string, Seen[]>();
const v3Swaps = new Map<string, Seen[]>();
const push = (m: Map<string, Seen[]>, k: string, v: Seen): void => void m.set(k, [...(m.get(k) ?? []), v]);
const TRANSFER = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';
/** Each address's ERC-20 contracts that moved in or out of it in the blocks: a pool's two tokens. */
const moved = new Map<string, Set<string>>();
/** Decimals entered for the tokens (the registry's as they are; the others 18: a placeholder the checks use too). */
const DECIMALS: Record<string, number> = {
  '0xc02aaa39b223fe8d0a0e5c4f27ead9083c756cc2': 18,
  '0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48': 6,
  '0xdac17f958d2ee523a2206206994597c13d831ec7': 6,
  '0x6b175474e89094c44da98b954eedeac495271d0f': 18,
  '0x2260fac5e5542a773aa44fbcfedf7c193bc2c599': 8,
};
const decimalsOf = (token: string): number => DECIMALS[token] ?? 18;
/** The pool's tokens, sorted as factories sort them, when exactly two moved through it. */
const tokensOf = (pool: string): [string, string] | undefined => {
  const t = [...(moved.get(pool) ?? [])].sort();
  return t.length === 2 ? (t as [string, string]) : undefined;
};
const wordsOf = (data: string): bigint[] =>
  Array.from({ length: (data.length - 2) / 64 }, (_, i) => BigInt(`0x${data.slice(2 + 64 * i, 66 + 64 * i)}`));

let dir: string;
let store: Store;

beforeAll(async () => {
  dir = tempDir();
  store = openStore(dir);
  const clock = new ServiceClock({ elapsedMs: () => 0, wake: () => () => {} }, Date.parse('2026-11-24T00:00:00Z'));
  const mainnet = PRICING.get(CHAIN)!;
  const indexes = dataIndexes({
    reads: noNode,
    tokens: new TokenMetadata(store, noNode.call),
    pricing: (c) => (c === CHAIN ? mainnet : undefined),
  });
  new DataIndexer(
    store,
    indexes,
    clock,
    quietLog(() => clock.now()),
  );
  const [v2Factory, v3Factory] = [mainnet.factories.find((f) => f.kind === 'v2')!, mainnet.factories.find((f) => f.kind === 'v3')!];
  const bundles = FIXTURE_BLOCKS.map((n) => bundle(n));
  for (const b of bundles)
    for (const r of b.receipts as Json[])
      for (const l of r['logs'] as Json[]) {
        const topics = (l['topics'] as string[]).map((t) => t.toLowerCase());
        const seen: Seen = { block: b.number, logIndex: Number(l['logIndex']), words: wordsOf(String(l['data'])), topics };
        const address = String(l['address']).toLowerCase();
        if (topics[0] === TRANSFER && topics.length === 3)
          for (const party of [topics[1]!, topics[2]!].map((t) => `0x${t.slice(26)}`))
            moved.set(party, (moved.get(party) ?? new Set()).add(address));
        if (topics[0] === V2_SYNC && topics.length === 1 && seen.words.length === 2) push(syncs, address, seen);
        if (topics[0] === V2_SWAP && topics.length === 3 && seen.words.length === 4) push(v2Swaps, address, seen);
        if (topics[0] === V3_SWAP && topics.length === 3 && seen.words.length === 5) push(v3Swaps, address, seen);
      }
  // The emitters as pools, with the two tokens that moved through each (two placeholders where that is not clear:
  // raw prices need no tokens), and the tokens' decimals.
  store.transact(() => {
    const enter = (pool: string, kind: 'v2' | 'v3'): void => {
      const [t0, t1] = tokensOf(pool) ?? ['0x01', '0x02'];
      store.put('dexPools', poolKey(CHAIN, pool), [
        kind,
        t0,
        t1,
        (kind === 'v2' ? v2Factory : v3Factory).address,
        kind === 'v2' ? null : 3000,
      ] satisfies PoolRow);
      store.put('dexPools', `${tokenPoolsPrefix(CHAIN, t0, t1)}${pool}`, 0);
      store.put('dexPools', `${tokenPoolsPrefix(CHAIN, t1, t0)}${pool}`, 0);
      for (const t of [t0, t1])
        store.put('tokens', `${CHAIN}/${t}`, { name: t, symbol: t, decimals: decimalsOf(t), nftStandard: '', possibleSpam: false });
    };
    for (const a of new Set([...syncs.keys(), ...v2Swaps.keys()])) enter(a, 'v2');
    for (const a of v3Swaps.keys()) enter(a, 'v3');
  });
  for (const b of bundles) {
    const record = normalizeBlock(b.block, b.receipts, b.traces);
    const block = indexedBlock(CHAIN, b.number, String(b.block['hash']), record);
    const prepared = await Promise.all(indexes.map((index) => index.prepare?.([block], store)));
    store.transact(() => {
      writeBlock(store, CHAIN, record);
      const w = new IndexWriter(store, null);
      indexes.forEach((index, i) => index.apply(w, block, prepared[i]));
    });
  }
}, 60_000);

afterAll(async () => {
  await store?.close();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe('the DEX index over real mainnet blocks', () => {
  it('holds Uniswap V2 and V3 swaps in those blocks', () => {
    expect(syncs.size).toBeGreaterThan(5);
    expect([...v2Swaps.values()].flat().length).toBeGreaterThan(5);
    expect([...v3Swaps.values()].flat().length).toBeGreaterThan(5);
  });

  it('reads each V2 pair at each block as its last Sync there says: reserves, and reserve1 / reserve0', () => {
    let checked = 0;
    for (const [pair, list] of syncs)
      for (const n of new Set(list.map((s) => s.block))) {
        const last = list.filter((s) => s.block === n).at(-1)!;
        const row = store.get<PoolRow>('dexPools', poolKey(CHAIN, pair))!;
        const at = poolAt(store, CHAIN, pair, row, n, n, 0, 0);
        const [r0, r1] = last.words as [bigint, bigint];
        if (r0 === 0n || r1 === 0n) {
          expect(at).toBeNull();
          continue;
        }
        expect(at!.reserves, `${pair} at ${n}`).toEqual([r0, r1]);
        expect(at!.price0.num * r0).toBe(at!.price0.den * r1);
        checked++;
      }
    expect(checked).toBeGreaterThan(5);
  });

  it('reads each V3 pool at each block as its last Swap there says: sqrtPriceX96² / 2^192', () => {
    let checked = 0;
    for (const [pool, list] of v3Swaps)
      for (const n of new Set(list.map((s) => s.block))) {
        const sqrt = list.filter((s) => s.block === n).at(-1)!.words[2]!;
        const row = store.get<PoolRow>('dexPools', poolKey(CHAIN, pool))!;
        // Before the head, the balances the state row kept (none here: no ERC-20 balances for these pools).
        const at = poolAt(store, CHAIN, pool, row, n, Number.MAX_SAFE_INTEGER, 0, 0);
        expect(at!.price0.num * (1n << 192n), `${pool} at ${n}`).toBe(at!.price0.den * sqrt * sqrt);
        checked++;
      }
    expect(checked).toBeGreaterThan(5);
  });

  it("reads a pool right after each of its swaps (the candles' price): V2 the Sync before the Swap, V3 the Swap's own price", () => {
    let several = 0;
    for (const [pair, list] of v2Swaps) {
      const row = store.get<PoolRow>('dexPools', poolKey(CHAIN, pair))!;
      for (const swap of list) {
        const sync = (syncs.get(pair) ?? []).filter((x) => x.block === swap.block && x.logIndex < swap.logIndex).at(-1)!;
        const at = poolAt(store, CHAIN, pair, row, swap.block, swap.block, 0, 0, swap.logIndex);
        const [r0, r1] = sync.words as [bigint, bigint];
        expect(at?.reserves ?? null, `${pair} at ${swap.block}/${swap.logIndex}`).toEqual(r0 === 0n || r1 === 0n ? null : [r0, r1]);
      }
      if (new Set(list.map((x) => x.block)).size < list.length) several++;
    }
    for (const [pool, list] of v3Swaps) {
      const row = store.get<PoolRow>('dexPools', poolKey(CHAIN, pool))!;
      for (const swap of list) {
        const sqrt = swap.words[2]!;
        const at = poolAt(store, CHAIN, pool, row, swap.block, Number.MAX_SAFE_INTEGER, 0, 0, swap.logIndex)!;
        expect(at.price0.num * (1n << 192n), `${pool} at ${swap.block}/${swap.logIndex}`).toBe(at.price0.den * sqrt * sqrt);
        // Before the head, a V3 pool's reserves are the balances its state row kept (the ERC-20 index's then).
        const state = store.get<StateRow>('dexStates', poolRowsPrefix(CHAIN, pool) + pos(swap.block, swap.logIndex))!;
        expect(at.reserves).toEqual([BigInt(state[3]!), BigInt(state[4]!)]);
      }
      if (new Set(list.map((x) => x.block)).size < list.length) several++;
    }
    // The fixtures hold pools that swapped more than once in one block: the per-swap reads are told apart.
    expect(several).toBeGreaterThan(0);
  });

  it("keeps every swap with the pool's balance changes: V2 in − out, V3 the signed amounts", () => {
    const stored = (pool: string): Array<[string, SwapRow]> =>
      store
        .range<SwapRow>('dexSwaps', { start: poolRowsPrefix(CHAIN, pool), end: `${poolRowsPrefix(CHAIN, pool)}\uffff` })
        .map((e) => [e.key, e.value]);
    for (const [pair, list] of v2Swaps)
      expect(stored(pair).map(([k, v]) => [k, v[3], v[4]])).toEqual(
        list.map((s) => [
          poolRowsPrefix(CHAIN, pair) + pos(s.block, s.logIndex),
          (s.words[0]! - s.words[2]!).toString(),
          (s.words[1]! - s.words[3]!).toString(),
        ]),
      );
    for (const [pool, list] of v3Swaps)
      expect(stored(pool).map(([k, v]) => [k, v[3], v[4]])).toEqual(
        list.map((s) => [
          poolRowsPrefix(CHAIN, pool) + pos(s.block, s.logIndex),
          BigInt.asIntN(256, s.words[0]!).toString(),
          BigInt.asIntN(256, s.words[1]!).toString(),
        ]),
      );
  });
});

describe('price marks over real mainnet blocks', () => {
  /** Every mark by (token, block); the `chain/l/token` rows (each token's last) aside. */
  const marks = (): Array<{ token: string; block: number; mark: MarkRow }> =>
    store.range<MarkRow>('priceMarks', { start: `${CHAIN}/`, end: `${CHAIN}/\uffff` }).flatMap(({ key, value }) => {
      const [, token, block] = key.split('/') as [string, string, string];
      return token === 'l' ? [] : [{ token, block: parseInt(block, 16), mark: value }];
    });

  it("marks each token at a block where its pools moved with the formula applied to its pricing pool's own Sync or Swap", () => {
    const mainnet = PRICING.get(CHAIN)!;
    let v2 = 0;
    let v3 = 0;
    for (const { token, block, mark } of marks()) {
      if (mark === null) continue;
      const [pool, other, num, den, reserve, otherReserve, d, otherD] = mark;
      const row = store.get<PoolRow>('dexPools', poolKey(CHAIN, pool))!;
      expect([row[1], row[2]].sort()).toEqual([token, other].sort());
      // The other side routes to USD: a stablecoin, the wrapped native token or a whitelisted one.
      expect([...mainnet.stablecoins, mainnet.wrappedNative, ...mainnet.whitelist]).toContain(other);
      expect([d, otherD]).toEqual([decimalsOf(token), decimalsOf(other)]);
      const isToken0 = row[1] === token;
      const [d0, d1] = isToken0 ? [d, otherD] : [otherD, d];
      // The price of token0 in token1, whole units, from the pool's last event at or before the block.
      let p0: { num: bigint; den: bigint };
      if (row[0] === 'v2') {
        const sync = syncs
          .get(pool)!
          .filter((x) => x.block <= block)
          .at(-1)!;
        const [r0, r1] = sync.words as [bigint, bigint];
        p0 = { num: r1 * 10n ** BigInt(d0), den: r0 * 10n ** BigInt(d1) };
        expect([BigInt(reserve), BigInt(otherReserve)]).toEqual(isToken0 ? [r0, r1] : [r1, r0]);
        v2++;
      } else {
        const sqrt = v3Swaps
          .get(pool)!
          .filter((x) => x.block <= block)
          .at(-1)!.words[2]!;
        p0 = { num: sqrt * sqrt * 10n ** BigInt(d0), den: (1n << 192n) * 10n ** BigInt(d1) };
        v3++;
      }
      const inOther = isToken0 ? p0 : { num: p0.den, den: p0.num };
      expect(BigInt(num) * inOther.den, `${token} at ${block} through ${pool}`).toBe(BigInt(den) * inOther.num);
    }
    console.log(`price marks checked: ${v2} through V2 pairs, ${v3} through V3 pools`);
    expect(v2 + v3).toBeGreaterThan(5);
  });

  it('marks the wrapped native token from a pool against a stablecoin, at each fixture block where one moved', () => {
    const mainnet = PRICING.get(CHAIN)!;
    const weth = marks().filter((m) => m.token === mainnet.wrappedNative && m.mark !== null);
    for (const m of weth) expect(mainnet.stablecoins).toContain(m.mark![1]);
    // Each block where a WETH/stablecoin V2 pair's Sync left both reserves above zero (deep pairs, far above $50 a
    // side) has a WETH mark; every WETH mark is at a block where a WETH/stablecoin pool, V2 or V3, moved.
    const anchorPool = (pool: string): boolean => {
      const tokens = tokensOf(pool);
      return tokens !== undefined && tokens.includes(mainnet.wrappedNative) && tokens.some((t) => mainnet.stablecoins.includes(t));
    };
    const v2Moved = new Set(
      [...syncs]
        .filter(([pair]) => anchorPool(pair))
        .flatMap(([, list]) => list.filter((x) => x.words[0]! > 0n && x.words[1]! > 0n).map((x) => x.block)),
    );
    const anyMoved = new Set([
      ...v2Moved,
      ...[...v3Swaps].filter(([pool]) => anchorPool(pool)).flatMap(([, list]) => list.map((x) => x.block)),
    ]);
    const marked = new Set(weth.map((m) => m.block));
    expect(v2Moved.size).toBeGreaterThan(0);
    for (const n of v2Moved) expect(marked.has(n), `a WETH mark at ${n}`).toBe(true);
    for (const n of marked) expect(anyMoved.has(n), `a WETH/stablecoin pool moved at ${n}`).toBe(true);
  });

  it("keeps each token's last mark under chain/l/token", () => {
    const last = new Map<string, { block: number; mark: MarkRow }>();
    for (const m of marks()) last.set(m.token, m);
    expect(last.size).toBeGreaterThan(5);
    for (const [token, m] of last) expect(store.get('priceMarks', `${CHAIN}/l/${token}`), token).toEqual([m.block, m.mark]);
  });
});
