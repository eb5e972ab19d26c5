import { rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import type { Pricing } from '../../../../../../engine/chains/pricing.js';
import { V2_SYNC } from '../../../../../../engine/data-api/dex/index/events.js';
import { poolKey, poolRowsPrefix, tokenPoolsPrefix, type PoolRow } from '../../../../../../engine/data-api/dex/index/keys.js';
import { hex } from '../../../../../../engine/data-api/erc20/index/keys.js';
import { IndexWriter, type IndexedBlock } from '../../../../../../engine/data-api/common/indexer.js';
import { priceMarksIndex } from '../../../../../../engine/data-api/dex/index/marks-writer.js';
import { decimal, PriceReader, type PriceOptions } from '../../../../../../engine/data-api/dex/index/prices.js';
import { blockKey } from '../../../../../../engine/ingest/chain-store.js';
import { pos } from '../../../../../../engine/evm/store.js';
import { TokenMetadata } from '../../../../../../engine/evm/token-metadata.js';
import { openStore } from '../../../../../../storage/env.js';
import { tempDir } from '../../../../../helpers.js';

/**
 * Price marks against prices computed from the pools at the block (the same reader with `exchange` set, which
 * never reads marks), on real LMDB: a mark keeps a pool's price in its other token and applies the other token's
 * price and the $50 side rule when read, so the order pools are funded in and a later move of ether agree with the
 * computed price. V2 states are written directly; the marks index applies each block as the indexer would.
 */

const CHAIN = '0x539';
const WETH = `0x${'e'.repeat(40)}`;
const USDC = `0x${'c'.repeat(40)}`;
const TKA = `0x${'a'.repeat(40)}`;
const FACTORY = `0x${'f'.repeat(40)}`;
const WETH_USDC = `0x${'1'.repeat(40)}`;
const TKA_WETH = `0x${'2'.repeat(40)}`;
const TKA_USDC = `0x${'3'.repeat(40)}`;
const pricing: Pricing = {
  wrappedNative: WETH,
  stablecoins: [USDC],
  whitelist: [],
  factories: [{ address: FACTORY, kind: 'v2', name: 'MiniSwap' }],
};
const TKC = `0x${'b'.repeat(40)}`;
const DECIMALS: Record<string, number> = { [WETH]: 18, [USDC]: 6, [TKA]: 18, [TKC]: 18 };
const BY_MARKS: PriceOptions = { minSideUsd: 50 };
const FROM_POOLS: PriceOptions = { minSideUsd: 50, exchange: 'MiniSwap' };

const dir = tempDir();
const store = openStore(dir);
const tokens = new TokenMetadata(store, async () => null);
const marks = priceMarksIndex({ tokens, pricing: () => pricing });
afterAll(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A pool's rows as the DEX index writes them. */
function makePool(pool: string, a: string, b: string): void {
  const [t0, t1] = a < b ? [a, b] : [b, a];
  store.put('dexPools', poolKey(CHAIN, pool), ['v2', t0, t1, FACTORY, null] satisfies PoolRow);
  store.put('dexPools', `${tokenPoolsPrefix(CHAIN, t0, t1)}${pool}`, 0);
  store.put('dexPools', `${tokenPoolsPrefix(CHAIN, t1, t0)}${pool}`, 0);
}
store.transact(() => {
  for (const [t, d] of Object.entries(DECIMALS))
    store.put('tokens', `${CHAIN}/${t}`, { name: t, symbol: t, decimals: d, nftStandard: '', possibleSpam: false });
  makePool(WETH_USDC, WETH, USDC);
  makePool(TKA_WETH, TKA, WETH);
});

/** Block `n` (12 s apart) where `pool`'s Sync leaves these whole reserves (by token), marked as the indexer would. */
function sync(n: number, moves: Array<[pool: string, reserves: Record<string, bigint>]>): void {
  const block: IndexedBlock = {
    chain: CHAIN,
    number: n,
    hash: `0x${n.toString(16)}`,
    timestamp: 1_000 + 12 * n,
    transfers: [],
    record: {
      header: { timestamp: 1_000 + 12 * n },
      txs: [
        {
          tx: { hash: '0x00', from: '0x00' },
          logs: moves.map(([pool], i) => ({ address: pool, topics: [V2_SYNC], data: '0x', logIndex: i })),
        },
      ],
    } as never,
  };
  store.transact(() => {
    store.put('blockTimes', blockKey(CHAIN, n), [block.timestamp, block.hash]);
    for (const [pool, reserves] of moves) {
      const [, t0, t1] = store.get<PoolRow>('dexPools', poolKey(CHAIN, pool))!;
      store.put('dexStates', poolRowsPrefix(CHAIN, pool) + pos(n, 0), [
        hex(reserves[t0]! * 10n ** BigInt(DECIMALS[t0]!)),
        hex(reserves[t1]! * 10n ** BigInt(DECIMALS[t1]!)),
      ]);
    }
    marks.apply(new IndexWriter(store, null), block, undefined);
  });
}

/** TKA's USD price at `block` to 9 decimals, by marks and from the pools; null when none. */
async function tka(block: number, token = TKA): Promise<{ byMarks: string | null; fromPools: string | null }> {
  const at = async (opts: PriceOptions) => {
    const p = await new PriceReader({ kv: store, tokens, pricing: () => pricing }, CHAIN, pricing, block).price(token, block, opts);
    return p === null ? null : decimal(p.now.usd, 9);
  };
  return { byMarks: await at(BY_MARKS), fromPools: await at(FROM_POOLS) };
}

describe('price marks', () => {
  it('price a token whose pair moved before ether had a price, once ether has one', async () => {
    // Block 1: TKA/WETH funded, 10,000 TKA : 10 WETH; ether has no pool yet.
    sync(1, [[TKA_WETH, { [TKA]: 10_000n, [WETH]: 10n }]]);
    expect(await tka(1)).toEqual({ byMarks: null, fromPools: null });
    // Block 2: WETH/USDC funded, $2,000 an ether; TKA's pair does not move.
    sync(2, [[WETH_USDC, { [WETH]: 1_000n, [USDC]: 2_000_000n }]]);
    expect(await tka(2)).toEqual({ byMarks: '2', fromPools: '2' });
  });

  it('apply the $50 side rule when read: ether falling under it takes the price away', async () => {
    // Block 3: ether at $1; TKA/WETH's ether side is $10.
    sync(3, [[WETH_USDC, { [WETH]: 1_000n, [USDC]: 1_000n }]]);
    expect(await tka(3)).toEqual({ byMarks: null, fromPools: null });
    // Block 4: ether back at $100 ($1,000 a side): priced again, without TKA's pair moving.
    sync(4, [[WETH_USDC, { [WETH]: 1_000n, [USDC]: 100_000n }]]);
    expect(await tka(4)).toEqual({ byMarks: '0.1', fromPools: '0.1' });
    // Before: as it stood then.
    expect((await tka(2)).byMarks).toBe('2');
  });

  it("weigh a pool made after the index first read the token's pools, once it moves", async () => {
    // Block 5: TKA/USDC made and funded deep, 100,000 TKA : 50,000 USDC ($0.5); no swaps anywhere, so the deeper wins.
    store.transact(() => makePool(TKA_USDC, TKA, USDC));
    sync(5, [[TKA_USDC, { [TKA]: 100_000n, [USDC]: 50_000n }]]);
    expect(await tka(5)).toEqual({ byMarks: '0.5', fromPools: '0.5' });
  });

  it('value a stablecoin without a passing pool at nothing, while prices still route through it at $1', () => {
    const DAI = `0x${'d'.repeat(40)}`;
    const twoStables: Pricing = { ...pricing, stablecoins: [USDC, DAI] };
    const reader = new PriceReader({ kv: store, tokens, pricing: () => twoStables }, CHAIN, twoStables, 5);
    expect(reader.usd(DAI, 5)).toEqual({ num: 1n, den: 1n });
    expect(reader.valueUsd(DAI, 5)).toBeNull();
    // USDC has WETH/USDC, each side over $50 at block 5: $1.
    expect(reader.valueUsd(USDC, 5)).toEqual({ num: 1n, den: 1n });
    // Any other token: as its price.
    expect(decimal(reader.valueUsd(TKA, 5)!, 9)).toBe('0.5');
  });

  it('take the busiest of three pools, wherever it comes in their order', async () => {
    // Three TKC/USDC pools in key order A, B, C with 5, 100 and 50 swaps in the day before: B prices TKC ($2).
    const [a, b, c] = [`0x${'4'.repeat(40)}`, `0x${'5'.repeat(40)}`, `0x${'6'.repeat(40)}`];
    store.transact(() => {
      for (const [pool, n] of [
        [a, 5],
        [b, 100],
        [c, 50],
      ] as const) {
        makePool(pool, TKC, USDC);
        for (let i = 0; i < n; i++) store.put('dexSwaps', poolRowsPrefix(CHAIN, pool) + pos(6, i), ['0x00', 0, '0x00', '1', '-1']);
      }
    });
    sync(7, [
      [a, { [TKC]: 1_000n, [USDC]: 1_000n }],
      [b, { [TKC]: 1_000n, [USDC]: 2_000n }],
      [c, { [TKC]: 1_000n, [USDC]: 3_000n }],
    ]);
    expect(await tka(7, TKC)).toEqual({ byMarks: '2', fromPools: '2' });
  });

  it('keep the last mark of each token under chain/l/token', () => {
    expect(store.get('priceMarks', `${CHAIN}/l/${TKA}`)).toEqual([
      5,
      store.get('priceMarks', `${CHAIN}/${TKA}/${(5).toString(16).padStart(12, '0')}`),
    ]);
    expect(store.get<[number, unknown]>('priceMarks', `${CHAIN}/l/${WETH}`)![0]).toBe(4);
  });
});
