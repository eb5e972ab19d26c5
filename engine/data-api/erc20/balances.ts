import { NATIVE, formatted } from '../common/values.js';
import { add, decimal, priceReader, usdCents, type Ratio } from '../dex/index/prices.js';

const NONE: Ratio = { num: 0n, den: 1n };
import { balanceUsd, centsOf, optionsOf, priceParams, withPortfolio } from '../dex/index/usd.js';
import { fromNode, inBatches } from '../common/node-reads.js';
import { findChain } from '../../chains/registry.js';
import { formatEther } from 'viem/utils';
import { z } from 'zod';
import { ApiError } from '../../errors.js';
import { rangePage } from '../../page.js';
import type { DataDeps } from '../common/deps.js';
import { shareOf, tokenFacts, viewUint, type TokenFacts } from './reads.js';
import { approvalsPrefix, balanceKey, walletBalancesPrefix, type ApprovalRow } from './index/keys.js';
import { dec } from '../common/values.js';
import { unixIso as iso } from '../../datetime.js';
import { blockNumber, bool, cursor, evmAddress, limit } from '../common/params.js';
import { indexedHead, offsetCursor, readOffsetCursor } from '../common/pages.js';
import { offChain, pageAnswer } from '../common/answer-parts.js';
import { addressList } from './tokens.js';

/**
 * A wallet's ERC-20 balances (GET /:address/erc20, GET /wallets/:address/tokens
 * with its native balance first), approvals (GET /wallets/:address/approvals)
 * and one allowance (GET /erc20/:address/allowance). Balances come from the
 * `erc20Balances` index at the indexed head; at an earlier `to_block`, from
 * balanceOf at that block for each token the wallet has held.
 */

/** `token_addresses`: only these tokens (a list, as the route reads lists). */
const tokenAddresses = { token_addresses: addressList.optional() };

export const walletErc20Query = z.object({
  address: evmAddress,
  to_block: blockNumber.optional(),
  exclude_spam: bool(true),
  ...tokenAddresses,
});
export const walletTokensQuery = z.object({
  ...priceParams,
  address: evmAddress,
  to_block: blockNumber.optional(),
  exclude_spam: bool(false),
  exclude_unverified_contracts: bool(false),
  exclude_native: bool(false),
  limit: limit(),
  cursor,
  ...tokenAddresses,
});
export const approvalsQuery = z.object({ address: evmAddress, limit: limit(), cursor });
export const approvalsAnswer = pageAnswer(
  z.object({
    block_number: z.string(),
    block_timestamp: z.string(),
    transaction_hash: z.string(),
    value: z.string(),
    value_formatted: z.string(),
    token: z.object({
      address: z.string(),
      address_label: offChain,
      name: z.string(),
      symbol: z.string(),
      logo: offChain,
      possible_spam: z.boolean(),
      verified_contract: z.boolean(),
      current_balance: z.string(),
      current_balance_formatted: z.string(),
      usd_price: z.string().nullable(),
      usd_at_risk: z.string().nullable().meta({ description: 'The approved amount the wallet holds (at most its balance) in USD' }),
    }),
    spender: z.object({ address: z.string(), address_label: offChain, entity: offChain, entity_logo: offChain }),
  }),
);
export const allowanceQuery = z.object({ address: evmAddress, owner_address: evmAddress, spender_address: evmAddress });
export const allowanceAnswer = z.object({ allowance: z.string() });

export interface Held {
  token: string;
  balance: bigint;
}

/** The wallet's tokens with a balance above 0: all of them, or the asked ones; at the head or at `toBlock`. */
export async function held(
  deps: DataDeps,
  chain: string,
  wallet: string,
  head: number,
  toBlock: number | undefined,
  only: readonly string[],
): Promise<Held[]> {
  const prefix = walletBalancesPrefix(chain, wallet);
  if (toBlock !== undefined && toBlock < head) {
    // The past: balanceOf at that block for every token the wallet ever held here.
    const known =
      only.length > 0
        ? only.filter((t) => deps.kv.has('erc20Pairs', balanceKey(chain, wallet, t)))
        : deps.kv.range<unknown>('erc20Pairs', { start: prefix, end: `${prefix}\uffff` }).map((e) => e.key.slice(prefix.length));
    const read = await Promise.all(
      known.map(async (token) => ({ token, balance: (await viewUint(deps, chain, token, toBlock, 'balanceOf', [wallet])) ?? 0n })),
    );
    return read.filter((h) => h.balance > 0n);
  }
  // Now: the index holds only balances above 0.
  const rows =
    only.length > 0
      ? only.flatMap((t) => ({ key: prefix + t, value: deps.kv.get<string>('erc20Balances', balanceKey(chain, wallet, t)) }))
      : deps.kv.range<string>('erc20Balances', { start: prefix, end: `${prefix}\uffff` });
  return rows.flatMap((e) => (e.value === undefined ? [] : [{ token: e.key.slice(prefix.length), balance: BigInt(e.value) }]));
}

