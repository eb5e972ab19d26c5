import { z } from 'zod';
import bs58 from 'bs58';
import { badRequest } from '../errors.js';
import type { StreamFamily } from '../streams/family.js';
import { streamAnswerFields } from '../streams/responses.js';
import { isErrorSince, type StreamCommon, type StreamState } from '../streams/model.js';
import {
  ADDRESSES_PER_CALL,
  addressList,
  BITCOIN_ONLY_FIELDS,
  commonDefaults,
  commonFields,
  EVM_ONLY_FIELDS,
  mainnetOnly,
  refusedFields,
  updateOf,
} from '../streams/schemas.js';

/**
 * The Solana stream resource (notes §2.2): the shared fields plus network
 * (["mainnet"] only), programIds, mintAddresses and allAddresses. Addresses are
 * attached through /address, never on create. Every key is base58 of 32 bytes
 * and case-sensitive: it is stored and matched exactly as given.
 */
export interface SolanaStreamDefinition extends StreamCommon {
  network: ['mainnet'];
  programIds: string[];
  mintAddresses: string[];
  allAddresses: boolean;
}

/** A Solana stream as stored (what the block endpoints and the body builder will read). */
export type SolanaStreamRecord = SolanaStreamDefinition & StreamState & { family: 'solana' };

/** The store's chain key for Solana mainnet (engine/chains/registry.ts). */
export const SOLANA_CHAIN = 'solana';

const NOT_BASE58 = /[^1-9A-HJ-NP-Za-km-z]/;

/**
 * Why `text` is not a Solana key (an account, program or mint: base58 of exactly
 * 32 bytes), or undefined when it is one. Base58 is case-sensitive, so a
 * lower-cased key may still decode, to another key: it is taken as given.
 */
export function solanaKeyError(text: string): string | undefined {
  const bad = text.search(NOT_BASE58);
  if (bad >= 0) return `'${text[bad]}' at ${bad} is not a base58 character (base58 has no 0, O, I or l)`;
  // 32 bytes take 32 to 44 characters: checked before decoding, which is quadratic in the length.
  if (text.length < 32 || text.length > 44) return `${text.length} characters, a 32-byte key has 32 to 44`;
  const n = bs58.decodeUnsafe(text)?.length ?? 0;
  return n === 32 ? undefined : `decodes to ${n} bytes, a key has 32`;
}

/** A key in a 400: a very long text is cut short. */
const shown = (text: string): string => (text.length > 64 ? `${text.slice(0, 64)}…` : text);

const solanaKey = z.string({ error: 'a base58 key of 32 bytes' }).superRefine((text, ctx) => {
  const why = solanaKeyError(text);
  if (why !== undefined) ctx.addIssue({ code: 'custom', message: `${shown(text)} is not a Solana key (base58 of 32 bytes): ${why}` });
});

/** programIds and mintAddresses live in the stream record: as many as one address call may name. */
const keys = z
  .array(solanaKey, { error: 'an array of base58 keys' })
  .max(ADDRESSES_PER_CALL, `at most ${ADDRESSES_PER_CALL.toLocaleString('en-US')} keys`);

/** Devnet is in the hosted enum; chainpost follows mainnet only. */
const network = mainnetOnly('Solana');

/** Fields of the other families, refused by name. */
const otherFamilies = {
  ...refusedFields(EVM_ONLY_FIELDS, 'an EVM stream field: a Solana stream does not take it'),
  ...refusedFields(BITCOIN_ONLY_FIELDS, 'a Bitcoin stream field: a Solana stream does not take it'),
};

// In the interface's order: with several bad fields, the first is the one named.
const fields = {
  webhookUrl: commonFields.webhookUrl,
  description: commonFields.description,
  tag: commonFields.tag,
  network,
  programIds: keys,
  mintAddresses: keys,
  allAddresses: commonFields.allAddresses,
  demo: commonFields.demo,
};

