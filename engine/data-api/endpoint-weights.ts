import { ENDPOINT_REMOVALS, inEffect } from '../chains/removals.js';

/**
 * GET /info/endpointWeights: every operation of the interface's OpenAPI document
 * (operationId, method, path), less those removed by the service clock, with
 * what a request costs here. The hosted service's weights are not documented
 * (neither the OpenAPI nor the notes give them), so each counts as this
 * server's rate limiter counts it: one request (`rateLimitCost` 1); nothing is
 * billed (`price` 0). Strings, as the interface's schema says.
 */

type Operation = readonly [endpoint: string, method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string];

/** The OpenAPI document's operations, in its order (data-api-openapi-2.2.json). */
const OPERATIONS: readonly Operation[] = [
  ['getWalletNFTs', 'GET', '/{address}/nft'], ['getMultipleNFTs', 'POST', '/nft/getMultipleNFTs'],
  ['getWalletNFTTransfers', 'GET', '/{address}/nft/transfers'], ['getWalletNFTCollections', 'GET', '/{address}/nft/collections'],
  ['getContractNFTs', 'GET', '/nft/{address}'], ['getNFTOwners', 'GET', '/nft/{address}/owners'],
  ['getNFTContractTransfers', 'GET', '/nft/{address}/transfers'], ['getNFTByContractTraits', 'POST', '/nft/{address}/nfts-by-traits'],
  ['getNFTTraitsByCollection', 'GET', '/nft/{address}/traits'], ['getNFTTraitsByCollectionPaginate', 'GET', '/nft/{address}/traits/paginate'],
  ['resyncNFTRarity', 'GET', '/nft/{address}/traits/resync'], ['getNFTTrades', 'GET', '/nft/{address}/trades'],
  ['getNFTTradesByToken', 'GET', '/nft/{address}/{token_id}/trades'], ['getNFTTradesByWallet', 'GET', '/wallets/{address}/nfts/trades'],
  ['getNFTContractMetadata', 'GET', '/nft/{address}/metadata'], ['getNFTBulkContractMetadata', 'POST', '/nft/metadata'],
  ['getNFTMetadata', 'GET', '/nft/{address}/{token_id}'], ['getNFTTransfers', 'GET', '/nft/{address}/{token_id}/transfers'],
  ['getNFTTokenIdOwners', 'GET', '/nft/{address}/{token_id}/owners'], ['syncNFTContract', 'PUT', '/nft/{address}/sync'],
  ['reSyncMetadata', 'GET', '/nft/{address}/{token_id}/metadata/resync'], ['getNFTContractSalePrices', 'GET', '/nft/{address}/price'],
  ['getNFTSalePrices', 'GET', '/nft/{address}/{token_id}/price'], ['getTokenPrice', 'GET', '/erc20/{address}/price'],
  ['getSwapsByTokenAddress', 'GET', '/erc20/{address}/swaps'], ['getTokenHolders', 'GET', '/erc20/{tokenAddress}/holders'],
  ['getHistoricalTokenHolders', 'GET', '/erc20/{tokenAddress}/holders/historical'], ['getMultipleTokenPrices', 'POST', '/erc20/prices'],
  ['getTokenOwners', 'GET', '/erc20/{token_address}/owners'], ['getWalletTokenBalances', 'GET', '/{address}/erc20'],
  ['getWalletTokenTransfers', 'GET', '/{address}/erc20/transfers'], ['getTokenMetadata', 'GET', '/erc20/metadata'],
  ['getTokenMetadataBySymbol', 'GET', '/erc20/metadata/symbols'], ['getTokenTransfers', 'GET', '/erc20/{address}/transfers'],
  ['getNativeBalance', 'GET', '/{address}/balance'], ['getNativeBalancesForAddresses', 'GET', '/wallets/balances'],
  ['getWalletApprovals', 'GET', '/wallets/{address}/approvals'], ['getWalletHistory', 'GET', '/wallets/{address}/history'],
  ['getWalletTokenBalancesPrice', 'GET', '/wallets/{address}/tokens'], ['getWalletNetWorth', 'GET', '/wallets/{address}/net-worth'],
  ['getWalletTransactions', 'GET', '/{address}'], ['getWalletTransactionsVerbose', 'GET', '/{address}/verbose'],
  ['getTransaction', 'GET', '/transaction/{transaction_hash}'], ['getTransactionVerbose', 'GET', '/transaction/{transaction_hash}/verbose'],
  ['getBlock', 'GET', '/block/{block_number_or_hash}'], ['getLatestBlockNumber', 'GET', '/latestBlockNumber/{chain}'],
  ['getDateToBlock', 'GET', '/dateToBlock'], ['runContractFunction', 'POST', '/{address}/function'], ['web3ApiVersion', 'GET', '/web3/version'],
  ['endpointWeights', 'GET', '/info/endpointWeights'], ['resolveAddress', 'GET', '/resolve/{address}/reverse'],
  ['resolveDomain', 'GET', '/resolve/{domain}'], ['resolveAddressToDomain', 'GET', '/resolve/{address}/domain'],
  ['resolveENSDomain', 'GET', '/resolve/ens/{domain}'], ['getPairPrice', 'GET', '/{token0_address}/{token1_address}/price'],
  ['getPairReserves', 'GET', '/{pair_address}/reserves'], ['getPairAddress', 'GET', '/{token0_address}/{token1_address}/pairAddress'],
  ['getTopERC20TokensByMarketCap', 'GET', '/market-data/erc20s/top-tokens'],
  ['getTopERC20TokensByPriceMovers', 'GET', '/market-data/erc20s/top-movers'],
  ['getTopNFTCollectionsByMarketCap', 'GET', '/market-data/nfts/top-collections'],
  ['getHottestNFTCollectionsByTradingVolume', 'GET', '/market-data/nfts/hottest-collections'],
  ['getTopCryptoCurrenciesByMarketCap', 'GET', '/market-data/global/market-cap'],
  ['getTopCryptoCurrenciesByTradingVolume', 'GET', '/market-data/global/volume'], ['reviewContracts', 'POST', '/contracts-review'],
  ['getDefiSummary', 'GET', '/wallets/{address}/defi/summary'],
  ['getDefiPositionsByProtocol', 'GET', '/wallets/{address}/defi/{protocol}/positions'],
  ['getDefiPositionsSummary', 'GET', '/wallets/{address}/defi/positions'], ['getWalletActiveChains', 'GET', '/wallets/{address}/chains'],
  ['getWalletStats', 'GET', '/wallets/{address}/stats'], ['getNFTCollectionStats', 'GET', '/nft/{address}/stats'],
  ['getNFTFloorPriceByContract', 'GET', '/nft/{address}/floor-price'], ['getNFTFloorPriceByToken', 'GET', '/nft/{address}/{token_id}/floor-price'],
  ['getNFTHistoricalFloorPriceByContract', 'GET', '/nft/{address}/floor-price/historical'], ['getTokenStats', 'GET', '/erc20/{address}/stats'],
  ['getBlockStats', 'GET', '/block/{block_number_or_hash}/stats'], ['getFilteredTokens', 'POST', '/discovery/tokens'],
  ['getRisingLiquidityTokens', 'GET', '/discovery/tokens/rising-liquidity'], ['getBuyingPressureTokens', 'GET', '/discovery/tokens/buying-pressure'],
  ['getSolidPerformersTokens', 'GET', '/discovery/tokens/solid-performers'],
  ['getExperiencedBuyersTokens', 'GET', '/discovery/tokens/experienced-buyers'], ['getRiskyBetsTokens', 'GET', '/discovery/tokens/risky-bets'],
  ['getBlueChipTokens', 'GET', '/discovery/tokens/blue-chip'], ['getTopGainersTokens', 'GET', '/discovery/tokens/top-gainers'],
  ['getTopLosersTokens', 'GET', '/discovery/tokens/top-losers'], ['getTrendingTokens', 'GET', '/discovery/tokens/trending'],
  ['getDiscoveryToken', 'GET', '/discovery/token'], ['getWalletProfitabilitySummary', 'GET', '/wallets/{address}/profitability/summary'],
  ['getWalletProfitability', 'GET', '/wallets/{address}/profitability'], ['getTopProfitableWalletPerToken', 'GET', '/erc20/{address}/top-gainers'],
  ['searchTokens', 'GET', '/tokens/search'], ['searchEntities', 'GET', '/entities/search'], ['getEntity', 'GET', '/entities/{entityId}'],
  ['getEntityCategories', 'GET', '/entities/categories'], ['getEntitiesByCategory', 'GET', '/entities/categories/{categoryId}'],
  ['getPairCandlesticks', 'GET', '/pairs/{address}/ohlcv'], ['getPairStats', 'GET', '/pairs/{address}/stats'],
  ['getTokenPairs', 'GET', '/erc20/{token_address}/pairs'], ['getAggregatedTokenPairStats', 'GET', '/erc20/{token_address}/pairs/stats'],
  ['getNewTokensByExchange', 'GET', '/erc20/exchange/{exchangeName}/new'],
  ['getBondingTokensByExchange', 'GET', '/erc20/exchange/{exchangeName}/bonding'],
  ['getGraduatedTokensByExchange', 'GET', '/erc20/exchange/{exchangeName}/graduated'],
  ['getTokenBondingStatus', 'GET', '/erc20/{tokenAddress}/bondingStatus'], ['getSwapsByWalletAddress', 'GET', '/wallets/{address}/swaps'],
  ['getSwapsByPairAddress', 'GET', '/pairs/{address}/swaps'], ['getSnipersByPairAddress', 'GET', '/pairs/{address}/snipers'],
  ['getVolumeStatsByChain', 'GET', '/volume/chains'], ['getVolumeStatsByCategory', 'GET', '/volume/categories'],
  ['getTimeSeriesVolume', 'GET', '/volume/timeseries'], ['getTimeSeriesVolumeByCategory', 'GET', '/volume/timeseries/{categoryId}'],
  ['getTimeSeriesTokenAnalytics', 'POST', '/tokens/analytics/timeseries'], ['getTrendingTokensV2', 'GET', '/tokens/trending'],
  ['getTokenAnalytics', 'GET', '/tokens/{tokenAddress}/analytics'], ['getMultipleTokenAnalytics', 'POST', '/tokens/analytics'],
];

/** `/a/{b}` as a route pattern `/a/:b`. */
const pattern = (path: string): string => path.replace(/\{([^}]+)\}/g, ':$1');

/** Whether the removal table takes the operation away at `now` (a trailing `*` removes every path below). */
function removed(method: string, path: string, now: number): boolean {
  const p = pattern(path);
  return ENDPOINT_REMOVALS.some((r) => inEffect(r, now) && (r.method === 'ANY' || r.method === method) && (r.path.endsWith('*') ? p.startsWith(r.path.slice(0, -1)) : r.path === p));
}

export function endpointWeights(now: number) {
  return OPERATIONS.filter(([, method, path]) => !removed(method, path, now)).map(([endpoint, , path]) => ({ endpoint, path, price: '0', rateLimitCost: '1' }));
}
