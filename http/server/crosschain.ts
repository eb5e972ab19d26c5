import type { Clock } from '../../engine/clock.js';
import { findChain, type Chain, type ChainFamily } from '../../engine/chains/registry.js';
import { pathChain, resolveChains, type ResolvedChains } from '../../engine/crosschain/chains.js';
import { v1Block, v1Transaction } from '../../engine/crosschain/chain-data.js';
import { topTraders, v1PairOhlcv, v1PairSwaps, v1TokenSwaps } from '../../engine/crosschain/trades.js';
import { sparkline, timeseries } from '../../engine/crosschain/price-series.js';
import { BITCOIN, metaOf, v1TokenPrice } from '../../engine/crosschain/token-price.js';
import { walletAddresses } from '../../engine/bitcoin/xpub-wallet.js';
import { extendedKey } from '../../engine/bitcoin/stream.js';
import { validate } from '../../engine/schema.js';
import { z } from 'zod';
import type { DataDeps } from '../../engine/data-api/deps.js';
import { arrayParams, queryAndPath } from './data.js';
import { queryList, queryParams } from './query.js';
import { json, notBuilt, type Request, type Route } from './route.js';

/** GET /v1/chains/:chainAlias/wallets/:publicKey/addresses: the key (the path's other part is the chain, resolved apart). */
const walletAddressesPath = z.object({ publicKey: extendedKey });

const ALL_FAMILIES: readonly ChainFamily[] = ['evm', 'bitcoin', 'solana'];

/** The chains of a cross-chain request (`chains`, in any array form; none: all followed), resolved by engine/crosschain/chains.ts. */
export function requestChains(req: Request, followed: readonly string[], now: number, families = ALL_FAMILIES): ResolvedChains {
  return resolveChains(queryList(queryParams(req.query), 'chains'), { followed, families, now });
}

/** The cross-chain API (/v1): one request covers several chains, EVM, Bitcoin and Solana. `followed`: the chains this server follows. */
export function crossChainRoutes(clock: Clock, followed: () => readonly string[], deps: DataDeps, opts: { bitcoinGap: number }): Route[] {
  // Bitcoin's price is read on EVM chains: it needs no Bitcoin node.
  const priceChain = (req: Request): Chain => pathChain(req.params['chainAlias']!, { followed: [...followed(), BITCOIN.key], families: ['evm', 'bitcoin'], now: clock.now() });
  const evmChains = (): Chain[] => followed().flatMap((k) => (findChain(k)?.family === 'evm' ? [findChain(k)!] : []));
  // One chain's endpoints: chain data on any family the server follows, the DEX ones on an EVM chain.
  const oneChain = (families: readonly ChainFamily[], pattern: string, run: (chain: Chain, req: Request) => Promise<unknown>): Route => ({
    method: 'GET',
    pattern,
    area: 'crosschain',
    auth: 'key',
    handle: async (req) => json(200, await run(pathChain(req.params['chainAlias']!, { followed: followed(), families, now: clock.now() }), req)),
  });
  const withTypes = (req: Request) => ({ ...queryAndPath(req), ...arrayParams(req, ['transactionTypes']) });
  return [
    oneChain(ALL_FAMILIES, '/v1/chains/:chainAlias/blocks/:blockIdentifier', async (chain, req) => ({ ...(await v1Block(deps, chain, queryAndPath(req))), meta: metaOf(deps, [chain]) })),
    oneChain(ALL_FAMILIES, '/v1/chains/:chainAlias/transactions/:txHash', async (chain, req) => ({ ...(await v1Transaction(deps, chain, queryAndPath(req))), meta: metaOf(deps, [chain]) })),
    oneChain(['evm'], '/v1/chains/:chainAlias/tokens/:tokenAddress/swaps', (chain, req) => v1TokenSwaps(deps, chain, withTypes(req))),
    oneChain(['evm'], '/v1/chains/:chainAlias/tokens/:tokenAddress/top-traders', (chain, req) => topTraders(deps, chain, queryAndPath(req), Math.floor(clock.now() / 1000))),
    oneChain(['evm'], '/v1/chains/:chainAlias/pairs/:pairAddress/swaps', (chain, req) => v1PairSwaps(deps, chain, withTypes(req))),
    oneChain(['evm'], '/v1/chains/:chainAlias/pairs/:pairAddress/ohlcv', (chain, req) => v1PairOhlcv(deps, chain, queryAndPath(req))),
    {
      method: 'GET',
      pattern: '/v1/defi/protocols',
      area: 'crosschain',
      auth: 'key',
      handle: (req) => {
        requestChains(req, followed(), clock.now());
        return notBuilt('GET', '/v1/defi/protocols');
      },
    },
    {
      method: 'GET',
      pattern: '/v1/chains/:chainAlias/tokens/:tokenAliasOrTokenAddress/price',
      area: 'crosschain',
      auth: 'key',
      handle: async (req) => json(200, await v1TokenPrice(deps, priceChain(req), queryAndPath(req), evmChains())),
    },
    {
      method: 'GET',
      pattern: '/v1/chains/:chainAlias/tokens/:tokenAliasOrTokenAddress/price/timeseries',
      area: 'crosschain',
      auth: 'key',
      handle: async (req) => json(200, await timeseries(deps, priceChain(req), queryAndPath(req), evmChains(), Math.floor(clock.now() / 1000))),
    },
    {
      method: 'GET',
      pattern: '/v1/chains/:chainAlias/tokens/:tokenAliasOrTokenAddress/price/sparkline',
      area: 'crosschain',
      auth: 'key',
      handle: async (req) => json(200, await sparkline(deps, priceChain(req), queryAndPath(req), evmChains(), Math.floor(clock.now() / 1000))),
    },
    {
      method: 'GET',
      pattern: '/v1/chains/:chainAlias/wallets/:publicKey/addresses',
      area: 'crosschain',
      auth: 'key',
      handle: (req) => {
        const chain = pathChain(req.params['chainAlias']!, { followed: followed(), families: ['bitcoin'], now: clock.now() });
        const { publicKey } = validate(walletAddressesPath, req.params, 'path');
        const addresses = walletAddresses(deps.kv, chain.key, publicKey, opts.bitcoinGap).map(({ address, path, transfers }) => ({ address, path, transfers }));
        return json(200, { addresses, meta: metaOf(deps, [chain]) });
      },
    },
  ];
}
