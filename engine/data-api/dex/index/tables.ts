import type { TableDeclarations } from '../../common/tables.js';

/** The DEX index's tables (writer.ts; v4.ts for Uniswap V4 pools), the price marks (marks-writer.ts) and the candles (candle-writer.ts). */
export const dexTables = {
  dexPools: {
    keys: 'hex',
    inPlace: true,
    chainKeys: ['{chain}/'],
    rows: [
      {
        key: '`chain/p/pool`',
        value:
          "`[kind, token0, token1, factory, fee]`: `kind` `v2`, `v3` or `v4`, tokens lower case and sorted as the factory sorts them (V4: currency0 and currency1 in the key's order, the native coin as the wrapped native token, which may then sort after token1), `factory` the V4 PoolManager, `fee` the V3 fee tier or the V4 key's fee (`0x800000` a dynamic fee; null for V2)",
      },
      {
        key: '`chain/t/token/other/pool`',
        value: "0: a token's pools by the other token (the wrapped native token's pools against one stablecoin are one range)",
      },
      {
        key: '`chain/x/address`',
        value:
          "the address logged a Sync, Swap or Initialize but is no registry pool: 0 for good (its factory is none of the registry's, or disowns it), or the block from which it is asked again (its views could not be read: a node error is no answer)",
      },
    ],
  },
  dexStates: {
    keys: 'hex',
    inPlace: true,
    chainKeys: ['{chain}/'],
    rows: [
      {
        key: '`chain/pool/number (12 hex)/logIndex (6 hex)`',
        value:
          "the pool's state after the log: V2 `[reserve0, reserve1]` (each Sync: swaps, mints, burns), V3 `[sqrtPriceX96, liquidity, tick, balance0, balance1]` (each Swap and `Initialize`, where `liquidity` is null; the balances are the pool's as the ERC-20 index holds them at the end of the block), V4 `[sqrtPriceX96, liquidity, tick, reserve0, reserve1]` (each `Initialize`, liquidity 0; each Swap, its own numbers; each `ModifyLiquidity` whose `[tickLower, tickUpper)` holds the tick, liquidity + liquidityDelta; `liquidity` the active, in-range liquidity L and the reserves its virtual reserves L·2^96/sqrtPriceX96 and L·sqrtPriceX96/2^96, rounded down: the PoolManager holds every pool's tokens, so these are what the side rule and the pool's liquidity in USD weigh). A price at a block reads the last row at or before it",
      },
    ],
  },
  dexSwaps: {
    keys: 'hex',
    inPlace: true,
    chainKeys: ['{chain}/'],
    rows: [
      {
        key: '`chain/pool/number (12 hex)/logIndex (6 hex)`',
        value:
          "`[tx, ti, trader, amount0, amount1]`: the transaction's hash and index, its sender, and the pool's balance changes (positive: into the pool; V2 `amountIn − amountOut` per token; V4 the event's amounts negated, as they are the swapper's)",
      },
    ],
  },
  dexWalletSwaps: {
    keys: 'hex',
    inPlace: true,
    chainKeys: ['{chain}/'],
    rows: [
      {
        key: '`chain/trader/number (12 hex)/logIndex (6 hex)`',
        value:
          "the pool: a trader's swaps (the transaction's sender, lower case) as one range, newest first read in reverse (GET /wallets/:address/swaps); the swap itself is its `dexSwaps` row under that pool at the same place. Written in the same apply as that row, so a reorg takes both back. A store whose DEX rows were indexed before this table has none for those blocks",
      },
    ],
  },
  dexTokenSwaps: {
    keys: 'hex',
    inPlace: true,
    chainKeys: ['{chain}/'],
    rows: [
      {
        key: '`chain/token/number (12 hex)/logIndex (6 hex)`',
        value:
          "the pool: a token's swaps in every pool of it as one range, written for both tokens of the swapped pool (V2, V3 and V4 alike; a V4 pool's native coin as the wrapped native token), newest first read in reverse (GET /erc20/:address/swaps; GET /tokens/:tokenAddress/analytics reads the last day of it: its newest 100,000 entries at most, 10,000 swaps a pool; GET /tokens/:tokenAddress/score and /score/historical read 30 days back from their oldest point within the same bounds); the swap itself is its `dexSwaps` row under that pool at the same place. Written in the same apply as that row, so a reorg takes both back. A store whose DEX rows were indexed before this table has none for those blocks",
      },
    ],
  },
  priceMarks: {
    keys: 'hex',
    inPlace: true,
    chainKeys: ['{chain}/'],
    rows: [
      {
        key: '`chain/token/number (12 hex)`',
        value:
          "the token's price mark at the end of a block where one of its pools moved (a state row above, or for a V3 pool an ERC-20 transfer in or out): `[pool, other, num, den, reserve, otherReserve, decimals, otherDecimals]`, its pricing pool's price of the token in the pool's other token (exact: `num/den` per whole token, 0x), with both reserves then and both tokens' decimals; or null: from this block no pool prices the token (written only after a price). A price with the default options reads the last mark at or before its block and multiplies by the other token's price then, read the same way (a stablecoin: $1). Written by engine/data-api/dex/index/marks-writer.ts after the DEX index, through the same undo rows. A store whose DEX rows were indexed before this table has no marks for those blocks: a token's default price stays null until one of its pools moves again (past blocks: index the chain again from an empty data directory)",
      },
      {
        key: '`chain/l/token`',
        value: "`[number, mark]`: the token's last mark and its block, written with it (a price at the head is one read)",
      },
    ],
  },
  dexCandles: {
    keys: 'hex',
    inPlace: true,
    chainKeys: ['{chain}/'],
    rows: [
      {
        key: "`chain/pool/base/bucket (10 hex)` (`base` `1min` or `1d`, `bucket` the candle's start, Unix seconds)",
        value:
          "`[usd, native]`: the pool's base token's candle of the swaps in that minute or UTC day in USD and in the native token (engine/data-api/dex/index/swap-candles.ts), each `[open, high, low, close, volume, trades]` or null (no swap of it priced in that currency). Each swap is priced by the pool's state right after it, in the quote token, times the quote token's USD price by its marks at the swap's block (in the native token: over the wrapped native token's, 1 for a pool quoted in it; a swap without such a price is left out of that currency); open/close the first/last swap's price, high/low their max/min (JSON numbers), `volume` Σ \\|base amount\\| × price, exact, in 10⁻¹⁸ units of the currency (0x), `trades` the count. Both currencies in one row: two writes a swap, not four. Written by engine/data-api/dex/index/candle-writer.ts after the price marks, through the same undo rows (a reorg takes a swap's share back). GET /pairs/:address/ohlcv sums the 1 min rows for 1min…12h and the 1 d rows for 1d, 1w and 1M; 1s, 10s and 30s price the swaps again the same way. A store whose DEX rows were indexed before this table has none for those blocks",
      },
    ],
  },
} satisfies TableDeclarations;
