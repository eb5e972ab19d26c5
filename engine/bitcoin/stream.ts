import { z } from 'zod';
import type { StreamFamily } from '../streams/family.js';
import { streamAnswerFields } from '../streams/responses.js';
import { isErrorSince, type StreamCommon, type StreamState } from '../streams/model.js';
import { addressList, commonDefaults, commonFields, EVM_ONLY_FIELDS, mainnetOnly, refusedFields, updateOf } from '../streams/schemas.js';
import { AddressError, decodeAddress } from './address.js';
import { ExtendedKeyError, parseExtendedKey } from './xpub.js';

/**
 * The Bitcoin stream resource (notes §1.3): the shared fields plus network
 * (["mainnet"] only), includeInputs and includeOutputs (default true) and
 * allAddresses (every transaction). Addresses and xpubs are attached through
 * their own endpoints, never on create.
 */
export interface BitcoinStreamDefinition extends StreamCommon {
  network: ['mainnet'];
  includeInputs: boolean;
  includeOutputs: boolean;
  allAddresses: boolean;
}

export type BitcoinStreamRecord = BitcoinStreamDefinition & StreamState & { family: 'bitcoin' };

/** The store's chain key for Bitcoin mainnet (engine/chains/registry.ts). */
export const BITCOIN_CHAIN = 'bitcoin';

/** The hosted service has testnet in an older enum; chainpost follows mainnet only. */
const network = mainnetOnly('Bitcoin');
const bool = commonFields.demo;

const evmOnly = refusedFields(EVM_ONLY_FIELDS, 'an EVM stream field: a Bitcoin stream does not take it');

const fields = { ...commonFields, network, includeInputs: bool, includeOutputs: bool };

/** PUT /streams/bitcoin: webhookUrl required; network defaults to ["mainnet"], includeInputs and includeOutputs to true. */
export const createBitcoinStream = z.object({
  ...commonDefaults,
  network: network.default(['mainnet']),
  includeInputs: bool.default(true),
  includeOutputs: bool.default(true),
  ...evmOnly,
});

/** POST /streams/bitcoin/:id: any subset of the fields. */
export const updateBitcoinStream = updateOf(fields).extend(evmOnly);

/**
 * An address or an array of up to 10,000: the shape is checked first, then each address is decoded (checksum verified) into its stored
 * form (bech32 lower-cased, base58 as given), so the 400 names the bad one and says what is wrong with it.
 */
const bitcoinAddresses = addressList(z.string()).transform((given, ctx) => {
  const decoded = (typeof given === 'string' ? [given] : given).map((text, i) => {
    try {
      return decodeAddress(text).address;
    } catch (err) {
      if (!(err instanceof AddressError)) throw err;
      ctx.addIssue({ code: 'custom', path: typeof given === 'string' ? [] : [i], message: err.message });
      return '';
    }
  });
  return typeof given === 'string' ? decoded[0]! : decoded;
});

export const bitcoinAddressBody = z.object({ address: bitcoinAddresses });

/** POST /streams/bitcoin/:chainId/block/:blockNumber: a definition to match the block with (notes §1.2); addresses decoded as above. */
export const blockRequestBody = z.object({
  tag: z.string().default(''),
  allAddresses: bool.default(false),
  includeInputs: bool.default(true),
  includeOutputs: bool.default(true),
  addresses: bitcoinAddresses
    .transform((a) => (typeof a === 'string' ? [a] : a))
    .optional()
    .transform((a) => a ?? []),
});

/** A mainnet xpub, ypub or zpub, parsed (tpub, private keys and bad checksums are named): a stream's xpub, a wallet's public key. */
export const extendedKey = z.string({ error: 'an extended public key (xpub, ypub or zpub)' }).transform((text, ctx) => {
  try {
    return parseExtendedKey(text.trim());
  } catch (err) {
    if (!(err instanceof ExtendedKeyError)) throw err;
    ctx.addIssue({ code: 'custom', message: err.message });
    return z.NEVER;
  }
});

/** POST /streams/bitcoin/:id/xpub. */
export const xpubBody = z.object({ xpub: extendedKey.transform((key) => key.text) });

export const BITCOIN_STREAMS: StreamFamily<BitcoinStreamDefinition> = {
  family: 'bitcoin',
  // The schema checked everything: no registry or ABI to consult.
  check: (def) => def,
  response: bitcoinStreamResponse,
  // Schema-decoded already; decoding again keeps the service safe for any caller.
  address: (text) => decodeAddress(text).address,
  // Its xpubs' keys are derived apart (the Watchlist's derivedOf).
  watched: (d) => ({ chainIds: [BITCOIN_CHAIN], allAddresses: d.allAddresses, keys: {} }),
  testWebhook: bitcoinTestWebhook,
};

/** The BitcoinStream object as the API answers it (bitcoinStreamResponse). */
export const bitcoinStreamAnswer = z.object({
  ...streamAnswerFields,
  network: z.array(z.literal('mainnet')),
  includeInputs: z.boolean(),
  includeOutputs: z.boolean(),
  allAddresses: z.boolean(),
  isErrorSince: z.string().nullable().meta({ description: 'When the stream entered error (ISO 8601), null in any other status' }),
});

/** The BitcoinStream object: the request fields plus id, status, statusMessage, isErrorSince, amountOfAddresses, updatedAt. */
function bitcoinStreamResponse(s: BitcoinStreamDefinition & StreamState): Record<string, unknown> {
  return {
    id: s.id,
    webhookUrl: s.webhookUrl,
    description: s.description,
    tag: s.tag,
    network: s.network,
    includeInputs: s.includeInputs,
    includeOutputs: s.includeOutputs,
    allAddresses: s.allAddresses,
    demo: s.demo,
    status: s.status,
    statusMessage: s.statusMessage,
    isErrorSince: isErrorSince(s),
    amountOfAddresses: s.amountOfAddresses,
    updatedAt: new Date(s.updatedAt).toISOString(),
  };
}

/**
 * The Bitcoin body's envelope (engine/bitcoin/body.ts on main: shape (b) of the notes), empty, with
 * chainId "" as every test webhook has (receivers tell them apart by it).
 */
function bitcoinTestWebhook(streamId: string, tag: string): Record<string, unknown> {
  const block = Object.fromEntries(
    ['hash', 'height', 'timestamp', 'previousblockhash', 'merkleroot', 'difficulty', 'nTx', 'size', 'weight'].map((k) => [k, '']),
  );
  return { confirmed: true, chainId: '', network: 'mainnet', streamId, tag, retries: 0, block, transactions: [] };
}
