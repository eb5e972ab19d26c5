import { keccak256, toHex } from 'viem/utils';
import { z } from 'zod';
import { ApiError } from '../../errors.js';
import { rangePage, type RangePage } from '../../page.js';
import { nftTokenPrefix } from '../../evm/store.js';
import { contractType, format, indexedUpTo, withTokenId, type NftDeps } from './common.js';
import {
  statsKey,
  tokenKey,
  tokenOfKey,
  type Collection,
  type ContractStats,
  type Holding,
  type NftToken,
  type Trade,
} from './index/writer.js';
import { normalize, normalizedMetadataAnswer, type NftMetadataRow } from './metadata.js';
import { lastSale, saleAnswer, salePrices, saleRecord, type SalePrices } from './transfers.js';
import { bool, cursor, evmAddress, limit } from '../common/params.js';
import { BATCH } from '../../size-limits.js';
import { metadata as tokenInfo } from '../common/node-reads.js';
import { offChain, pageAnswer } from '../common/answer-parts.js';

/**
 * The NFT endpoints answered from ownership (engine/data-api/nft/index/writer.ts): a
 * wallet's NFTs and collections, a contract's NFTs and owners, one token, many
 * tokens; each item the hosted service's `nftOwner`/`nft` record, its metadata
 * from the cache (engine/data-api/nft/metadata.ts). Pages read at most limit + 2
 * index entries.
 */

const intParam = z
  .string()
  .regex(/^\d{1,9}$/, 'a whole number')
  .transform(Number);

export const walletNftsQuery = z.object({
  address: evmAddress,
  format,
  limit: limit(),
  exclude_spam: bool(false),
  token_addresses: z.array(evmAddress).max(BATCH.nftAddresses, `at most ${BATCH.nftAddresses} addresses`).default([]),
  cursor,
  normalizeMetadata: bool(true),
  media_items: bool(false),
  include_prices: bool(false),
});

export const walletCollectionsQuery = z.object({
  address: evmAddress,
  include_prices: bool(false),
  limit: limit(),
  exclude_spam: bool(false),
  cursor,
  token_counts: bool(false),
});

export const contractNftsQuery = z.object({
  address: evmAddress,
  format,
  limit: limit(),
  totalRanges: intParam.optional(),
  range: intParam.optional(),
  cursor,
  normalizeMetadata: bool(true),
  media_items: bool(false),
  include_prices: bool(false),
});

export const contractOwnersQuery = z.object({
  address: evmAddress,
  format,
  limit: limit(),
  cursor,
  normalizeMetadata: bool(false),
  media_items: bool(false),
});

export const tokenQuery = z
  .object({
    address: evmAddress,
    token_id: z.string(),
    format,
    normalizeMetadata: bool(true),
    media_items: bool(false),
    include_prices: bool(false),
  })
  .transform(withTokenId);

export const tokenOwnersQuery = z
  .object({
    address: evmAddress,
    token_id: z.string(),
    format,
    limit: limit(),
    cursor,
    normalizeMetadata: bool(false),
    media_items: bool(false),
  })
  .transform(withTokenId);

export const MAX_MULTIPLE = BATCH.multipleNfts;
export const multipleNftsBody = z.object({
  tokens: z
    .array(
      z
        .object({
          token_address: evmAddress,
          token_id: z
            .string()
            .regex(/^\d{1,78}$/, 'a token id in decimal')
            .transform(BigInt)
            .refine((id) => id < 2n ** 256n, 'at most 2^256 − 1'),
        })
        .strict(),
    )
    .min(1, 'at least one token')
    .max(MAX_MULTIPLE, `at most ${MAX_MULTIPLE} tokens`),
  normalizeMetadata: z.boolean().default(true),
  media_items: z.boolean().default(false),
});

export const contractMetadataQuery = z.object({ address: evmAddress, include_prices: bool(false) });

const contractTypeAnswer = z.enum(['ERC721', 'ERC1155']);
const lastSaleAnswer = saleAnswer.nullable().optional().meta({ description: 'The last sale (include_prices=true)' });

