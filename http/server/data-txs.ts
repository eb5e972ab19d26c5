import { z } from 'zod';
import { chainFor } from '../../engine/chains/lifecycle.js';
import { findChain, type Chain } from '../../engine/chains/registry.js';
import type { Clock } from '../../engine/clock.js';
import type { DataDeps } from '../../engine/data-api/deps.js';
import { block, blockQuery, blockStats, blockStatsQuery, internalTxs, internalTxsQuery, transaction, txQuery, walletTxs, walletTxsQuery } from '../../engine/data-api/txs.js';
import { historyQuery, walletChains, walletHistory, walletQuery, walletStats } from '../../engine/data-api/txs-wallet.js';
import { validate } from '../../engine/schema.js';
import { notFollowed, queryAndPath, type DataEndpoint } from './data.js';
import { queryList, queryParams } from './query.js';
import { json, type Request } from './route.js';

/** Native transactions, blocks and wallet activity (engine/data-api/txs*.ts). */

const input = <S extends z.ZodType>(schema: S, req: Request): z.output<S> => validate(schema, queryAndPath(req), 'query');

/** `chains` as the SDK sends it (chains[0]=eth&chains[1]=…) or as a list (chains=a,b / chains[]=a); default: every chain followed. */
function chainsOf(req: Request, deps: DataDeps, clock: Clock): Chain[] {
  const params = queryParams(req.query);
  const given = [...queryList(params, 'chains'), ...[...params.keys()].filter((k) => /^chains\[\d+\]$/.test(k)).flatMap((k) => params.getAll(k))].filter((v) => v !== '');
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
    { method: 'GET', path: '/:address', handle: async (req, c) => json(200, await walletTxs(deps, c.key, input(walletTxsQuery, req), false)) },
    { method: 'GET', path: '/:address/verbose', handle: async (req, c) => json(200, await walletTxs(deps, c.key, input(walletTxsQuery, req), true)) },
    { method: 'GET', path: '/transaction/:hash', handle: async (req, c) => json(200, await transaction(deps, c.key, input(txQuery, req), false)) },
    { method: 'GET', path: '/transaction/:hash/verbose', handle: async (req, c) => json(200, await transaction(deps, c.key, input(txQuery, req), true)) },
    { method: 'GET', path: '/transaction/:hash/internal-transactions', handle: async (req, c) => json(200, await internalTxs(deps, c.key, input(internalTxsQuery, req))) },
    { method: 'GET', path: '/block/:block_number_or_hash', handle: async (req, c) => json(200, await block(deps, c.key, input(blockQuery, req))) },
    { method: 'GET', path: '/block/:block_number_or_hash/stats', handle: async (req, c) => json(200, await blockStats(deps, c.key, input(blockStatsQuery, req))) },
    { method: 'GET', path: '/wallets/:address/history', handle: async (req, c) => json(200, await walletHistory(deps, c.key, input(historyQuery, req))) },
    { method: 'GET', path: '/wallets/:address/stats', handle: async (req, c) => json(200, await walletStats(deps, c.key, input(walletQuery, req))) },
    { method: 'GET', path: '/wallets/:address/chains', chain: 'none', handle: async (req) => json(200, await walletChains(deps, input(walletQuery, req).address, chainsOf(req, deps, clock))) },
  ];
}
