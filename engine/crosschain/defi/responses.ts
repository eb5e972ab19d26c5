import { z } from 'zod';
import { chainId, cursor, v1Meta } from '../responses.js';

/** What the /v1 DeFi endpoints answer (wallet.ts, from positions.ts' v1 shapes); the rest of /v1 in ../responses.ts. */

const protocol = { protocolId: z.string(), protocolName: z.string(), protocolUrl: z.string(), protocolLogo: z.null() };

const position = z.object({
  label: z.literal('liquidity'),
  address: z.string(),
  tokens: z.array(
    z.object({
      tokenType: z.enum(['supplied', 'reward', 'lp']),
      name: z.string().nullable(),
      symbol: z.string().nullable(),
      address: z.string(),
      decimals: z.number().int(),
      logo: z.null(),
      balance: z.string(),
      balanceFormatted: z.string(),
      usdPrice: z.number().nullable(),
      usdValue: z.number().nullable(),
    }),
  ),
  balanceUsd: z.number(),
  unclaimedUsd: z.number(),
  details: z.object({
    type: z.literal('liquidity'),
    isDebt: z.literal(false),
    lending: z.null(),
    // The protocol's own facts (reserves, ticks, share of the pool…): each adapter's.
    liquidity: z.looseObject({ noPriceAvailable: z.boolean() }),
  }),
});

export const v1DefiProtocols = z.object({
  cursor,
  result: z.array(z.object({ ...protocol, chains: z.array(chainId) })),
  meta: v1Meta,
});

export const v1DefiPositions = z.object({
  result: z.array(z.object({ chainId, ...protocol, position })),
  cursor,
  meta: v1Meta,
});

export const v1DefiProtocolPositions = z.object({
  result: z.object({
    ...protocol,
    chainId: chainId.nullable().meta({ description: 'The one chain asked; null over several' }),
    totalUsd: z.number(),
    totalUnclaimedUsd: z.number(),
    positions: z.array(z.object({ chainId, ...position.shape })),
  }),
  cursor,
  meta: v1Meta,
});

export const v1DefiSummary = z.object({
  result: z.object({
    activeProtocols: z.number().int(),
    totalPositions: z.number().int(),
    totalUsd: z.number(),
    totalUnclaimedUsd: z.number(),
    protocols: z.array(
      z.object({ ...protocol, chainId, totalUsd: z.number(), totalUnclaimedUsd: z.number(), positionCount: z.number().int() }),
    ),
  }),
  meta: v1Meta,
});