/** The fields of an NFT record of either kind, as nftItem builds them (the kinds below say which each has). */
const nftRecord = z.object({
  token_address: z.string(),
  token_id: z.string(),
  contract_type: contractTypeAnswer,
  owner_of: z.string().nullable(),
  block_number: z.string().nullable(),
  block_number_minted: z.string().nullable(),
  minter_address: z.string().nullable().optional(),
  token_uri: z.string().nullable(),
  metadata: z.string().nullable().meta({ description: 'The metadata document, as JSON text; null until fetched' }),
  normalized_metadata: normalizedMetadataAnswer.nullable().optional().meta({ description: 'With normalizeMetadata=true' }),
  amount: z.string(),
  name: z.string(),
  symbol: z.string(),
  token_hash: z.string(),
  rarity_rank: z.null(),
  rarity_percentage: z.null(),
  rarity_label: offChain,
  last_token_uri_sync: z.string().nullable(),
  last_metadata_sync: z.string().nullable(),
  possible_spam: z.boolean(),
  verified_collection: z.boolean(),
  floor_price: offChain,
  floor_price_usd: offChain,
  floor_price_currency: offChain,
  last_sale: lastSaleAnswer,
});
export type NftRecord = z.infer<typeof nftRecord>;

/** A token: the hosted service's `nft` record (GET /nft/:address's items, GET /nft/:address/:token_id). */
export const nftAnswer = nftRecord.extend({
  owner_of: z.string().nullable().meta({ description: "An ERC-721 token's owner (null when none holds it); null for an ERC-1155 token" }),
  minter_address: z.string().nullable(),
});
/** One owner's holding of a token: the hosted service's `nftOwner` record (a wallet's NFTs, a contract's or a token's owners). */
const holdingAnswer = nftRecord.omit({ minter_address: true }).extend({ owner_of: z.string(), block_number: z.string() });
/** A page of tokens or holdings; status is always SYNCED here (the indexes are read as they stand). */
const syncedPage = <T extends z.ZodType>(item: T) => pageAnswer(item).extend({ status: z.literal('SYNCED') });
export const nftsAnswer = syncedPage(nftAnswer);
export const holdingsAnswer = syncedPage(holdingAnswer);
/** POST /nft/getMultipleNFTs: the tokens in the order asked, null for one never seen. */
export const multipleNftsAnswer = z.array(nftAnswer.nullable());

/** A contract as a collection (GET /:address/nft/collections' items). */
const collectionAnswer = z.object({
  token_address: z.string(),
  contract_type: contractTypeAnswer,
  name: z.string(),
  symbol: z.string(),
  possible_spam: z.boolean(),
  verified_collection: z.boolean(),
  collection_logo: offChain,
  collection_banner_image: offChain,
  floor_price: offChain,
  floor_price_usd: offChain,
  floor_price_currency: offChain,
  last_sale: lastSaleAnswer,
});
export const collectionsAnswer = pageAnswer(
  collectionAnswer.extend({ count: z.number().int().optional().meta({ description: "The wallet's tokens of it (token_counts=true)" }) }),
).extend({ status: z.literal('SYNCED') });
/** GET /nft/:address/metadata: the collection, and the contract-level fields nothing on chain says. */
export const contractMetadataAnswer = collectionAnswer.extend({
  synced_at: offChain,
  collection_category: offChain,
  project_url: offChain,
  wiki_url: offChain,
  discord_url: offChain,
  telegram_url: offChain,
  twitter_username: offChain,
  instagram_username: offChain,
});

export interface ItemOpts {
  normalize: boolean;
  includePrices: boolean;
  /** The request's sale prices (salePrices), for last_sale. */
  prices?: SalePrices | undefined;
  format: 'decimal' | 'hex';
  /** Contract-side answers carry minter_address. */
  minter?: boolean;
}

/** token_hash: 32 hex digits naming the token (the hosted service documents no input; this is keccak of chain/contract/id). */
const tokenHash = (chain: string, contract: string, id: bigint): string => keccak256(toHex(`${chain}/${contract}/${id}`)).slice(2, 34);

