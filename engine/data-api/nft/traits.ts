import { keccak256, toHex } from 'viem/utils';
import { z } from 'zod';
import { ApiError } from '../../errors.js';
import { rangePage } from '../../page.js';
import { pageAnswer } from '../common/answer-parts.js';
import { offsetCursor, readOffsetCursor } from '../common/pages.js';
import { bool, cursor, evmAddress, limit, order } from '../common/params.js';
import { format, indexedUpTo, type NftDeps } from './common.js';
import { statsKey, tokenOfKey, type NftToken } from './index/writer.js';
import { normalize } from './metadata.js';
import { nftAnswer, nftItem, resyncCollection } from './owned.js';
import { salePrices } from './transfers.js';

/**
 * NFT traits: the `attributes` of the metadata documents this server holds (engine/data-api/nft/metadata.ts) of a
 * collection's tokens that have a holder, counted when asked (docs/api.md, "NFT traits"). A token counts once per
 * trait type and value; `percentage` is its share of the collection's tokens whose document the server holds.
 */

/** GET /nft/:address/traits answers at most this many trait values (the hosted service's bound); the paginated list has none. */
const MAX_TRAITS = 5_000;
/** Tokens POST /nft/:address/nfts-by-traits reads for one page at most: past it the page is short and its cursor goes on. */
const MAX_SCAN = 10_000;
/** Trait types of one nfts-by-traits request (the hosted service's bound). */
const MAX_TRAIT_TYPES = 25;

export const traitsQuery = z.object({ address: evmAddress });
export const traitsPageQuery = z.object({ address: evmAddress, cursor, limit: limit(), order });
export const resyncTraitsQuery = z.object({ address: evmAddress });

const traitCount = {
  count: z.number().int().meta({ description: 'Tokens of the collection with this trait (those whose document the server holds)' }),
  percentage: z
    .number()
    .meta({ description: "Their share of the collection's tokens whose document the server holds, in percent, to 2 decimals" }),
  rarity_label: z.string().meta({ description: '`Top N% trait`: N is the percentage rounded up' }),
};
const traitValue = z.object({ trait_value: z.string(), ...traitCount });
const trait = z.object({ trait_type: z.string(), trait_value: z.string(), ...traitCount });
const groupedTraits = z.array(z.object({ trait_type: z.string(), values: z.array(traitValue) }));
/** GET /nft/:address/traits; `result` repeats `traits` (the hosted document describes `traits` and requires `result`). */
export const traitsAnswer = z.object({
  traits: groupedTraits,
  result: groupedTraits.meta({ description: 'The same list as `traits`' }),
});
export const traitsPageAnswer = pageAnswer(trait);
export const resyncTraitsAnswer = z.object({ status: z.string() });

type Trait = z.infer<typeof trait>;

/** An attribute value as trait_value: text as it is, numbers and booleans written out, objects as JSON; null: none. */
function valueText(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v);
}

/** A token's traits (`type\u0000value`, each once), from its stored document; undefined when the server holds none. */
function tokenTraits(deps: NftDeps, chain: string, contract: string, tokenId: bigint): Set<string> | undefined {
  const doc = deps.metadata.stored(chain, contract, tokenId)?.metadata ?? null;
  if (doc === null) return undefined;
  const out = new Set<string>();
  for (const a of normalize(doc)?.attributes ?? []) {
    const value = valueText(a.value);
    if (a.trait_type !== null && value !== null) out.add(`${a.trait_type}\u0000${value}`);
  }
  return out;
}

const notSeen = (chain: string, contract: string): ApiError =>
  new ApiError(404, `${contract} on chain ${chain} is not an NFT contract this server has seen`);

