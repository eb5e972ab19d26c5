import { chainFor } from '../../engine/chains/lifecycle.js';
import { findChain, type Chain } from '../../engine/chains/registry.js';
import type { Clock } from '../../engine/clock.js';
import type { DataDeps } from '../../engine/data-api/common/deps.js';
import {
  block,
  blockQuery,
  blockStats,
  blockStatsQuery,
  internalTxs,
  internalTxsQuery,
  transaction,
  txQuery,
  walletTxs,
  walletTxsQuery,
} from '../../engine/data-api/transactions/txs.js';
import { historyQuery, walletChains, walletHistory, walletQuery, walletStats } from '../../engine/data-api/transactions/wallet.js';
import { validate } from '../../engine/schema.js';
import { notFollowed, queryAndPath, queryEndpoint, type DataEndpoint } from './data.js';
import { queryList, queryParams } from './query.js';
import { json, type Request } from './route.js';

/** Native transactions, blocks and wallet activity (engine/data-api/txs*.ts). */

/** `chains` as the SDK sends it (chains[0]=eth&chains[1]=…) or as a list (chains=a,b / chains[]=a); default: every chain followed. */
function chainsOf(req: Request, deps: DataDeps, clock: Clock): Chain[] {
  const given = queryList(queryParams(req.query), 'chains');
  if (given.length === 0) return followedChains(deps);
  const chains = given.map((v) => chainFor(v, 'data', clock.now(), { field: 'chains' }));
  for (const c of chains) if (deps.follower(c.key) === undefined) throw notFollowed(c);
  return [...new Map(chains.map((c) => [c.key, c])).values()];
}

/** The EVM chains this server follows (those with a stored chain state and a follower). */
function followedChains(deps: DataDeps): Chain[] {
  return deps.kv
    .range<unknown>('chainState', {})
    .map((e) => findChain(e.key))
    .filter((c): c is Chain => c !== undefined && c.family === 'evm' && deps.follower(c.key) !== undefined);
}

export function txsEndpoints(deps: DataDeps, clock: Clock): DataEndpoint[] {
  return [
    queryEndpoint('getWalletTransactions', 'GET', '/:address', walletTxsQuery, (c, q) => walletTxs(deps, c, q, false)),
    queryEndpoint('getWalletTransactionsVerbose', 'GET', '/:address/verbose', walletTxsQuery, (c, q) => walletTxs(deps, c, q, true)),
    queryEndpoint('getTransaction', 'GET', '/transaction/:transaction_hash', txQuery, (c, q) => transaction(deps, c, q, false)),
    queryEndpoint('getTransactionVerbose', 'GET', '/transaction/:transaction_hash/verbose', txQuery, (c, q) =>
      transaction(deps, c, q, true),
    ),
    queryEndpoint('getInternalTransactions', 'GET', '/transaction/:transaction_hash/internal-transactions', internalTxsQuery, (c, q) =>
      internalTxs(deps, c, q),
    ),
    queryEndpoint('getBlock', 'GET', '/block/:block_number_or_hash', blockQuery, (c, q) => block(deps, c, q)),
    queryEndpoint('getBlockStats', 'GET', '/block/:block_number_or_hash/stats', blockStatsQuery, (c, q) => blockStats(deps, c, q)),
    queryEndpoint('getWalletHistory', 'GET', '/wallets/:address/history', historyQuery, (c, q) => walletHistory(deps, c, q)),
    queryEndpoint('getWalletStats', 'GET', '/wallets/:address/stats', walletQuery, (c, q) => walletStats(deps, c, q)),
    {
      operation: 'getWalletActiveChains',
      method: 'GET',
      path: '/wallets/:address/chains',
      chain: 'none',
      handle: async (req) =>
        json(200, await walletChains(deps, validate(walletQuery, queryAndPath(req), 'query').address, chainsOf(req, deps, clock))),
    },
  ];
}
