import type { Pricing } from '../../../chains/pricing.js';
import { pos } from '../../../evm/store.js';
import type { TokenMetadata } from '../../../evm/token-metadata.js';
import { V2_SWAP, V3_SWAP, V4_SWAP } from './events.js';
import { poolKey, poolRowsPrefix, type PoolRow, type SwapRow } from './keys.js';
import type { DataIndex } from '../../common/indexer.js';
import { PriceReader } from './prices.js';
import {
  bucketOf,
  candleKey,
  CURRENCIES,
  mergeRows,
  pricedPool,
  quoteValue,
  STORED_BASES,
  swapInQuote,
  tradeCandle,
  tradeOf,
  type CandlesRow,
  type PricedPool,
} from './swap-candles.js';

/**
 * Candles at ingest (docs/api.md, Prices): each swap of a registry pool, priced as GET /pairs/:address/ohlcv prices it
 * (engine/data-api/dex/index/swap-candles.ts), folded into the pool's 1 min and 1 d candles in USD and in the native token,
 * `dexCandles` (`chain/pool/currency/base/bucket` → CandleRow). Applied after the price marks, so the quote
 * token's price at the block is the one its marks of that block give; written through the IndexWriter, so a reorg
 * takes a swap's share of its candles back with the swap. Longer timeframes are sums of these at read time.
 */

/** The logs that are swaps the DEX index keeps (`dexSwaps` under the log's address; a V4 PoolManager's under the PoolId, topic1). */
const SWAPS = new Set([V2_SWAP, V3_SWAP, V4_SWAP]);

export interface CandleIndexDeps {
  tokens: TokenMetadata;
  pricing(chain: string): Pricing | undefined;
}

/** The pool as its swaps are priced, or null when a token's decimals are not stored (the ERC-20 index reads them for every token moved). */
function storedPool(tokens: TokenMetadata, reader: PriceReader, chain: string, pool: string, row: PoolRow): PricedPool | null {
  const [i0, i1] = [tokens.stored(chain, row[1]), tokens.stored(chain, row[2])];
  return i0 === undefined || i1 === undefined ? null : pricedPool(reader, chain, pool, row, [i0.decimals ?? 0, i1.decimals ?? 0]);
}

export function candleIndex(deps: CandleIndexDeps): DataIndex<void> {
  return {
    name: 'candles',
    apply(w, block) {
      const pricing = deps.pricing(block.chain);
      if (pricing === undefined || pricing.factories.length === 0) return;
      const { chain, number } = block;
      let reader: PriceReader | undefined;
      const pools = new Map<string, PricedPool | null>();
      // The block's share of each candle, folded in log order and written once.
      const shares = new Map<string, CandlesRow>();
      for (const t of block.record.txs)
        for (const l of t.logs) {
          const topic0 = l.topics[0]?.toLowerCase() ?? '';
          if (!SWAPS.has(topic0)) continue;
          // A swap row exists only for a swap the DEX index took (a V4 one from its pool's own PoolManager).
          const address = topic0 === V4_SWAP ? (l.topics[1]?.toLowerCase() ?? '') : l.address.toLowerCase();
          const logIndex = Number(l.logIndex);
          const swap = w.get<SwapRow>('dexSwaps', poolRowsPrefix(chain, address) + pos(number, logIndex));
          if (swap === undefined) continue;
          const prices = (reader ??= new PriceReader({ kv: w, tokens: deps.tokens }, chain, pricing, number));
          let p = pools.get(address);
          if (p === undefined) {
            const row = w.get<PoolRow>('dexPools', poolKey(chain, address));
            pools.set(address, (p = row === undefined ? null : storedPool(deps.tokens, prices, chain, address, row)));
          }
          if (p === null) continue;
          const s = swapInQuote(w, p, number, number, logIndex, swap);
          if (s === null) continue;
          const share = CURRENCIES.map((currency) => {
            const value = quoteValue(prices, pricing.wrappedNative, p.quote, number, currency);
            return value === null ? null : tradeCandle(tradeOf(s, value));
          });
          if (share.every((c) => c === null)) continue;
          for (const base of STORED_BASES) {
            const key = candleKey(chain, address, base, bucketOf(block.timestamp, base));
            shares.set(key, mergeRows(shares.get(key), share));
          }
        }
      for (const [key, share] of shares) w.put('dexCandles', key, mergeRows(w.get<CandlesRow>('dexCandles', key), share));
    },
  };
}