/** Every trait of the collection with its count, most common first (then by type and value). */
function tally(deps: NftDeps, chain: string, contract: string): Trait[] {
  if (!deps.kv.has('nftStats', statsKey(chain, contract))) throw notSeen(chain, contract);
  const prefix = `${chain}/${contract}/`;
  const counts = new Map<string, number>();
  let documents = 0;
  for (const { key } of deps.kv.range<NftToken>('nftTokens', { start: prefix, end: `${prefix}\uffff` })) {
    const traits = tokenTraits(deps, chain, contract, tokenOfKey(key).tokenId);
    if (traits === undefined) continue;
    documents++;
    for (const t of traits) counts.set(t, (counts.get(t) ?? 0) + 1);
  }
  const out = [...counts].map(([t, count]) => {
    const [trait_type, trait_value] = t.split('\u0000') as [string, string];
    const percentage = Math.round((count / documents) * 10_000) / 100;
    return { trait_type, trait_value, count, percentage, rarity_label: `Top ${Math.ceil(percentage)}% trait` };
  });
  return out.sort((a, b) => b.count - a.count || cmp(a.trait_type, b.trait_type) || cmp(a.trait_value, b.trait_value));
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** GET /nft/:address/traits: the collection's traits grouped by type (types in order, values most common first), at most MAX_TRAITS values. */
export async function traits(deps: NftDeps, chain: string, q: z.output<typeof traitsQuery>): Promise<z.infer<typeof traitsAnswer>> {
  await indexedUpTo(deps, chain);
  const byType = new Map<string, Array<z.infer<typeof traitValue>>>();
  for (const { trait_type, ...value } of tally(deps, chain, q.address).slice(0, MAX_TRAITS)) {
    const values = byType.get(trait_type);
    if (values === undefined) byType.set(trait_type, [value]);
    else values.push(value);
  }
  const grouped = [...byType].sort(([a], [b]) => cmp(a, b)).map(([trait_type, values]) => ({ trait_type, values }));
  return { traits: grouped, result: grouped };
}

/** GET /nft/:address/traits/paginate: every trait, by count (DESC: most common first), a page at a time. */
export async function traitsPage(
  deps: NftDeps,
  chain: string,
  q: z.output<typeof traitsPageQuery>,
): Promise<z.infer<typeof traitsPageAnswer>> {
  await indexedUpTo(deps, chain);
  const all = tally(deps, chain, q.address);
  if (q.order === 'ASC') all.reverse();
  const skip = q.cursor === null ? 0 : readOffsetCursor(q.cursor);
  return {
    page: Math.floor(skip / q.limit),
    page_size: q.limit,
    cursor: skip + q.limit < all.length ? offsetCursor(skip + q.limit) : null,
    result: all.slice(skip, skip + q.limit),
  };
}

/** GET /nft/:address/traits/resync: every token's metadata read again in the background (as PUT /nft/:address/sync). */
export async function resyncTraits(
  deps: NftDeps,
  chain: string,
  q: z.output<typeof resyncTraitsQuery>,
): Promise<z.infer<typeof resyncTraitsAnswer>> {
  await indexedUpTo(deps, chain);
  const n = resyncCollection(deps, chain, q.address);
  return {
    status: `Request submitted: the metadata of ${n} tokens of ${q.address} is being read again; the traits count each document once read`,
  };
}

export const nftsByTraitsQuery = z.object({
  address: evmAddress,
  limit: limit(),
  cursor,
  format,
  normalizeMetadata: bool(false),
  media_items: bool(false),
});
const wanted = z.union([z.string(), z.number(), z.boolean()]);
export const nftsByTraitsBody = z.object({
  traits: z
    .record(z.string(), z.union([wanted, z.array(wanted).min(1, 'at least one value')]))
    .refine((t) => Object.keys(t).length >= 1, 'at least one trait type')
    .refine((t) => Object.keys(t).length <= MAX_TRAIT_TYPES, `at most ${MAX_TRAIT_TYPES} trait types`),
});
export const nftsByTraitsAnswer = pageAnswer(nftAnswer);

/**
 * POST /nft/:address/nfts-by-traits: the collection's tokens (held, in token id order) whose document has, for each
 * trait type asked, one of its values (a value or a list of them).
 */
export async function nftsByTraits(
  deps: NftDeps,
  chain: string,
  q: z.output<typeof nftsByTraitsQuery>,
  body: z.output<typeof nftsByTraitsBody>,
) {
  await indexedUpTo(deps, chain);
  if (!deps.kv.has('nftStats', statsKey(chain, q.address))) throw notSeen(chain, q.address);
  const asked = Object.entries(body.traits).map(([type, v]) =>
    (Array.isArray(v) ? v : [v]).map((value) => `${type}\u0000${valueText(value)}`),
  );
  const matches = (key: string): boolean => {
    const has = tokenTraits(deps, chain, q.address, tokenOfKey(key).tokenId);
    return has !== undefined && asked.every((anyOf) => anyOf.some((t) => has.has(t)));
  };
  // The cursor names the traits asked (a hash: the list of values may be long).
  const list = `nfts-by-traits ${keccak256(toHex(JSON.stringify(body.traits))).slice(2, 18)}`;
  const page = rangePage<NftToken>(deps.kv, 'nftTokens', `${chain}/${q.address}/`, {
    list,
    limit: q.limit,
    reverse: false,
    cursor: q.cursor,
    keep: (_v, key) => matches(key),
    maxScan: MAX_SCAN,
  });
  const o = { normalize: q.normalizeMetadata, includePrices: false, prices: salePrices(deps, chain), format: q.format, minter: true };
  const result = await Promise.all(page.rows.map(({ key }) => nftItem(deps, chain, q.address, tokenOfKey(key).tokenId, null, o)));
  return { page: page.page, page_size: q.limit, cursor: page.cursor, result };
}
