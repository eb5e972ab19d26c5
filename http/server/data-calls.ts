import { dateToBlock, dateToBlockQuery } from '../../engine/data-api/chain/date-to-block.js';
import {
  contractEvents,
  contractEventsBody,
  contractEventsQuery,
  contractLogs,
  contractLogsQuery,
} from '../../engine/data-api/chain/logs.js';
import type { DataDeps } from '../../engine/data-api/common/deps.js';
import {
  resolveAddressQuery,
  resolveDomain,
  resolveDomainQuery,
  resolveUnstoppableQuery,
  reverseName,
  type EnsConfig,
} from '../../engine/data-api/chain/ens.js';
import { nativeBalance, nativeBalanceQuery, nativeBalances, nativeBalancesQuery } from '../../engine/data-api/chain/native-balances.js';
import { indexedTo } from '../../engine/data-api/common/read-at.js';
import { runFunction, runFunctionBody, runFunctionQuery } from '../../engine/data-api/chain/run-function.js';
import { validate } from '../../engine/schema.js';
import { queryAndPath, queryEndpoint, type DataEndpoint } from './data.js';
import { queryList, queryParams } from './query.js';
import { json } from './route.js';

/**
 * The Data API calls answered from the chain's node and from logs: native
 * balances, date → block, a contract's logs and decoded events, read-only
 * contract functions, ENS names
 * (engine/data-api/: native-balances, block-times, contract-logs, run-function, ens).
 */
export function callsEndpoints(deps: DataDeps, opts: { ens: EnsConfig }): DataEndpoint[] {
  return [
    queryEndpoint('getNativeBalance', 'GET', '/:address/balance', nativeBalanceQuery, (c, q) => nativeBalance(deps, c, q)),
    {
      operation: 'getNativeBalancesForAddresses',
      method: 'GET',
      path: '/wallets/balances',
      handle: async (req, chain) => {
        const q = { ...queryAndPath(req), wallet_addresses: queryList(queryParams(req.query), 'wallet_addresses') };
        return json(200, await nativeBalances(deps, chain, validate(nativeBalancesQuery, q, 'query')));
      },
    },
    {
      operation: 'getDateToBlock',
      method: 'GET',
      path: '/dateToBlock',
      handle: async (req, chain) => {
        const q = validate(dateToBlockQuery, queryAndPath(req), 'query');
        await indexedTo(deps, chain.key);
        return json(200, await dateToBlock(deps, chain.key, q));
      },
    },
    queryEndpoint('getContractLogs', 'GET', '/:address/logs', contractLogsQuery, (c, q) => contractLogs(deps, c, q)),
    {
      operation: 'getContractEvents',
      method: 'POST',
      path: '/:address/events',
      handle: async (req, chain) => {
        const q = validate(contractEventsQuery, queryAndPath(req), 'query');
        return json(200, await contractEvents(deps, chain.key, q, validate(contractEventsBody, req.body, 'abi')));
      },
    },
    {
      operation: 'runContractFunction',
      method: 'POST',
      path: '/:address/function',
      handle: async (req, chain) => {
        const q = validate(runFunctionQuery, queryAndPath(req), 'query');
        return json(200, await runFunction(deps, chain.key, q, validate(runFunctionBody, req.body)));
      },
    },
    {
      operation: 'resolveENSDomain',
      method: 'GET',
      path: '/resolve/ens/:domain',
      chain: 'none',
      handle: async (req) => json(200, await resolveDomain(deps, opts.ens, validate(resolveDomainQuery, req.params, 'domain'))),
    },
    {
      operation: 'resolveDomain',
      method: 'GET',
      path: '/resolve/:domain',
      chain: 'none',
      handle: async (req) => json(200, await resolveDomain(deps, opts.ens, validate(resolveUnstoppableQuery, queryAndPath(req), 'query'))),
    },
    {
      operation: 'resolveAddress',
      method: 'GET',
      path: '/resolve/:address/reverse',
      chain: 'none',
      handle: async (req) => json(200, await reverseName(deps, opts.ens, validate(resolveAddressQuery, req.params, 'address'))),
    },
    {
      operation: 'resolveAddressToDomain',
      method: 'GET',
      path: '/resolve/:address/domain',
      chain: 'none',
      handle: async (req) => json(200, await reverseName(deps, opts.ens, validate(resolveAddressQuery, req.params, 'address'))),
    },
  ];
}
