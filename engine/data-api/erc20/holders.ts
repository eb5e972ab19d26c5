import { unixIso } from '../../datetime.js';
import { fromNode } from '../common/node-reads.js';
import { z } from 'zod';
import type { Kv } from '../../ports.js';
import { badRequest } from '../../errors.js';
import { rangePage } from '../../page.js';
import type { DataDeps } from '../common/deps.js';
import { shareOf, tokenFacts } from './reads.js';
import { holdersAt } from './index/writer.js';
import { holderOf, holderPrefix } from './index/keys.js';
import { blockTime } from '../common/block-times.js';
import { cursor, date, evmAddress, limit, order } from '../common/params.js';
import { priceReader } from '../dex/index/prices.js';
import { centsOf } from '../dex/index/usd.js';
import { indexedHead, offsetCursor, readOffsetCursor } from '../common/pages.js';
import { formatted } from '../common/values.js';
import { offChain, pageAnswer } from '../common/answer-parts.js';

/**
 * A token's holders: GET /erc20/:token_address/owners (the `erc20Holders`
 * index, balance descending; a page reads limit + 2 entries),
 * GET /erc20/:tokenAddress/holders (count, top-N supply, change over 5 min …
 * 30 days) and GET /erc20/:tokenAddress/holders/historical (a count per time
 * bucket). Each says `partial: true` when the token was created before the
 * indexed range: then only wallets that moved it since are listed.
 */

export const ownersQuery = z.object({ token_address: evmAddress, limit: limit(), cursor, order });
export const holdersQuery = z.object({ tokenAddress: evmAddress });

const partial = z.boolean().meta({ description: 'The token was created before the indexed range: only wallets that moved it since count' });
export const ownersAnswer = pageAnswer(
  z.object({
    owner_address: z.string(),
    owner_address_label: offChain,
    balance: z.string(),
    balance_formatted: z.string(),
    usd_value: z.string().nullable(),
    is_contract: z.boolean(),
    percentage_relative_to_total_supply: z.number().nullable(),
    entity: offChain,
    entity_logo: offChain,
  }),
).extend({ total_supply: z.string().nullable(), partial });
const FRAMES = {
  '1min': 60,
  '5min': 300,
  '10min': 600,
  '30min': 1800,
  '1h': 3600,
  '4h': 14_400,
  '12h': 43_200,
  '1d': 86_400,
  '1w': 604_800,
  '1m': 2_592_000,
} as const;
export const historicalQuery = z.object({
  tokenAddress: evmAddress,
  fromDate: date,
  toDate: date,
  timeFrame: z.enum(Object.keys(FRAMES) as [keyof typeof FRAMES], `one of ${Object.keys(FRAMES).join(', ')}`).default('1min'),
  limit: limit(),
  cursor,
});

/** Whether the address holds code at the block (eth_getCode); the node's failure fails the request. */
async function isContract(deps: DataDeps, chain: string, address: string, block: number): Promise<boolean> {
  const code = await fromNode(
    () => deps.reads.code(chain, address, block < 0 ? 'latest' : block),
    `the code of ${address} on chain ${chain}`,
  );
  return code !== null && code !== '0x';
}

export async function tokenOwners(deps: DataDeps, chain: string, q: z.output<typeof ownersQuery>) {
  const head = await indexedHead(deps, chain);
  const t = await tokenFacts(deps, chain, q.token_address);
  // Each balance in USD at the indexed head, to the cent.
  const usd = priceReader(deps, chain, head)?.valueUsd(q.token_address, head) ?? null;
  // Keys sort by balance descending: DESC reads forward.
  const page = rangePage<unknown>(deps.kv, 'erc20Holders', holderPrefix(chain, q.token_address), {
    list: `erc20-owners ${q.order}`,
    limit: q.limit,
    reverse: q.order === 'ASC',
    cursor: q.cursor,
  });
  const result = await Promise.all(
    page.rows.map(async ({ key }) => {
      const { wallet, balance } = holderOf(key);
      return {
        owner_address: wallet,
        owner_address_label: null,
        balance: balance.toString(),
        balance_formatted: formatted(balance, t.decimals),
        usd_value: centsOf(balance, t.decimals ?? 0, usd),
        is_contract: await isContract(deps, chain, wallet, head),
        percentage_relative_to_total_supply: shareOf(balance, t.totalSupply),
        entity: null,
        entity_logo: null,
      };
    }),
  );
  return {
    page: page.page,
    page_size: q.limit,
    cursor: page.cursor,
    total_supply: t.totalSupply,
    partial: t.state?.created !== true,
    result,
  };
}

const TOPS = [10, 25, 50, 100, 250, 500] as const;

/** The token's `n` largest balances, largest first (the `erc20Holders` index sorts by balance descending). */
export const topBalances = (kv: Kv, chain: string, token: string, n: number): bigint[] =>
  kv
    .range<unknown>('erc20Holders', { start: holderPrefix(chain, token), end: `${holderPrefix(chain, token)}\uffff`, limit: n })
    .map((e) => holderOf(e.key).balance);

