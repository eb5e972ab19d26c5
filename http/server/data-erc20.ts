import type { z } from 'zod';
import type { DataDeps } from '../../engine/data-api/common/deps.js';
import {
  allowance,
  allowanceAnswer,
  allowanceQuery,
  approvalsAnswer,
  approvalsQuery,
  walletApprovals,
  walletErc20,
  walletErc20Answer,
  walletErc20Query,
  walletTokens,
  walletTokensAnswer,
  walletTokensQuery,
} from '../../engine/data-api/erc20/balances.js';
import {
  historicalAnswer,
  historicalHolders,
  historicalQuery,
  holdersAnswer,
  holdersQuery,
  ownersAnswer,
  ownersQuery,
  tokenHolders,
  tokenOwners,
} from '../../engine/data-api/erc20/holders.js';
import {
  metadataAnswer,
  metadataQuery,
  searchAnswer,
  searchChains,
  searchQuery,
  searchTokens,
  tokenMetadata,
} from '../../engine/data-api/erc20/tokens.js';
import {
  tokenTransfers,
  tokenTransfersQuery,
  transfersAnswer,
  walletTransfers,
  walletTransfersQuery,
} from '../../engine/data-api/erc20/transfers.js';
import { validate } from '../../engine/schema.js';
import { arrayParams, queryAndPath, queryList, type DataEndpoint } from './data.js';
import { json, type Request } from './route.js';

/**
 * The ERC-20 endpoints of the Data API (engine/data-api/erc20/ holds their logic and answers). Errors beyond the
 * defaults: 502 where a token's metadata or a view is read from a node that cannot be reached, 503 where a page of
 * transfers names a block the indexes do not hold yet.
 */

export function erc20Endpoints(deps: DataDeps): DataEndpoint[] {
  /** The query with the lists `lists` names (each present only when given), as `schema` checks it. */
  const query = <S extends z.ZodType>(req: Request, schema: S, lists: string[] = []): z.output<S> =>
    validate(schema, { ...queryAndPath(req), ...arrayParams(req, lists) }, 'query');
  return [
    {
      operation: 'getWalletTokenBalances',
      method: 'GET',
      path: '/:address/erc20',
      query: walletErc20Query,
      responses: { 200: walletErc20Answer },
      errors: [502],
      handle: async (req, c) => {
        const q = query(req, walletErc20Query, ['token_addresses']);
        return json(200, await walletErc20(deps, c.key, q, q.token_addresses ?? []));
      },
    },
    {
      operation: 'getWalletTokenBalancesPrice',
      method: 'GET',
      path: '/wallets/:address/tokens',
      query: walletTokensQuery,
      responses: { 200: walletTokensAnswer },
      errors: [502],
      handle: async (req, c) => {
        const q = query(req, walletTokensQuery, ['token_addresses']);
        return json(200, await walletTokens(deps, c.key, q, q.token_addresses ?? []));
      },
    },
    {
      operation: 'getWalletTokenTransfers',
      method: 'GET',
      path: '/:address/erc20/transfers',
      query: walletTransfersQuery,
      responses: { 200: transfersAnswer },
      errors: [502, 503],
      handle: async (req, c) => {
        const q = query(req, walletTransfersQuery, ['contract_addresses']);
        return json(200, await walletTransfers(deps, c.key, q, q.contract_addresses ?? []));
      },
    },
    {
      operation: 'getWalletApprovals',
      method: 'GET',
      path: '/wallets/:address/approvals',
      query: approvalsQuery,
      responses: { 200: approvalsAnswer },
      errors: [502],
      handle: async (req, c) => json(200, await walletApprovals(deps, c.key, query(req, approvalsQuery))),
    },
    {
      operation: 'getTokenTransfers',
      method: 'GET',
      path: '/erc20/:address/transfers',
      query: tokenTransfersQuery,
      responses: { 200: transfersAnswer },
      errors: [502, 503],
      handle: async (req, c) => json(200, await tokenTransfers(deps, c.key, query(req, tokenTransfersQuery))),
    },
    {
      operation: 'getTokenOwners',
      method: 'GET',
      path: '/erc20/:token_address/owners',
      query: ownersQuery,
      responses: { 200: ownersAnswer },
      errors: [502],
      handle: async (req, c) => json(200, await tokenOwners(deps, c.key, query(req, ownersQuery))),
    },
    {
      operation: 'getTokenHolders',
      method: 'GET',
      path: '/erc20/:tokenAddress/holders',
      query: holdersQuery,
      responses: { 200: holdersAnswer },
      errors: [502],
      handle: async (req, c) => json(200, await tokenHolders(deps, c.key, query(req, holdersQuery))),
    },
    {
      operation: 'getHistoricalTokenHolders',
      method: 'GET',
      path: '/erc20/:tokenAddress/holders/historical',
      query: historicalQuery,
      responses: { 200: historicalAnswer },
      errors: [502],
      handle: async (req, c) => json(200, await historicalHolders(deps, c.key, query(req, historicalQuery))),
    },
    {
      operation: 'getTokenMetadata',
      method: 'GET',
      path: '/erc20/metadata',
      query: metadataQuery,
      responses: { 200: metadataAnswer },
      errors: [502],
      // `addresses` always given to the schema: none at all is its "at least one address".
      handle: async (req, c) =>
        json(200, await tokenMetadata(deps, c.key, validate(metadataQuery, { addresses: queryList(req, 'addresses') }, 'query').addresses)),
    },
    {
      operation: 'getTokenAllowance',
      method: 'GET',
      path: '/erc20/:address/allowance',
      query: allowanceQuery,
      responses: { 200: allowanceAnswer },
      errors: [502],
      handle: async (req, c) => json(200, await allowance(deps, c.key, query(req, allowanceQuery))),
    },
    {
      operation: 'searchTokens',
      method: 'GET',
      path: '/tokens/search',
      chain: 'known',
      query: searchQuery,
      responses: { 200: searchAnswer },
      errors: [502],
      handle: async (req, c) => {
        const q = query(req, searchQuery);
        return json(200, await searchTokens(deps, searchChains(deps, q.chains, c.key), q));
      },
    },
  ];
}