const idText = (id: bigint, f: 'decimal' | 'hex'): string => (f === 'hex' ? `0x${id.toString(16)}` : id.toString());

/** One NFT record: `holding` of `owner` (null: the token as a whole), metadata read the first time it is asked for. */
export async function nftItem(
  deps: NftDeps,
  chain: string,
  contract: string,
  id: bigint,
  owner: { address: string; holding: Holding } | null,
  o: ItemOpts,
): Promise<NftRecord> {
  const token = deps.kv.get<NftToken>('nftTokens', tokenKey(chain, contract, id));
  const kind = owner?.holding.kind ?? token?.kind ?? 'erc721';
  const [info, meta, sale] = await Promise.all([
    tokenInfo(deps, chain, contract),
    deps.metadata.ensure(chain, contract, id, kind),
    o.includePrices ? lastSale(deps, chain, contract, id, o.prices) : undefined,
  ]);
  const ownerOf = owner?.address ?? (kind === 'erc721' ? soleOwner(deps, chain, contract, id) : null);
  return {
    token_address: contract,
    token_id: idText(id, o.format),
    contract_type: contractType(kind),
    owner_of: ownerOf,
    block_number: owner !== null ? String(owner.holding.block) : token === undefined ? null : String(token.block),
    block_number_minted: token === undefined ? null : String(token.minted),
    ...(o.minter ? { minter_address: token?.minter ?? null } : {}),
    token_uri: meta?.uri ?? null,
    metadata: meta?.metadata ?? null,
    ...(o.normalize ? { normalized_metadata: normalize(meta?.metadata ?? null) } : {}),
    amount: BigInt(owner?.holding.amount ?? token?.supply ?? '0x0').toString(),
    name: info.name,
    symbol: info.symbol,
    token_hash: tokenHash(chain, contract, id),
    rarity_rank: null,
    rarity_percentage: null,
    rarity_label: null,
    last_token_uri_sync: syncTime(meta, 'uri'),
    last_metadata_sync: syncTime(meta, 'metadata'),
    possible_spam: info.possibleSpam,
    verified_collection: false,
    floor_price: null,
    floor_price_usd: null,
    floor_price_currency: null,
    ...(o.includePrices ? { last_sale: sale ?? null } : {}),
  };
}

function syncTime(meta: NftMetadataRow | undefined, which: 'uri' | 'metadata'): string | null {
  const at = which === 'uri' ? meta?.uriSync : meta?.metadataSync;
  return at === undefined || at === null ? null : new Date(at).toISOString();
}

/** The ERC-721 token's owner: its one holder. */
function soleOwner(deps: NftDeps, chain: string, contract: string, id: bigint): string | null {
  const prefix = `token/${nftTokenPrefix(chain, contract, id)}`;
  const [first] = deps.kv.range<Holding>('nftOwners', { start: prefix, end: `${prefix}\uffff`, limit: 1 });
  return first === undefined ? null : first.key.slice(prefix.length);
}

const envelope = <T>(page: RangePage<unknown>, pageSize: number, result: T[]) => ({
  status: 'SYNCED' as const,
  page: page.page,
  page_size: pageSize,
  cursor: page.cursor,
  result,
});

/** A page of `nftOwners` holdings (keys `token/…/owner` or `owner/…/contract/id`) as NFT records. */
async function holdingItems(deps: NftDeps, chain: string, rows: RangePage<Holding>['rows'], o: ItemOpts) {
  return Promise.all(
    rows.map(({ key, value }) => {
      const { contract, tokenId } = tokenOfKey(key);
      const address = key.startsWith('token/') ? key.slice(key.lastIndexOf('/') + 1) : key.split('/')[2]!;
      return nftItem(deps, chain, contract, tokenId, { address, holding: value }, o);
    }),
  );
}

/** Drops items of contracts flagged as possible spam (after the page is read: a page may then be short). */
const unlessSpam = <T extends { possible_spam: boolean }>(items: T[], exclude: boolean): T[] =>
  exclude ? items.filter((i) => !i.possible_spam) : items;

