import type { Clock } from '../../engine/clock.js';
import type { NftDeps } from '../../engine/data-api/nft/common.js';
import {
  blockTransfers,
  blockTransfersQuery,
  contractTransfers,
  contractTransfersQuery,
  rangeTransfers,
  rangeTransfersQuery,
  walletTransfers,
  walletTransfersQuery,
} from '../../engine/data-api/nft/lists.js';
import * as owned from '../../engine/data-api/nft/owned.js';
import * as floor from '../../engine/data-api/nft/floor.js';
import * as traits from '../../engine/data-api/nft/traits.js';
import * as trades from '../../engine/data-api/nft/trades.js';
import { nftTransfers, nftTransfersAnswer, nftTransfersQuery } from '../../engine/data-api/nft/transfers.js';
import { validate } from '../../engine/schema.js';
import type { z } from 'zod';
import { queryAndPath, queryEndpoint, type DataEndpoint } from './data.js';
import { json, type Method } from './route.js';

/** A POST endpoint whose query (and path) and body are checked by their schemas, answered 200 with what `run` returns. */
function bodyEndpoint<Q extends z.ZodType, B extends z.ZodType>(
  operation: string,
  path: string,
  query: Q,
  body: B,
  run: (chain: string, q: z.output<Q>, b: z.output<B>) => unknown,
): Pick<DataEndpoint, 'operation' | 'method' | 'path' | 'query' | 'body' | 'handle'> {
  const method: Method = 'POST';
  return {
    operation,
    method,
    path,
    query,
    body,
    async handle(req, chain) {
      const q = validate(query, queryAndPath(req), 'query');
      return json(200, await run(chain.key, q, validate(body, req.body, 'body')));
    },
  };
}

/**
 * The NFT endpoints of the Data API (docs/api.md, NFTs): ownership, metadata, transfer lists, trades and statistics;
 * handlers in engine/data-api/nft/, beside the schemas of their answers. Those naming a contract read its name and
 * symbol from the chain's node the first time (502 when it cannot be reached).
 */

