import { chainFor } from '../../engine/chains/lifecycle.js';
import { findChain, type Chain } from '../../engine/chains/registry.js';
import type { Clock } from '../../engine/clock.js';
import type { DataDeps } from '../../engine/data-api/common/deps.js';
import {
  block,
  blockAnswer,
  blockQuery,
  blockStats,
  blockStatsAnswer,
  blockStatsQuery,
  internalTxs,
  internalTxsAnswer,
  internalTxsQuery,
  transaction,
  transactionAnswer,
  transactionVerboseAnswer,
  txQuery,
  walletTxs,
  walletTxsAnswer,
  walletTxsQuery,
  walletTxsVerboseAnswer,
} from '../../engine/data-api/transactions/txs.js';
import {
  historyQuery,
  walletChains,
  walletChainsAnswer,
  walletChainsQuery,
  walletHistory,
  walletHistoryAnswer,
  walletQuery,
  walletStats,
  walletStatsAnswer,
} from '../../engine/data-api/transactions/wallet.js';
import { validate } from '../../engine/schema.js';
import { arrayParams, notFollowed, queryAndPath, queryEndpoint, type DataEndpoint } from './data.js';
import { json } from './route.js';

/**
 * Native transactions, blocks and wallet activity (engine/data-api/transactions/). Errors beyond the defaults: 502
 * where a block past retention or its logs are read from the node, 503 where a page names a block not indexed yet.
 */

/** `chains` as the SDK sends it (chains[0]=eth&chains[1]=…) or as a list (chains=a,b / chains[]=a); default: every chain followed. */
function chainsOf(given: readonly string[], deps: DataDeps, clock: Clock): Chain[] {
  if (given.length === 0) return followedChains(deps);
  const chains = given.map((v) => chainFor(v, 'data', clock.now(), { field: 'chains' }));
  for (const c of chains) if (deps.follower(c.key) === undefined) throw notFollowed(c);
  return [...new Map(chains.map((c) => [c.key, c])).values()];
}

/** The EVM chains this server follows (those with a stored chain state and a follower). */
export function followedChains(deps: DataDeps): Chain[] {
  return deps.kv
    .range<unknown>('chainState', {})
    .map((e) => findChain(e.key))
    .filter((c): c is Chain => c !== undefined && c.family === 'evm' && deps.follower(c.key) !== undefined);
}

export function txsEndpoints(deps: DataDeps, clock: Clock): DataEndpoint[] {
  return [
    {
      ...queryEndpoint('getWalletTransactions', 'GET', '/:address', walletTxsQuery, (c, q) => walletTxs(deps, c, q, false)),
      responses: { 200: walletTxsAnswer },
      errors: [503],
    },
    {
      ...queryEndpoint('getWalletTransactionsVerbose', 'GET', '/:address/verbose', walletTxsQuery, (c, q) => walletTxs(deps, c, q, true)),
      responses: { 200: walletTxsVerboseAnswer },
      errors: [502, 503],
    },
    {
      ...queryEndpoint('getTransaction', 'GET', '/transaction/:transaction_hash', txQuery, (c, q) => transaction(deps, c, q, false)),
      responses: { 200: transactionAnswer },
      errors: [502, 503],
    },
    {
      ...queryEndpoint('getTransactionVerbose', 'GET', '/transaction/:transaction_hash/verbose', txQuery, (c, q) =>
        transaction(deps, c, q, true),
      ),
      responses: { 200: transactionVerboseAnswer },
      errors: [502, 503],
    },
    {
      ...queryEndpoint('getInternalTransactions', 'GET', '/transaction/:transaction_hash/internal-transactions', internalTxsQuery, (c, q) =>
        internalTxs(deps, c, q),
      ),
      responses: { 200: internalTxsAnswer },
      errors: [503],
    },
    {
      ...queryEndpoint('getBlock', 'GET', '/block/:block_number_or_hash', blockQuery, (c, q) => block(deps, c, q)),
      responses: { 200: blockAnswer },
      errors: [502],
    },
    {
      ...queryEndpoint('getBlockStats', 'GET', '/block/:block_number_or_hash/stats', blockStatsQuery, (c, q) => blockStats(deps, c, q)),
      responses: { 200: blockStatsAnswer },
      errors: [502],
    },
    {
      ...queryEndpoint('getWalletHistory', 'GET', '/wallets/:address/history', historyQuery, (c, q) => walletHistory(deps, c, q)),
      responses: { 200: walletHistoryAnswer },
      errors: [502, 503],
    },
    {
      ...queryEndpoint('getWalletStats', 'GET', '/wallets/:address/stats', walletQuery, (c, q) => walletStats(deps, c, q)),
      responses: { 200: walletStatsAnswer },
    },
    {
      operation: 'getWalletActiveChains',
      method: 'GET',
      path: '/wallets/:address/chains',
      chain: 'none',
      query: walletChainsQuery,
      responses: { 200: walletChainsAnswer },
      errors: [503],
      handle: async (req) => {
        const q = validate(walletChainsQuery, { ...queryAndPath(req), ...arrayParams(req, ['chains']) }, 'query');
        return json(200, await walletChains(deps, q.address, chainsOf(q.chains ?? [], deps, clock)));
      },
    },
  ];
}