export async function walletNfts(deps: NftDeps, chain: string, q: z.output<typeof walletNftsQuery>) {
  await indexedUpTo(deps, chain);
  const base = `owner/${chain}/${q.address}/`;
  const prefixes = q.token_addresses.length === 0 ? base : [...new Set(q.token_addresses)].map((c) => `${base}${c}/`);
  const page = rangePage<Holding>(deps.kv, 'nftOwners', prefixes, {
    list: `wallet-nfts ${q.token_addresses.join(',')}`,
    limit: q.limit,
    reverse: false,
    cursor: q.cursor,
  });
  const items = await holdingItems(deps, chain, page.rows, {
    normalize: q.normalizeMetadata,
    includePrices: q.include_prices,
    prices: salePrices(deps, chain),
    format: q.format,
  });
  return envelope(page, q.limit, unlessSpam(items, q.exclude_spam));
}

export async function walletCollections(
  deps: NftDeps,
  chain: string,
  q: z.output<typeof walletCollectionsQuery>,
): Promise<z.infer<typeof collectionsAnswer>> {
  await indexedUpTo(deps, chain);
  const page = rangePage<Collection>(deps.kv, 'nftCollections', `${chain}/${q.address}/`, {
    list: 'wallet-collections',
    limit: q.limit,
    reverse: false,
    cursor: q.cursor,
  });
  const prices = salePrices(deps, chain);
  const items = await Promise.all(
    page.rows.map(async ({ key, value }) => {
      const contract = key.slice(key.lastIndexOf('/') + 1);
      return {
        ...(await collectionFields(deps, chain, contract, value.kind, q.include_prices, prices)),
        ...(q.token_counts ? { count: value.count } : {}),
      };
    }),
  );
  return envelope(page, q.limit, unlessSpam(items, q.exclude_spam));
}

/** A contract as a collection: its name and symbol by eth_call, its standard, and (include_prices) its last trade. */
async function collectionFields(
  deps: NftDeps,
  chain: string,
  contract: string,
  kind: string,
  includePrices: boolean,
  prices: SalePrices | undefined,
): Promise<z.infer<typeof collectionAnswer>> {
  const info = await tokenInfo(deps, chain, contract);
  const fields = {
    token_address: contract,
    contract_type: contractType(kind),
    name: info.name,
    symbol: info.symbol,
    possible_spam: info.possibleSpam,
    verified_collection: false,
    collection_logo: null,
    collection_banner_image: null,
    floor_price: null,
    floor_price_usd: null,
    floor_price_currency: null,
  };
  if (!includePrices) return fields;
  const prefix = `contract/${chain}/${contract}/`;
  const [last] = deps.kv.range<Trade>('nftTrades', { start: `${prefix}\uffff`, end: prefix, reverse: true, limit: 1 });
  return {
    ...fields,
    last_sale:
      last === undefined
        ? null
        : await saleRecord(deps, chain, contract, last.value.tokenIds[0]!, last.value, last.value.blockNumber, prices),
  };
}

export async function contractNfts(deps: NftDeps, chain: string, q: z.output<typeof contractNftsQuery>) {
  await indexedUpTo(deps, chain);
  const page = rangePage<NftToken>(deps.kv, 'nftTokens', `${chain}/${q.address}/`, {
    list: 'contract-nfts',
    limit: q.limit,
    reverse: false,
    cursor: q.cursor,
  });
  const o = {
    normalize: q.normalizeMetadata,
    includePrices: q.include_prices,
    prices: salePrices(deps, chain),
    format: q.format,
    minter: true,
  };
  const result = await Promise.all(page.rows.map(({ key }) => nftItem(deps, chain, q.address, tokenOfKey(key).tokenId, null, o)));
  return envelope(page, q.limit, result);
}

export async function contractOwners(deps: NftDeps, chain: string, q: z.output<typeof contractOwnersQuery>) {
  await indexedUpTo(deps, chain);
  const page = rangePage<Holding>(deps.kv, 'nftOwners', `token/${chain}/${q.address}/`, {
    list: 'contract-owners',
    limit: q.limit,
    reverse: false,
    cursor: q.cursor,
  });
  return envelope(
    page,
    q.limit,
    await holdingItems(deps, chain, page.rows, { normalize: q.normalizeMetadata, includePrices: false, format: q.format }),
  );
}

