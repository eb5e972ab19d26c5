import { z } from 'zod';
import type { DataDeps } from '../../engine/data-api/common/deps.js';
import {
  allowance,
  allowanceQuery,
  approvalsQuery,
  walletApprovals,
  walletErc20,
  walletErc20Query,
  walletTokens,
  walletTokensQuery,
} from '../../engine/data-api/erc20/balances.js';
import {
  historicalHolders,
  historicalQuery,
  holdersQuery,
  ownersQuery,
  tokenHolders,
  tokenOwners,
} from '../../engine/data-api/erc20/holders.js';
import { addressList, searchChains, searchQuery, searchTokens, tokenMetadata } from '../../engine/data-api/erc20/tokens.js';
import { tokenTransfers, tokenTransfersQuery, walletTransfers, walletTransfersQuery } from '../../engine/data-api/erc20/transfers.js';
import { validate } from '../../engine/schema.js';
import { queryAndPath, queryList, type DataEndpoint } from './data.js';
import { json, type Request } from './route.js';

/** The ERC-20 endpoints of the Data API (engine/data-api/erc20-*.ts holds their logic). */

/** A list parameter's addresses, checked like the rest of the query. */
const addresses = (req: Request, name: string, min = 0): string[] => {
  const given = queryList(req, name);
  return given.length === 0 && min === 0 ? [] : validate(z.object({ [name]: addressList }), { [name]: given }, 'query')[name]!;
};

export function erc20Endpoints(deps: DataDeps): DataEndpoint[] {
  const q = (req: Request) => queryAndPath(req);
  return [
    {
      operation: 'getWalletTokenBalances',
      method: 'GET',
      path: '/:address/erc20',
      handle: async (req, c) =>
        json(200, await walletErc20(deps, c.key, validate(walletErc20Query, q(req), 'query'), addresses(req, 'token_addresses'))),
    },
    {
      operation: 'getWalletTokenBalancesPrice',
      method: 'GET',
      path: '/wallets/:address/tokens',
      handle: async (req, c) =>
        json(200, await walletTokens(deps, c.key, validate(walletTokensQuery, q(req), 'query'), addresses(req, 'token_addresses'))),
    },
    {
      operation: 'getWalletTokenTransfers',
      method: 'GET',
      path: '/:address/erc20/transfers',
      handle: async (req, c) =>
        json(
          200,
          await walletTransfers(deps, c.key, validate(walletTransfersQuery, q(req), 'query'), addresses(req, 'contract_addresses')),
        ),
    },
    {
      operation: 'getWalletApprovals',
      method: 'GET',
      path: '/wallets/:address/approvals',
      handle: async (req, c) => json(200, await walletApprovals(deps, c.key, validate(approvalsQuery, q(req), 'query'))),
    },
    {
      operation: 'getTokenTransfers',
      method: 'GET',
      path: '/erc20/:address/transfers',
      handle: async (req, c) => json(200, await tokenTransfers(deps, c.key, validate(tokenTransfersQuery, q(req), 'query'))),
    },
    {
      operation: 'getTokenOwners',
      method: 'GET',
      path: '/erc20/:token_address/owners',
      handle: async (req, c) => json(200, await tokenOwners(deps, c.key, validate(ownersQuery, q(req), 'query'))),
    },
    {
      operation: 'getTokenHolders',
      method: 'GET',
      path: '/erc20/:tokenAddress/holders',
      handle: async (req, c) => json(200, await tokenHolders(deps, c.key, validate(holdersQuery, q(req), 'query'))),
    },
    {
      operation: 'getHistoricalTokenHolders',
      method: 'GET',
      path: '/erc20/:tokenAddress/holders/historical',
      handle: async (req, c) => json(200, await historicalHolders(deps, c.key, validate(historicalQuery, q(req), 'query'))),
    },
    {
      operation: 'getTokenMetadata',
      method: 'GET',
      path: '/erc20/metadata',
      handle: async (req, c) => json(200, await tokenMetadata(deps, c.key, addresses(req, 'addresses', 1))),
    },
    {
      operation: 'getTokenAllowance',
      method: 'GET',
      path: '/erc20/:address/allowance',
      handle: async (req, c) => json(200, await allowance(deps, c.key, validate(allowanceQuery, q(req), 'query'))),
    },
    {
      operation: 'searchTokens',
      method: 'GET',
      path: '/tokens/search',
      chain: 'known',
      handle: async (req, c) => {
        const query = validate(searchQuery, q(req), 'query');
        return json(200, await searchTokens(deps, searchChains(deps, query.chains, c.key), query));
      },
    },
  ];
}