/** PUT /streams/solana: webhookUrl required; network defaults to ["mainnet"], programIds and mintAddresses to []. */
export const createSolanaStream = z.object({
  webhookUrl: commonDefaults.webhookUrl,
  description: commonDefaults.description,
  tag: commonDefaults.tag,
  network: network.default(['mainnet']),
  programIds: keys.default([]),
  mintAddresses: keys.default([]),
  allAddresses: commonDefaults.allAddresses,
  demo: commonDefaults.demo,
  ...otherFamilies,
});

/** POST /streams/solana/:id: any subset of the fields. */
export const updateSolanaStream = updateOf(fields).extend(otherFamilies);

/** POST and DELETE /streams/solana/:id/address: a key or an array of up to 10,000, each named by its index when bad. */
export const solanaAddressBody = z.object({ address: addressList(solanaKey) });

/** POST /streams/solana/:chainId/block/:blockNumber: a definition to match the slot with (notes §2.1), every selector optional. */
export const solanaBlockRequestBody = z.object({
  tag: z.string().default(''),
  allAddresses: commonFields.allAddresses.default(false),
  addresses: addressList(solanaKey)
    .transform((a) => (typeof a === 'string' ? [a] : a))
    .optional()
    .transform((a) => a ?? []),
  programIds: keys.default([]),
  mintAddresses: keys.default([]),
});

export const SOLANA_STREAMS: StreamFamily<SolanaStreamDefinition> = {
  family: 'solana',
  // The schema checked everything: no registry or ABI to consult.
  check: (def) => def,
  response: solanaStreamResponse,
  // Valid by the schema already; checked again to keep the service safe for any caller. Never case-folded.
  address: (text) => {
    const why = solanaKeyError(text);
    if (why !== undefined) throw badRequest('address', `${shown(text)} is not a Solana key (base58 of 32 bytes): ${why}`);
    return text;
  },
  watched: (d) => ({
    chainIds: [SOLANA_CHAIN],
    allAddresses: d.allAddresses,
    keys: { programIds: d.programIds, mintAddresses: d.mintAddresses },
  }),
  // The hosted Solana test webhook is an empty-body POST (notes §2.5). The sender posts bytes as they are, so
  // chainpost sends exactly that: no body, still signed (x-signature over the empty body and the secret).
  testWebhook: () => null,
};

/**
 * Why a stream can deliver nothing: no selector at all. Addresses are added
 * after the create, so a new stream says so until it has one.
 */
function solanaMatchesNothing(
  s: Pick<SolanaStreamDefinition, 'programIds' | 'mintAddresses' | 'allAddresses'> & Pick<StreamState, 'amountOfAddresses'>,
): string | undefined {
  if (s.allAddresses || s.amountOfAddresses > 0 || s.programIds.length > 0 || s.mintAddresses.length > 0) return undefined;
  return 'Stream matches nothing: it has no addresses, programIds or mintAddresses, and allAddresses is false. Add addresses (POST /streams/solana/{id}/address), or set programIds, mintAddresses or allAddresses.';
}

/** The SolanaStream object as the API answers it (solanaStreamResponse). */
export const solanaStreamAnswer = z.object({
  ...streamAnswerFields,
  network: z.array(z.literal('mainnet')),
  programIds: z.array(z.string()),
  mintAddresses: z.array(z.string()),
  allAddresses: z.boolean(),
  isErrorSince: z.string().nullable().meta({ description: 'When the stream entered error (ISO 8601), null in any other status' }),
});

/** The SolanaStream object: the request fields plus id, status, statusMessage, isErrorSince, amountOfAddresses, updatedAt. */
function solanaStreamResponse(s: SolanaStreamDefinition & StreamState): Record<string, unknown> {
  return {
    id: s.id,
    webhookUrl: s.webhookUrl,
    description: s.description,
    tag: s.tag,
    network: s.network,
    programIds: s.programIds,
    mintAddresses: s.mintAddresses,
    allAddresses: s.allAddresses,
    demo: s.demo,
    status: s.status,
    statusMessage: s.status === 'error' || s.status === 'terminated' ? s.statusMessage : (solanaMatchesNothing(s) ?? s.statusMessage),
    isErrorSince: isErrorSince(s),
    amountOfAddresses: s.amountOfAddresses,
    updatedAt: new Date(s.updatedAt).toISOString(),
  };
}