export async function tokenOwners(deps: NftDeps, chain: string, q: z.output<typeof tokenOwnersQuery>) {
  await indexedUpTo(deps, chain);
  const page = rangePage<Holding>(deps.kv, 'nftOwners', `token/${nftTokenPrefix(chain, q.address, q.tokenId)}`, {
    list: 'token-owners',
    limit: q.limit,
    reverse: false,
    cursor: q.cursor,
  });
  return envelope(
    page,
    q.limit,
    await holdingItems(deps, chain, page.rows, { normalize: q.normalizeMetadata, includePrices: false, format: q.format }),
  );
}

/** Whether the index has seen the token (it has holders, or it moved and was burned). */
function known(deps: NftDeps, chain: string, contract: string, id: bigint): boolean {
  if (deps.kv.has('nftTokens', tokenKey(chain, contract, id))) return true;
  const prefix = `nft/${nftTokenPrefix(chain, contract, id)}`;
  return deps.kv.range('transfers', { start: prefix, end: `${prefix}\uffff`, limit: 1 }).length > 0;
}

export async function token(deps: NftDeps, chain: string, q: z.output<typeof tokenQuery>): Promise<NftRecord> {
  await indexedUpTo(deps, chain);
  if (!known(deps, chain, q.address, q.tokenId))
    throw new ApiError(404, `no NFT ${q.tokenId} of ${q.address} on chain ${chain} (no transfer of it indexed)`);
  return nftItem(deps, chain, q.address, q.tokenId, null, {
    normalize: q.normalizeMetadata,
    includePrices: q.include_prices,
    prices: salePrices(deps, chain),
    format: q.format,
    minter: true,
  });
}

/** POST /nft/getMultipleNFTs: the tokens in the order asked, null for one never seen. */
export async function multipleNfts(
  deps: NftDeps,
  chain: string,
  body: z.output<typeof multipleNftsBody>,
): Promise<Array<NftRecord | null>> {
  await indexedUpTo(deps, chain);
  return Promise.all(
    body.tokens.map((t) =>
      known(deps, chain, t.token_address, t.token_id)
        ? nftItem(deps, chain, t.token_address, t.token_id, null, {
            normalize: body.normalizeMetadata,
            includePrices: false,
            format: 'decimal',
            minter: true,
          })
        : null,
    ),
  );
}

export async function contractMetadata(
  deps: NftDeps,
  chain: string,
  q: z.output<typeof contractMetadataQuery>,
): Promise<z.infer<typeof contractMetadataAnswer>> {
  await indexedUpTo(deps, chain);
  const found = await collectionMetadata(deps, chain, q.address, q.include_prices, salePrices(deps, chain));
  if (found === null) throw notSeen(chain, q.address);
  return found;
}

const notSeen = (chain: string, contract: string): ApiError =>
  new ApiError(404, `${contract} on chain ${chain} is not an NFT contract this server has seen`);

const MAX_CONTRACTS = BATCH.nftContracts;
export const bulkContractMetadataQuery = z.object({ include_prices: bool(false) });
export const bulkContractMetadataBody = z.object({
  addresses: z.array(evmAddress).min(1, 'at least one address').max(MAX_CONTRACTS, `at most ${MAX_CONTRACTS} addresses`),
});
/** POST /nft/metadata: the contracts in the order asked, null for one that is not an NFT contract this server has seen. */
export const bulkContractMetadataAnswer = z.array(contractMetadataAnswer.nullable());

/** POST /nft/metadata: GET /nft/:address/metadata of each address. */
export async function bulkContractMetadata(
  deps: NftDeps,
  chain: string,
  q: z.output<typeof bulkContractMetadataQuery>,
  body: z.output<typeof bulkContractMetadataBody>,
): Promise<z.infer<typeof bulkContractMetadataAnswer>> {
  await indexedUpTo(deps, chain);
  const prices = salePrices(deps, chain);
  return Promise.all(body.addresses.map((a) => collectionMetadata(deps, chain, a, q.include_prices, prices)));
}