/** `balanceItem`: GET /:address/erc20's items. */
const balanceAnswer = z.object({
  token_address: z.string(),
  name: z.string(),
  symbol: z.string(),
  logo: offChain,
  thumbnail: offChain,
  decimals: z.int(),
  balance: z.string(),
  possible_spam: z.boolean(),
  verified_contract: z.boolean(),
  total_supply: z.string().nullable(),
  total_supply_formatted: z.string().nullable(),
  percentage_relative_to_total_supply: z.number().nullable(),
});
export const walletErc20Answer = z.array(balanceAnswer);

/** GET /wallets/:address/tokens: the native balance (native_token) first, then the tokens, with their USD fields (null: no price). */
export const walletTokensAnswer = pageAnswer(
  balanceAnswer.extend({
    balance_formatted: z.string(),
    native_token: z.boolean(),
    usd_price: z.string().nullable(),
    usd_price_24hr_percent_change: z.string().nullable(),
    usd_price_24hr_usd_change: z.string().nullable(),
    usd_value: z.number().nullable(),
    usd_value_24hr_usd_change: z.string().nullable(),
    portfolio_percentage: z.number().nullable(),
  }),
).extend({ block_number: z.string() });

function balanceItem(h: Held, t: TokenFacts) {
  return {
    token_address: h.token,
    name: t.name,
    symbol: t.symbol,
    logo: null,
    thumbnail: null,
    decimals: t.decimals ?? 0,
    balance: h.balance.toString(),
    possible_spam: t.possibleSpam,
    verified_contract: false,
    total_supply: t.totalSupply,
    total_supply_formatted: t.totalSupply === null ? null : formatted(BigInt(t.totalSupply), t.decimals),
    percentage_relative_to_total_supply: shareOf(h.balance, t.totalSupply),
  };
}

/** GET /:address/erc20: a bare array, no pages (as the hosted service). */
export async function walletErc20(deps: DataDeps, chain: string, q: z.output<typeof walletErc20Query>, only: readonly string[]) {
  const head = await indexedHead(deps, chain);
  const rows = await held(deps, chain, q.address, head, q.to_block, only);
  const items = await Promise.all(rows.map(async (h) => balanceItem(h, await tokenFacts(deps, chain, h.token))));
  return items.filter((i) => !(q.exclude_spam && i.possible_spam));
}

/** What a wallet's priced balances are asked with (GET /wallets/:address/tokens, GET /wallets/:address/net-worth). */
export type BalancesQuery = Pick<
  z.output<typeof walletTokensQuery>,
  | 'address'
  | 'to_block'
  | 'exclude_spam'
  | 'exclude_unverified_contracts'
  | 'exclude_native'
  | 'min_pair_side_liquidity_usd'
  | 'max_token_inactivity'
>;

