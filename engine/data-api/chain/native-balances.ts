import { formatEther } from 'viem/utils';
import { z } from 'zod';
import { unixIso } from '../../datetime.js';
import { ApiError } from '../../errors.js';
import type { Chain } from '../../chains/registry.js';
import type { DataDeps } from '../common/deps.js';
import { blockTime } from '../common/block-times.js';
import { fromNode } from '../common/node-reads.js';
import { indexedTo, readBlock } from '../common/read-at.js';
import { blockNumber, evmAddress } from '../common/params.js';
import { BATCH } from '../../size-limits.js';

/**
 * Native balances: eth_getBalance on the chain's node at `to_block` (the
 * stored head when none is given), one address (GET /:address/balance) or up
 * to 25 (GET /wallets/balances, the interface's maxItems).
 */

export const MAX_WALLETS = BATCH.walletAddresses;

export const nativeBalanceQuery = z.object({ address: evmAddress, to_block: blockNumber.optional() });
export const nativeBalancesQuery = z.object({
  wallet_addresses: z.array(evmAddress).min(1, 'at least one address').max(MAX_WALLETS, `at most ${MAX_WALLETS} addresses`),
  to_block: blockNumber.optional(),
});

/** GET /:address/balance: wei, as a decimal string. */
export const nativeBalanceAnswer = z.object({ balance: z.string() });

/** GET /wallets/balances: one entry, the chain's. */
export const nativeBalancesAnswer = z.array(
  z.object({
    chain: z.string(),
    chain_id: z.string(),
    total_balance: z.string(),
    block_number: z.string().nullable().meta({ description: "null when no block is stored yet (read at the node's latest)" }),
    block_timestamp: z.string().nullable(),
    total_balance_formatted: z.string(),
    wallet_balances: z.array(z.object({ address: z.string(), balance: z.string(), balance_formatted: z.string() })),
  }),
);

async function balanceAt(deps: Pick<DataDeps, 'reads'>, chain: string, address: string, block: number | 'latest'): Promise<bigint> {
  const wei = await fromNode(() => deps.reads.balance(chain, address, block));
  if (wei === null) throw new ApiError(404, `the node of chain ${chain} keeps no state for block ${block} (not an archive node)`);
  return wei;
}

/** GET /:address/balance */
export async function nativeBalance(deps: Pick<DataDeps, 'kv' | 'reads'>, chain: string, q: z.output<typeof nativeBalanceQuery>) {
  return { balance: (await balanceAt(deps, chain, q.address, readBlock(deps.kv, chain, q.to_block))).toString() };
}

/** GET /wallets/balances: one entry for the chain, its wallets in the order asked. */
export async function nativeBalances(
  deps: Pick<DataDeps, 'kv' | 'reads' | 'indexer'>,
  chain: Chain,
  q: z.output<typeof nativeBalancesQuery>,
) {
  const block = readBlock(deps.kv, chain.key, q.to_block);
  const wallets = await Promise.all(
    q.wallet_addresses.map(async (address) => ({ address, balance: await balanceAt(deps, chain.key, address, block) })),
  );
  const total = wallets.reduce((sum, w) => sum + w.balance, 0n);
  // The block's time comes from the block-time index: wait (a bounded time) for it to hold the block.
  if (block !== 'latest') await indexedTo(deps, chain.key, block);
  const ts = block === 'latest' ? undefined : blockTime(deps.kv, chain.key, block);
  return [
    {
      chain: chain.slug,
      chain_id: chain.hexId,
      total_balance: total.toString(),
      block_number: block === 'latest' ? null : String(block),
      block_timestamp: ts === undefined ? null : unixIso(ts),
      total_balance_formatted: formatEther(total),
      wallet_balances: wallets.map((w) => ({
        address: w.address,
        balance: w.balance.toString(),
        balance_formatted: formatEther(w.balance),
      })),
    },
  ];
}