/** A contract's metadata answer; null when it is not an NFT contract this server has seen (no transfer indexed, no NFT interface). */
async function collectionMetadata(
  deps: NftDeps,
  chain: string,
  contract: string,
  includePrices: boolean,
  prices: SalePrices | undefined,
): Promise<z.infer<typeof contractMetadataAnswer> | null> {
  const stats = deps.kv.get<ContractStats>('nftStats', statsKey(chain, contract));
  const info = await tokenInfo(deps, chain, contract);
  if (stats === undefined && info.nftStandard === '') return null;
  const kind = stats?.kind ?? (info.nftStandard === 'ERC721' ? 'erc721' : 'erc1155');
  // The collection's fields, and the contract-level ones nothing on chain says.
  return {
    ...(await collectionFields(deps, chain, contract, kind, includePrices, prices)),
    synced_at: null,
    collection_category: null,
    project_url: null,
    wiki_url: null,
    discord_url: null,
    telegram_url: null,
    twitter_username: null,
    instagram_username: null,
  };
}

export const resyncQuery = z
  .object({
    address: evmAddress,
    token_id: z.string(),
    format,
    flag: z.enum(['uri', 'metadata'], 'uri or metadata').default('uri'),
    mode: z.enum(['async', 'sync'], 'async or sync').default('async'),
  })
  .transform(withTokenId);
/** 202 in async mode (the read is queued), 200 in sync mode with how it went. */
export const resyncAnswer = z.object({ status: z.string() });

/** GET /nft/:address/:token_id/metadata/resync: reads the URI (flag=uri) and fetches the document again; sync mode waits for it. */
export async function resync(deps: NftDeps, chain: string, q: z.output<typeof resyncQuery>): Promise<z.infer<typeof resyncAnswer>> {
  await indexedUpTo(deps, chain);
  const kind =
    deps.kv.get<NftToken>('nftTokens', tokenKey(chain, q.address, q.tokenId))?.kind ??
    deps.kv.get<ContractStats>('nftStats', statsKey(chain, q.address))?.kind;
  if (kind === undefined) throw new ApiError(404, `no NFT ${q.tokenId} of ${q.address} on chain ${chain} (no transfer of it indexed)`);
  const row = await deps.metadata.resync(chain, q.address, q.tokenId, kind, q.flag, q.mode === 'sync');
  if (q.mode === 'async') return { status: 'Request submitted' };
  return {
    status:
      row === undefined
        ? 'the node could not be reached'
        : row.state === 'failed'
          ? `failed: ${row.error ?? ''}`
          : row.state === 'unfetched'
            ? 'unfetched: no IPFS gateway configured'
            : 'Metadata synced',
  };
}

export const syncQuery = z.object({ address: evmAddress });
export const syncAnswer = z.object({ message: z.string() });

/** PUT /nft/:address/sync: every token of the contract gets its URI read and document fetched again, in the background. */
export async function syncContract(deps: NftDeps, chain: string, q: z.output<typeof syncQuery>): Promise<z.infer<typeof syncAnswer>> {
  await indexedUpTo(deps, chain);
  return { message: `the metadata of ${resyncCollection(deps, chain, q.address)} tokens of ${q.address} is being read again` };
}

/**
 * Reads the URI and fetches the document of every token of the contract again, in the background, one at a time
 * (PUT /nft/:address/sync, GET /nft/:address/traits/resync); returns how many tokens. 404 for a contract never seen.
 */
export function resyncCollection(deps: NftDeps, chain: string, contract: string): number {
  if (!deps.kv.has('nftStats', statsKey(chain, contract))) throw notSeen(chain, contract);
  const prefix = `${chain}/${contract}/`;
  const ids = deps.kv
    .range<NftToken>('nftTokens', { start: prefix, end: `${prefix}\uffff` })
    .map((e) => ({ id: tokenOfKey(e.key).tokenId, kind: e.value.kind }));
  void (async () => {
    for (const { id, kind } of ids) await deps.metadata.resync(chain, contract, id, kind, 'uri', false).catch(() => undefined);
  })();
  return ids.length;
}