/** A wallet's balances on a chain with their USD fields: the native balance first (eth_getBalance at the block), then the tokens. */
export async function pricedBalances(deps: DataDeps, chain: string, q: BalancesQuery, only: readonly string[]) {
  const head = await indexedHead(deps, chain);
  const block = q.to_block !== undefined && q.to_block < head ? q.to_block : head;
  // Tokens are few per wallet; the list is read whole (verified_contract is always false here: the filter leaves none).
  const tokens = q.exclude_unverified_contracts ? [] : await held(deps, chain, q.address, head, q.to_block, only);
  // Fields added to each balance item rather than spread into copies of it (as wallet history items: no hidden class per copy).
  const items = await Promise.all(
    tokens.map(async (h) => Object.assign(balanceItem(h, await tokenFacts(deps, chain, h.token)), { native_token: false })),
  );
  const reader = priceReader(deps, chain, head);
  const opts = optionsOf(q);
  // Each item's exact USD value, for sums (net worth); the answers carry the number.
  const values = new Map<object, Ratio>();
  const priced = async <T extends { balance: string; decimals: number }>(i: T, token: string | undefined) => {
    const { fields, value } = await balanceUsd(
      token === undefined ? undefined : reader,
      token ?? '',
      block,
      BigInt(i.balance),
      i.decimals,
      opts,
    );
    if (value !== null) values.set(i, value);
    return Object.assign(i, fields);
  };
  const listed = items.filter((i) => !(q.exclude_spam && i.possible_spam));
  // A token marked possible spam is not priced (an airdropped wallet holds thousands); the others a few at a time.
  const kept = await inBatches(
    listed.map(
      (i) => () =>
        priced(
          Object.assign(i, { balance_formatted: formatted(BigInt(i.balance), i.decimals) }),
          i.possible_spam ? undefined : i.token_address,
        ),
    ),
  );
  // The native balance is priced as its wrapped token.
  const native = q.exclude_native
    ? []
    : [
        await priced(
          await nativeItem(deps, chain, q.address, block),
          reader === undefined ? undefined : deps.pricing!(chain)!.wrappedNative,
        ),
      ];
  return { block, all: withPortfolio([...native, ...kept]), values };
}

/** GET /wallets/:address/tokens: the native balance first (eth_getBalance at the block), then the tokens, in pages. */
export async function walletTokens(deps: DataDeps, chain: string, q: z.output<typeof walletTokensQuery>, only: readonly string[]) {
  const { block, all } = await pricedBalances(deps, chain, q, only);
  const start = q.cursor === null ? 0 : readOffsetCursor(q.cursor);
  const page = all.slice(start, start + q.limit);
  const next = start + q.limit < all.length ? offsetCursor(start + q.limit) : null;
  return { page: Math.floor(start / q.limit), page_size: q.limit, block_number: String(block), cursor: next, result: page };
}

export const netWorthQuery = z.object({
  ...priceParams,
  address: evmAddress,
  exclude_spam: bool(false),
  exclude_unverified_contracts: bool(false),
  chains: z
    .array(z.string())
    .default([])
    .meta({ description: "The chains to sum (hex id, decimal id or name), each checked as `chain` is; the request's chain when none" }),
});

/** GET /wallets/:address/net-worth's answer (the reference's NetWorthResult): USD amounts to the cent. */
export const netWorthAnswer = z.object({
  total_networth_usd: z.string(),
  chains: z.array(
    z.object({
      chain: z.string().meta({ description: "The chain's name" }),
      native_balance: z.string(),
      native_balance_formatted: z.string(),
      native_balance_usd: z.string(),
      token_balance_usd: z.string(),
      networth_usd: z.string(),
    }),
  ),
  unsupported_chain_ids: z.array(z.string()).meta({ description: 'Chains asked that this server does not follow' }),
  unavailable_chains: z.array(z.object({ chain_id: z.string() })).meta({ description: 'Chains whose indexes or node cannot answer now' }),
});

/**
 * GET /wallets/:address/net-worth: per chain asked (`chains`, each followed here; a chain this server does not follow
 * is listed in unsupported_chain_ids, one whose indexes or node cannot answer now in unavailable_chains), the native
 * balance and the priced tokens in USD at the indexed head, summed exactly; a token no pool prices counts for nothing.
 */
export async function netWorth(
  deps: DataDeps,
  chains: readonly string[],
  unsupported: readonly string[],
  q: z.output<typeof netWorthQuery>,
): Promise<z.infer<typeof netWorthAnswer>> {
  const settled = await Promise.allSettled(
    chains.map(async (chain) => {
      const { all, values } = await pricedBalances(deps, chain, { ...q, exclude_native: false }, []);
      const [native, ...tokens] = all;
      const tokenUsd = tokens.reduce((sum, t) => add(sum, values.get(t) ?? NONE), NONE);
      const nativeUsd = values.get(native!) ?? NONE;
      const total = add(nativeUsd, tokenUsd);
      return {
        chain: findChain(chain)?.slug ?? chain,
        native_balance: native!.balance,
        native_balance_formatted: native!.balance_formatted,
        native_balance_usd: usdCents(nativeUsd),
        token_balance_usd: usdCents(tokenUsd),
        networth_usd: usdCents(total),
        total,
      };
    }),
  );
  const answered = settled.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const unavailable = settled.flatMap((r, i) => {
    if (r.status === 'fulfilled') return [];
    // Bad input is no chain's fault: thrown as it is; a chain that cannot answer now (503, 502) is listed.
    if (r.reason instanceof ApiError && r.reason.status >= 500) return [{ chain_id: chains[i]! }];
    throw r.reason;
  });
  return {
    total_networth_usd: usdCents(answered.reduce((sum, c) => add(sum, c.total), NONE)),
    chains: answered.map(({ total: _, ...c }) => c),
    unsupported_chain_ids: [...unsupported],
    unavailable_chains: unavailable,
  };
}