export function nftEndpoints(deps: NftDeps, clock: Clock): DataEndpoint[] {
  const NODE = [502];
  return [
    {
      ...queryEndpoint('getWalletNFTs', 'GET', '/:address/nft', owned.walletNftsQuery, (c, q) => owned.walletNfts(deps, c, q), {
        lists: ['token_addresses'],
      }),
      responses: { 200: owned.holdingsAnswer },
      errors: NODE,
    },
    {
      ...queryEndpoint('getWalletNFTCollections', 'GET', '/:address/nft/collections', owned.walletCollectionsQuery, (c, q) =>
        owned.walletCollections(deps, c, q),
      ),
      responses: { 200: owned.collectionsAnswer },
      errors: NODE,
    },
    {
      ...queryEndpoint(
        'getWalletNFTTransfers',
        'GET',
        '/:address/nft/transfers',
        walletTransfersQuery,
        (c, q) => walletTransfers(deps, c, q),
        {
          lists: ['contract_addresses'],
        },
      ),
      responses: { 200: nftTransfersAnswer },
      errors: NODE,
    },
    {
      ...queryEndpoint('getNFTTransfersFromToBlock', 'GET', '/nft/transfers', rangeTransfersQuery, (c, q) => rangeTransfers(deps, c, q)),
      responses: { 200: nftTransfersAnswer },
      errors: NODE,
    },
    {
      ...queryEndpoint('getNFTTransfers', 'GET', '/nft/:address/:token_id/transfers', nftTransfersQuery, (c, q) =>
        nftTransfers(deps, c, q),
      ),
      responses: { 200: nftTransfersAnswer },
      errors: NODE,
    },
    {
      ...queryEndpoint('getNFTTransfersByBlock', 'GET', '/block/:block_number_or_hash/nft/transfers', blockTransfersQuery, (c, q) =>
        blockTransfers(deps, c, q),
      ),
      responses: { 200: nftTransfersAnswer },
      errors: NODE,
    },
    {
      ...queryEndpoint('getContractNFTs', 'GET', '/nft/:address', owned.contractNftsQuery, (c, q) => owned.contractNfts(deps, c, q)),
      responses: { 200: owned.nftsAnswer },
      errors: NODE,
    },
    {
      ...queryEndpoint('getNFTOwners', 'GET', '/nft/:address/owners', owned.contractOwnersQuery, (c, q) =>
        owned.contractOwners(deps, c, q),
      ),
      responses: { 200: owned.holdingsAnswer },
      errors: NODE,
    },
    {
      ...queryEndpoint('getNFTContractMetadata', 'GET', '/nft/:address/metadata', owned.contractMetadataQuery, (c, q) =>
        owned.contractMetadata(deps, c, q),
      ),
      responses: { 200: owned.contractMetadataAnswer },
      errors: NODE,
    },
    {
      ...queryEndpoint('getNFTContractTransfers', 'GET', '/nft/:address/transfers', contractTransfersQuery, (c, q) =>
        contractTransfers(deps, c, q),
      ),
      responses: { 200: nftTransfersAnswer },
      errors: NODE,
    },
    {
      ...queryEndpoint('getNFTTrades', 'GET', '/nft/:address/trades', trades.contractTradesQuery, (c, q) =>
        trades.contractTrades(deps, c, q),
      ),
      responses: { 200: trades.tradesAnswer },
    },
    {
      ...queryEndpoint('getNFTTradesByWallet', 'GET', '/wallets/:address/nfts/trades', trades.walletTradesQuery, (c, q) =>
        trades.walletTrades(deps, c, q),
      ),
      responses: { 200: trades.tradesAnswer },
    },
    {
      ...queryEndpoint('getNFTLowestPrice', 'GET', '/nft/:address/lowestprice', trades.lowestPriceQuery, (c, q) =>
        trades.lowestPrice(deps, c, q, clock.now()),
      ),
      responses: { 200: trades.tradeAnswer },
    },
    {
      ...queryEndpoint('getNFTCollectionStats', 'GET', '/nft/:address/stats', trades.contractStatsQuery, (c, q) =>
        trades.contractStats(deps, c, q),
      ),
      responses: { 200: trades.contractStatsAnswer },
    },
    // Before /nft/:address/:token_id, which `price` would otherwise fall into as a token id.
    {
      ...queryEndpoint('getNFTContractSalePrices', 'GET', '/nft/:address/price', trades.contractSoldPriceQuery, (c, q) =>
        trades.contractSoldPrice(deps, c, q, clock.now()),
      ),
      responses: { 200: trades.soldPriceAnswer },
    },
    {
      ...queryEndpoint('getNFTTraitsByCollection', 'GET', '/nft/:address/traits', traits.traitsQuery, (c, q) => traits.traits(deps, c, q)),
      responses: { 200: traits.traitsAnswer },
    },
    {
      ...queryEndpoint('getNFTTraitsByCollectionPaginate', 'GET', '/nft/:address/traits/paginate', traits.traitsPageQuery, (c, q) =>
        traits.traitsPage(deps, c, q),
      ),
      responses: { 200: traits.traitsPageAnswer },
    },
    {
      ...queryEndpoint(
        'resyncNFTRarity',
        'GET',
        '/nft/:address/traits/resync',
        traits.resyncTraitsQuery,
        (c, q) => traits.resyncTraits(deps, c, q),
        { status: () => 202 },
      ),
      responses: { 202: traits.resyncTraitsAnswer },
    },
    {
      ...bodyEndpoint(
        'getNFTByContractTraits',
        '/nft/:address/nfts-by-traits',
        traits.nftsByTraitsQuery,
        traits.nftsByTraitsBody,
        (c, q, b) => traits.nftsByTraits(deps, c, q, b),
      ),
      responses: { 200: traits.nftsByTraitsAnswer },
      errors: NODE,
    },
    {
      ...bodyEndpoint(
        'getNFTBulkContractMetadata',
        '/nft/metadata',
        owned.bulkContractMetadataQuery,
        owned.bulkContractMetadataBody,
        (c, q, b) => owned.bulkContractMetadata(deps, c, q, b),
      ),
      responses: { 200: owned.bulkContractMetadataAnswer },
      errors: NODE,
    },
    // Sale-based floors (engine/data-api/nft/floor.ts): listings are off chain.
    {
      ...queryEndpoint('getNFTFloorPriceByContract', 'GET', '/nft/:address/floor-price', floor.floorQuery, (c, q) =>
        floor.contractFloor(deps, c, q, clock.now()),
      ),
      responses: { 200: floor.contractFloorAnswer },
    },
    {
      ...queryEndpoint('getNFTFloorPriceByToken', 'GET', '/nft/:address/:token_id/floor-price', floor.tokenFloorQuery, (c, q) =>
        floor.tokenFloor(deps, c, q, clock.now()),
      ),
      responses: { 200: floor.tokenFloorAnswer },
    },
    {
      ...queryEndpoint(
        'getNFTHistoricalFloorPriceByContract',
        'GET',
        '/nft/:address/floor-price/historical',
        floor.historicalFloorQuery,
        (c, q) => floor.historicalFloor(deps, c, q, clock.now()),
      ),
      responses: { 200: floor.historicalFloorAnswer },
    },
    {
      ...queryEndpoint('syncNFTContract', 'PUT', '/nft/:address/sync', owned.syncQuery, (c, q) => owned.syncContract(deps, c, q), {
        status: () => 201,
      }),
      responses: { 201: owned.syncAnswer },
    },
    {
      ...queryEndpoint('getNFTMetadata', 'GET', '/nft/:address/:token_id', owned.tokenQuery, (c, q) => owned.token(deps, c, q)),
      responses: { 200: owned.nftAnswer },
      errors: NODE,
    },
    {
      ...queryEndpoint('getNFTTokenIdOwners', 'GET', '/nft/:address/:token_id/owners', owned.tokenOwnersQuery, (c, q) =>
        owned.tokenOwners(deps, c, q),
      ),
      responses: { 200: owned.holdingsAnswer },
      errors: NODE,
    },
    {
      ...queryEndpoint('getNFTTradesByToken', 'GET', '/nft/:address/:token_id/trades', trades.tokenTradesQuery, (c, q) =>
        trades.tokenTrades(deps, c, q),
      ),
      responses: { 200: trades.tradesAnswer },
    },
    {
      ...queryEndpoint('getNFTTokenStats', 'GET', '/nft/:address/:token_id/stats', trades.tokenStatsQuery, (c, q) =>
        trades.tokenStats(deps, c, q),
      ),
      responses: { 200: trades.tokenStatsAnswer },
    },
    {
      ...queryEndpoint('getNFTSalePrices', 'GET', '/nft/:address/:token_id/price', trades.tokenSoldPriceQuery, (c, q) =>
        trades.tokenSoldPrice(deps, c, q, clock.now()),
      ),
      responses: { 200: trades.soldPriceAnswer },
    },
    {
      ...queryEndpoint(
        'reSyncMetadata',
        'GET',
        '/nft/:address/:token_id/metadata/resync',
        owned.resyncQuery,
        (c, q) => owned.resync(deps, c, q),
        { status: (q) => (q.mode === 'async' ? 202 : 200) },
      ),
      responses: { 200: owned.resyncAnswer, 202: owned.resyncAnswer },
    },
    {
      operation: 'getMultipleNFTs',
      method: 'POST',
      path: '/nft/getMultipleNFTs',
      body: owned.multipleNftsBody,
      responses: { 200: owned.multipleNftsAnswer },
      errors: NODE,
      async handle(req, chain) {
        return json(200, await owned.multipleNfts(deps, chain.key, validate(owned.multipleNftsBody, req.body, 'body')));
      },
    },
  ];
}
