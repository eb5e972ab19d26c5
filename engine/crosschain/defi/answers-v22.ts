import { z } from 'zod';
import { offChain } from '../../data-api/common/answer-parts.js';

/** The Data API's (/api/v2.2) DeFi answers, as positions.ts's v22* functions build them. */

const protocol = {
  protocol_name: z.string(),
  protocol_id: z.string(),
  protocol_url: z.string(),
  protocol_logo: offChain,
};
const usd = z.number().meta({ description: 'USD; a token no pool prices counts for nothing' });

/** `v22Position`. */
const positionAnswer = z.object({
  label: z.enum(['liquidity']),
  tokens: z.array(
    z.object({
      token_type: z.enum(['supplied', 'reward', 'defi-token']).meta({ description: 'defi-token: the position (LP) token itself' }),
      name: z.string().nullable(),
      symbol: z.string().nullable(),
      contract_address: z.string(),
      decimals: z.int(),
      logo: offChain,
      thumbnail: offChain,
      balance: z.string(),
      balance_formatted: z.string(),
      usd_price: z.number().nullable(),
      usd_value: z.number().nullable(),
    }),
  ),
  address: z.string().meta({ description: 'The pool (Uniswap V2: the pair)' }),
  balance_usd: usd,
  total_unclaimed_usd_value: usd,
  // The adapter's facts (engine/crosschain/defi/adapter.ts RawPosition.details): their keys are the protocol's.
  position_details: z
    .looseObject({ no_price_available: z.boolean() })
    .meta({ description: "The protocol's facts (reserves, ticks, share of the pool…), snake_case; which ones depends on the protocol" }),
});

/** GET /wallets/:address/defi/summary */
export const defiSummaryAnswer = z.object({
  active_protocols: z.int(),
  total_positions: z.int(),
  total_usd_value: usd,
  total_unclaimed_usd_value: usd,
  protocols: z.array(z.object({ ...protocol, total_usd_value: usd, total_unclaimed_usd_value: usd, positions: z.int() })),
});

/** GET /wallets/:address/defi/positions */
export const defiPositionsAnswer = z.array(z.object({ ...protocol, position: positionAnswer }));

/** GET /wallets/:address/defi/:protocol/positions */
export const defiProtocolPositionsAnswer = z.object({
  ...protocol,
  total_usd_value: usd,
  total_unclaimed_usd_value: usd,
  positions: z.array(positionAnswer),
});
