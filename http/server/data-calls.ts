import { dateToBlock, dateToBlockAnswer, dateToBlockQuery } from '../../engine/data-api/chain/date-to-block.js';
import {
  contractEvents,
  contractEventsAnswer,
  contractEventsBody,
  contractEventsQuery,
  contractLogs,
  contractLogsAnswer,
  contractLogsQuery,
} from '../../engine/data-api/chain/logs.js';
import type { DataDeps } from '../../engine/data-api/common/deps.js';
import {
  resolveAddressQuery,
  resolveDomain,
  resolveDomainAnswer,
  resolveDomainQuery,
  resolveUnstoppableQuery,
  reverseName,
  reverseNameAnswer,
  type EnsConfig,
} from '../../engine/data-api/chain/ens.js';
import {
  nativeBalance,
  nativeBalanceAnswer,
  nativeBalanceQuery,
  nativeBalances,
  nativeBalancesAnswer,
  nativeBalancesQuery,
} from '../../engine/data-api/chain/native-balances.js';
import { indexedTo } from '../../engine/data-api/common/read-at.js';
import { runFunction, runFunctionAnswer, runFunctionBody, runFunctionQuery } from '../../engine/data-api/chain/run-function.js';
import { validate } from '../../engine/schema.js';
import { latestBlock, latestBlockAnswer, latestBlockQuery, NODE_HEAD_HEADER } from '../../engine/data-api/chain/latest-block.js';
import { chainFor } from '../../engine/chains/lifecycle.js';
import type { Clock } from '../../engine/clock.js';
import { notFollowed, queryAndPath, queryEndpoint, type DataEndpoint } from './data.js';
import { queryList, queryParams } from './query.js';
import { json } from './route.js';

/**
 * The Data API calls answered from the chain's node and from logs: native
 * balances, the indexed head, date → block, a contract's logs and decoded events, read-only
 * contract functions, ENS names
 * (engine/data-api/: native-balances, latest-block, block-times, contract-logs, run-function, ens).
 * Errors beyond the defaults: 502 where the chain's node is read and cannot be reached (common/node-reads.ts),
 * 503 where a page names a block the indexes do not hold yet (common/pages.ts).
 */
export function callsEndpoints(deps: DataDeps, opts: { ens: EnsConfig; clock: Clock }): DataEndpoint[] {
  return [
    {
      operation: 'getLatestBlockNumber',
      method: 'GET',
      path: '/latestBlockNumber/:chain',
      // The chain is the path's, checked here as the wrapper checks a `chain` query.
      chain: 'none',
      query: latestBlockQuery,
      responses: { 200: latestBlockAnswer },
      // 404: no block indexed yet.
      errors: [404],
      handle: async (req) => {
        const { chain: given } = validate(latestBlockQuery, req.params, 'chain');
        const chain = chainFor(given, 'data', opts.clock.now());
        if (deps.follower(chain.key) === undefined) throw notFollowed(chain);
        const { block, nodeHead } = await latestBlock(deps, chain.key);
        return json(200, block, nodeHead === undefined ? undefined : { [NODE_HEAD_HEADER]: String(nodeHead) });
      },
    },
    {
      ...queryEndpoint('getNativeBalance', 'GET', '/:address/balance', nativeBalanceQuery, (c, q) => nativeBalance(deps, c, q)),
      responses: { 200: nativeBalanceAnswer },
      errors: [502],
    },
    {
      operation: 'getNativeBalancesForAddresses',
      method: 'GET',
      path: '/wallets/balances',
      query: nativeBalancesQuery,
      responses: { 200: nativeBalancesAnswer },
      // 404: a to_block whose state the node no longer keeps.
      errors: [404, 502],
      handle: async (req, chain) => {
        const q = { ...queryAndPath(req), wallet_addresses: queryList(queryParams(req.query), 'wallet_addresses') };
        return json(200, await nativeBalances(deps, chain, validate(nativeBalancesQuery, q, 'query')));
      },
    },
    {
      operation: 'getDateToBlock',
      method: 'GET',
      path: '/dateToBlock',
      query: dateToBlockQuery,
      responses: { 200: dateToBlockAnswer },
      // 404: no block stored yet.
      errors: [404, 502],
      handle: async (req, chain) => {
        const q = validate(dateToBlockQuery, queryAndPath(req), 'query');
        await indexedTo(deps, chain.key);
        return json(200, await dateToBlock(deps, chain.key, q));
      },
    },
    {
      ...queryEndpoint('getContractLogs', 'GET', '/:address/logs', contractLogsQuery, (c, q) => contractLogs(deps, c, q)),
      responses: { 200: contractLogsAnswer },
      errors: [503],
    },
    {
      operation: 'getContractEvents',
      method: 'POST',
      path: '/:address/events',
      query: contractEventsQuery,
      body: contractEventsBody,
      responses: { 200: contractEventsAnswer },
      errors: [503],
      handle: async (req, chain) => {
        const q = validate(contractEventsQuery, queryAndPath(req), 'query');
        return json(200, await contractEvents(deps, chain.key, q, validate(contractEventsBody, req.body, 'abi')));
      },
    },
    {
      operation: 'runContractFunction',
      method: 'POST',
      path: '/:address/function',
      query: runFunctionQuery,
      body: runFunctionBody,
      responses: { 200: runFunctionAnswer },
      errors: [502],
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
      query: resolveDomainQuery,
      responses: { 200: resolveDomainAnswer },
      errors: [502],
      handle: async (req) => json(200, await resolveDomain(deps, opts.ens, validate(resolveDomainQuery, req.params, 'domain'))),
    },
    {
      operation: 'resolveDomain',
      method: 'GET',
      path: '/resolve/:domain',
      chain: 'none',
      query: resolveUnstoppableQuery,
      responses: { 200: resolveDomainAnswer },
      errors: [502],
      handle: async (req) => json(200, await resolveDomain(deps, opts.ens, validate(resolveUnstoppableQuery, queryAndPath(req), 'query'))),
    },
    {
      operation: 'resolveAddress',
      method: 'GET',
      path: '/resolve/:address/reverse',
      chain: 'none',
      query: resolveAddressQuery,
      responses: { 200: reverseNameAnswer },
      errors: [502],
      handle: async (req) => json(200, await reverseName(deps, opts.ens, validate(resolveAddressQuery, req.params, 'address'))),
    },
    {
      operation: 'resolveAddressToDomain',
      method: 'GET',
      path: '/resolve/:address/domain',
      chain: 'none',
      query: resolveAddressQuery,
      responses: { 200: reverseNameAnswer },
      errors: [502],
      handle: async (req) => json(200, await reverseName(deps, opts.ens, validate(resolveAddressQuery, req.params, 'address'))),
    },
  ];
}
