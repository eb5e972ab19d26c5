import { z } from 'zod';
import { offChain } from '../data-api/common/answer-parts.js';

/**
 * The answers of profit and loss under the Data API's names (engine/crosschain/pnl.ts builds them; its routes in
 * http/server/data-prices.ts hold the builders to these types): USD amounts and token amounts as decimal strings,
 * percentages as numbers, as the hosted service's reference has them.
 */

/** What a v2.2 profitability row and a top-gainers row share (WalletProfitabilityTokenData, TopProfitableWalletPerTokenResponse). */
const figures = z.object({
  avg_buy_price_usd: z.string(),
  avg_sell_price_usd: z.string(),
  total_usd_invested: z.string(),
  total_tokens_sold: z.string(),
  total_tokens_bought: z.string(),
  total_sold_usd: z.string(),
  avg_cost_of_quantity_sold: z.string(),
  count_of_trades: z.number().int(),
  realized_profit_usd: z.string(),
  realized_profit_percentage: z.number().meta({ description: 'Of the cost of the tokens sold' }),
});

/** GET /api/v2.2/wallets/:address/profitability: most realized profit first. */
export const profitabilityAnswer = z.object({
  result: z.array(
    figures.extend({
      token_address: z.string(),
      total_buys: z.number().int(),
      total_sells: z.number().int(),
      name: z.string(),
      symbol: z.string(),
      decimals: z.string(),
      logo: offChain,
      possible_spam: z.boolean(),
    }),
  ),
});

/** GET /api/v2.2/wallets/:address/profitability/summary. */
export const profitabilitySummaryAnswer = z.object({
  total_count_of_trades: z.number().int(),
  total_trade_volume: z.string(),
  total_realized_profit_usd: z.string(),
  total_realized_profit_percentage: z.number(),
  total_buys: z.number().int(),
  total_sells: z.number().int(),
  total_sold_volume_usd: z.string(),
  total_bought_volume_usd: z.string(),
});

/** GET /api/v2.2/erc20/:address/top-gainers: the token, and the wallets whose trades of it realized a profit, most first. */
export const topGainersAnswer = z.object({
  name: z.string(),
  symbol: z.string(),
  decimals: z.number().int(),
  logo: offChain,
  possible_spam: z.boolean(),
  result: z.array(figures.extend({ address: z.string().meta({ description: 'The wallet' }) })),
});