/** An amount's share of the supply in percent, to 6 decimals (truncated); 0 without a supply. */
export function supplyPercent(amount: bigint, totalSupply: string | null): number {
  const supply = totalSupply === null ? 0n : BigInt(totalSupply);
  return supply === 0n ? 0 : Number((amount * 10n ** 8n) / supply) / 1e6;
}
const byAcquisition = z.object({ swap: z.int(), transfer: z.int(), airdrop: z.int() });
const tiers = z.object({
  whales: z.int(),
  sharks: z.int(),
  dolphins: z.int(),
  fish: z.int(),
  octopus: z.int(),
  crabs: z.int(),
  shrimps: z.int(),
});
const supplyShare = z.object({ supply: z.string(), supplyPercent: z.number() });
const holderChange = z.object({ change: z.int(), changePercent: z.number() });
export const holdersAnswer = z.object({
  totalHolders: z.int(),
  holderSupply: z.object({
    top10: supplyShare,
    top25: supplyShare,
    top50: supplyShare,
    top100: supplyShare,
    top250: supplyShare,
    top500: supplyShare,
  }),
  holderChange: z.object({
    '5min': holderChange,
    '1h': holderChange,
    '6h': holderChange,
    '24h': holderChange,
    '3d': holderChange,
    '7d': holderChange,
    '30d': holderChange,
  }),
  holdersByAcquisition: byAcquisition,
  holderDistribution: tiers,
  partial,
});
export const historicalAnswer = z.object({
  page: z.int(),
  pageSize: z.int(),
  cursor: z.string().nullable(),
  partial,
  result: z.array(
    z.object({
      timestamp: z.string(),
      totalHolders: z.int(),
      netHolderChange: z.int(),
      holderPercentChange: z.number(),
      newHoldersByAcquisition: byAcquisition,
      holdersIn: tiers,
      holdersOut: tiers,
    }),
  ),
});

const WINDOWS = { '5min': 300, '1h': 3600, '6h': 21_600, '24h': 86_400, '3d': 259_200, '7d': 604_800, '30d': 2_592_000 } as const;
const TIERS = { whales: 0, sharks: 0, dolphins: 0, fish: 0, octopus: 0, crabs: 0, shrimps: 0 };

/** The time the indexes are at: the last indexed block's (holder changes are measured back from it). */
function indexedTime(deps: DataDeps, chain: string, head: number): number {
  return blockTime(deps.kv, chain, head) ?? 0;
}

const percent = (change: number, before: number): number => (before === 0 ? 0 : Math.round((change / before) * 1e6) / 1e4);

export async function tokenHolders(deps: DataDeps, chain: string, q: z.output<typeof holdersQuery>) {
  const head = await indexedHead(deps, chain);
  const t = await tokenFacts(deps, chain, q.tokenAddress);
  const total = t.state?.holders ?? 0;
  const top = topBalances(deps.kv, chain, q.tokenAddress, Math.max(...TOPS));
  const holderSupply = Object.fromEntries(
    TOPS.map((n) => {
      const sum = top.slice(0, n).reduce((a, b) => a + b, 0n);
      return [`top${n}`, { supply: formatted(sum, t.decimals), supplyPercent: supplyPercent(sum, t.totalSupply) }];
    }),
  );
  const now = indexedTime(deps, chain, head);
  const holderChange = Object.fromEntries(
    Object.entries(WINDOWS).map(([name, seconds]) => {
      const before = holdersAt(deps.kv, chain, q.tokenAddress, now - seconds);
      return [name, { change: total - before, changePercent: percent(total - before, before) }];
    }),
  );
  // Acquisition and USD tiers need swap and price indexes (engine/data-api/dex/): every holder counts as acquired by transfer.
  return {
    totalHolders: total,
    holderSupply,
    holderChange,
    holdersByAcquisition: { swap: 0, transfer: total, airdrop: 0 },
    holderDistribution: TIERS,
    partial: t.state?.created !== true,
  };
}

/** GET /erc20/:tokenAddress/holders/historical: one item per bucket from toDate back to fromDate, newest first. */
export async function historicalHolders(deps: DataDeps, chain: string, q: z.output<typeof historicalQuery>) {
  if (q.toDate < q.fromDate) throw badRequest('toDate', 'before fromDate');
  await indexedHead(deps, chain);
  const t = await tokenFacts(deps, chain, q.tokenAddress);
  const step = FRAMES[q.timeFrame];
  const last = Math.floor(q.toDate / step) * step;
  const skip = q.cursor === null ? 0 : readOffsetCursor(q.cursor);
  const result = [];
  // Newest first: each bucket's count before it is the next (older) bucket's total, read once.
  let total = holdersAt(deps.kv, chain, q.tokenAddress, last - skip * step + step - 1);
  for (let i = skip; i < skip + q.limit; i++) {
    const at = last - i * step;
    if (at < Math.floor(q.fromDate / step) * step) break;
    const before = holdersAt(deps.kv, chain, q.tokenAddress, at - 1);
    result.push({
      timestamp: unixIso(at),
      totalHolders: total,
      netHolderChange: total - before,
      holderPercentChange: percent(total - before, before),
      newHoldersByAcquisition: { swap: 0, transfer: Math.max(total - before, 0), airdrop: 0 },
      holdersIn: TIERS,
      holdersOut: TIERS,
    });
    total = before;
  }
  const more = last - (skip + q.limit) * step >= Math.floor(q.fromDate / step) * step;
  const next = more ? offsetCursor(skip + q.limit) : null;
  return { page: Math.floor(skip / q.limit), pageSize: q.limit, cursor: next, partial: t.state?.created !== true, result };
}