const NO_PRICE = {
  usd_price: null as string | null,
  usd_price_24hr_percent_change: null as string | null,
  usd_price_24hr_usd_change: null as string | null,
  usd_value: null as number | null,
  usd_value_24hr_usd_change: null as string | null,
  portfolio_percentage: null as number | null,
};

async function nativeItem(deps: DataDeps, chain: string, wallet: string, block: number) {
  const wei = await fromNode(() => deps.reads.balance(chain, wallet, block), `the native balance of ${wallet} on chain ${chain}`);
  const balance = wei ?? 0n;
  return {
    token_address: NATIVE.address,
    name: NATIVE.name,
    symbol: NATIVE.symbol,
    decimals: NATIVE.decimals,
    logo: null,
    thumbnail: null,
    balance: balance.toString(),
    balance_formatted: formatEther(balance),
    possible_spam: false,
    verified_contract: true,
    native_token: true,
    total_supply: null,
    total_supply_formatted: null,
    percentage_relative_to_total_supply: null,
    ...NO_PRICE,
  };
}

/**
 * GET /wallets/:address/approvals: the latest approval above 0 per (token, spender), in key order; the token's USD
 * price at the indexed head, and at risk the approved amount the wallet holds (the allowance, at most its balance) in USD.
 */
export async function walletApprovals(deps: DataDeps, chain: string, q: z.output<typeof approvalsQuery>) {
  const head = await indexedHead(deps, chain);
  const reader = priceReader(deps, chain, head);
  const page = rangePage<ApprovalRow>(deps.kv, 'erc20Approvals', approvalsPrefix(chain, q.address), {
    list: 'erc20-approvals',
    limit: q.limit,
    reverse: false,
    cursor: q.cursor,
  });
  const result = await Promise.all(
    page.rows.map(async ({ key, value: a }) => {
      const [, , token, spender] = key.split('/') as [string, string, string, string];
      const t = await tokenFacts(deps, chain, token);
      const balance = BigInt(deps.kv.get<string>('erc20Balances', balanceKey(chain, q.address, token)) ?? '0x0');
      const [approved, usd] = [BigInt(a.value), reader?.valueUsd(token, head) ?? null];
      return {
        block_number: String(a.blockNumber),
        block_timestamp: iso(a.timestamp),
        transaction_hash: a.transactionHash,
        value: dec(a.value),
        value_formatted: formatted(BigInt(a.value), t.decimals),
        token: {
          address: token,
          address_label: null,
          name: t.name,
          symbol: t.symbol,
          logo: null,
          possible_spam: t.possibleSpam,
          verified_contract: false,
          current_balance: balance.toString(),
          current_balance_formatted: formatted(balance, t.decimals),
          usd_price: usd === null ? null : decimal(usd, 18),
          usd_at_risk: centsOf(approved < balance ? approved : balance, t.decimals ?? 0, usd),
        },
        spender: { address: spender, address_label: null, entity: null, entity_logo: null },
      };
    }),
  );
  return { page: page.page, page_size: q.limit, cursor: page.cursor, result };
}

/** GET /erc20/:address/allowance: allowance(owner, spender) by eth_call at the indexed head. */
export async function allowance(deps: DataDeps, chain: string, q: z.output<typeof allowanceQuery>) {
  const head = await indexedHead(deps, chain);
  const value = await viewUint(deps, chain, q.address, head < 0 ? 'latest' : head, 'allowance', [q.owner_address, q.spender_address]);
  if (value === null)
    throw new ApiError(404, `${q.address} on chain ${chain} answers no allowance(owner, spender): not an ERC-20 contract`);
  return { allowance: value.toString() };
}
