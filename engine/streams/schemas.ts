import { parseAbiItem, toEventSelector, toEventSignature, toFunctionSignature } from 'viem/utils';
import type { AbiEvent, AbiFunction } from 'viem';
import { z } from 'zod';
import { MAX_LIMIT } from '../page.js';
import { BATCH } from '../size-limits.js';

/** One schema per Streams API body (chains are checked against the registry by the service). */

const bool = z.boolean({ error: 'true or false' });

/** `Name(type,…)` with Solidity types viem can parse. */
const topic0 = z.string().refine((t) => {
  if (!/^[A-Za-z_$][A-Za-z0-9_$]*\(.*\)$/.test(t)) return false;
  try {
    parseAbiItem(`event ${t}`);
    return true;
  } catch {
    return false;
  }
}, 'an event signature shaped Name(type,…) with Solidity types, e.g. Transfer(address,address,uint256)');

/** A JSON ABI: each event and function must have a signature viem parses. */
const abi = z
  .union([z.array(z.record(z.string(), z.unknown())), z.record(z.string(), z.unknown())])
  .transform((v) => (Array.isArray(v) ? v : [v]))
  .superRefine((items, ctx) => {
    items.forEach((item, i) => {
      const type = item['type'];
      if (!['event', 'function', 'constructor', 'fallback', 'receive', 'error'].includes(String(type))) {
        ctx.addIssue({
          code: 'custom',
          path: [i, 'type'],
          message: 'an ABI item type: event, function, constructor, fallback, receive or error',
        });
        return;
      }
      if (type !== 'event' && type !== 'function') return;
      try {
        const sig = type === 'event' ? toEventSignature(item as unknown as AbiEvent) : toFunctionSignature(item as unknown as AbiFunction);
        parseAbiItem(`${type} ${sig}`);
      } catch {
        ctx.addIssue({ code: 'custom', path: [i], message: `not a valid ABI ${type}` });
      }
    });
  });

/** The events an ABI declares, by signature (`Transfer(address,address,uint256)`): topic0 and advancedOptions name them so. */
export const abiEvents = (items: ReadonlyArray<Record<string, unknown>> | null): Map<string, AbiEvent> =>
  new Map(
    (items ?? []).filter((i) => i['type'] === 'event').map((i) => [toEventSignature(i as unknown as AbiEvent), i as unknown as AbiEvent]),
  );

/** A topic0 as a stream names it (an event signature, or already its 32-byte hash) as the hash logs carry. */
export const topic0Hash = (t: string): string => (/^0x[0-9a-fA-F]{64}$/.test(t) ? t.toLowerCase() : toEventSelector(t));

const selectorOrAddress = z
  .string()
  .refine((v) => /^\$[A-Za-z0-9_.]+$/.test(v) || /^0x[0-9a-fA-F]{40}$/.test(v), 'a $selector or an address');

const trigger = z.object({
  type: z.enum(['tx', 'log', 'erc20transfer', 'erc20approval', 'nfttransfer'], {
    error: 'one of tx, log, erc20transfer, erc20approval, nfttransfer',
  }),
  contractAddress: selectorOrAddress,
  functionAbi: z
    .record(z.string(), z.unknown())
    .refine((f) => f['type'] === 'function' && typeof f['name'] === 'string', 'a function ABI item'),
  inputs: z.array(z.string()).optional(),
  topic0: z.string().optional(),
  callFrom: selectorOrAddress.optional(),
});

const NATIVE_BALANCE_TYPES = ['tx', 'log', 'erc20transfer', 'erc20approval', 'nfttransfer', 'internalTx'] as const;
const nativeBalances = z.object({
  selectors: z.array(z.string()).min(1, 'at least one selector'),
  type: z.enum(NATIVE_BALANCE_TYPES, { error: `one of ${NATIVE_BALANCE_TYPES.join(', ')}` }).default('tx'),
});

const advancedOption = z.object({
  topic0: z.string(),
  filter: z.record(z.string(), z.unknown()).optional(),
  includeNativeTxs: bool.optional(),
});

const webhookUrl = z.string({ error: 'is required' }).refine((v) => {
  try {
    const u = new URL(v);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
  } catch {
    return false;
  }
}, 'an http or https URL');

/** The request fields every stream family has, with their defaults on create. */
export const commonFields = {
  webhookUrl,
  description: z.string().max(1000),
  tag: z.string().max(200),
  allAddresses: bool,
  demo: bool,
};
export const commonDefaults = {
  webhookUrl,
  description: commonFields.description.default(''),
  tag: commonFields.tag.default(''),
  allAddresses: commonFields.allAddresses.default(false),
  demo: commonFields.demo.default(false),
};

// In the interface's order: with several bad fields, the first is the one named.
const fields = {
  webhookUrl,
  description: commonFields.description,
  tag: commonFields.tag,
  chainIds: z.array(z.union([z.string(), z.number()]).transform(String), { error: 'an array of chain ids' }).min(1, 'at least one chain'),
  topic0: z.array(topic0).nullable(),
  allAddresses: commonFields.allAddresses,
  includeNativeTxs: bool,
  includeContractLogs: bool,
  includeInternalTxs: bool,
  includeAllTxLogs: bool,
  getNativeBalances: z.array(nativeBalances),
  abi: abi.nullable(),
  advancedOptions: z.array(advancedOption).nullable(),
  filterPossibleSpamAddresses: bool,
  demo: commonFields.demo,
  triggers: z.array(trigger).nullable(),
};

/** PUT /streams/evm: webhookUrl and chainIds required; the rest default as the hosted service does. */
export const createStream = z.object({
  webhookUrl,
  chainIds: fields.chainIds,
  description: commonDefaults.description,
  tag: commonDefaults.tag,
  topic0: fields.topic0.default(null),
  allAddresses: commonDefaults.allAddresses,
  includeNativeTxs: fields.includeNativeTxs.default(false),
  includeContractLogs: fields.includeContractLogs.default(false),
  includeInternalTxs: fields.includeInternalTxs.default(false),
  includeAllTxLogs: fields.includeAllTxLogs.default(false),
  getNativeBalances: fields.getNativeBalances.default([]),
  abi: fields.abi.default(null),
  advancedOptions: fields.advancedOptions.default(null),
  filterPossibleSpamAddresses: fields.filterPossibleSpamAddresses.default(false),
  demo: commonDefaults.demo,
  triggers: fields.triggers.default(null),
});

/** An update body: any subset of a family's fields. */
export const updateOf = <F extends Record<string, z.ZodType>>(f: F) =>
  z.object(Object.fromEntries(Object.entries(f).map(([k, v]) => [k, v.optional()])) as { [K in keyof F]: z.ZodOptional<F[K]> });

/** POST /streams/evm/:id: any subset of the fields. */
export const updateStream = updateOf(fields);

/** The EVM fields no other family has: Bitcoin and Solana streams refuse them by name. */
export const EVM_ONLY_FIELDS = Object.keys(fields).filter((k) => !(k in commonFields));

/** The fields only Bitcoin streams have: a Solana stream refuses them by name (kept here, beside the EVM list, so no family reads another's folder). */
export const BITCOIN_ONLY_FIELDS = ['includeInputs', 'includeOutputs'] as const;

/** Another family's fields, refused by name rather than dropped: a client sending them meant that family's stream. */
export const refusedFields = (keys: readonly string[], why: string): Record<string, z.ZodOptional<z.ZodUndefined>> =>
  Object.fromEntries(keys.map((k) => [k, z.undefined({ error: why }).optional()]));

/** `network` of a family chainpost follows on mainnet only (Bitcoin, Solana): ["mainnet"] and nothing else, whatever the hosted enum lists. */
export const mainnetOnly = (chain: string) => {
  const message = `must be ["mainnet"]: only ${chain} mainnet is followed`;
  return z
    .array(z.string(), { error: message })
    .refine((n) => n.length === 1 && n[0] === 'mainnet', message)
    .transform((): ['mainnet'] => ['mainnet']);
};

export const statusBody = z.object({
  status: z.enum(['active', 'paused'], { error: 'active or paused (error and terminated are set by the service)' }),
});

/** How many addresses one address call may name. */
export const ADDRESSES_PER_CALL = BATCH.streamAddresses;

/** The `address` of an address body: one address or an array of up to 10,000 (the item schema is the family's). */
export const addressList = <I extends z.ZodType>(item: I) =>
  z.union(
    [
      item,
      z
        .array(item)
        .min(1, 'at least one address')
        .max(ADDRESSES_PER_CALL, `at most ${ADDRESSES_PER_CALL.toLocaleString('en-US')} addresses per call`),
    ],
    { error: `an address or an array of up to ${ADDRESSES_PER_CALL.toLocaleString('en-US')}` },
  );

const evmAddress = z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'an EVM address (0x and 40 hex digits)');
export const addressBody = z.object({ address: addressList(evmAddress) });

export const settingsBody = z.object({
  region: z.enum(['us-east-1', 'us-west-2', 'eu-central-1', 'ap-southeast-1'], {
    error: 'one of us-east-1, us-west-2, eu-central-1, ap-southeast-1',
  }),
});

const limitMessage = `a whole number from 1 to ${MAX_LIMIT}`;

/** The query of a list a page at a time: limit (default 100) and the previous page's cursor. */
export const pageQuery = z.object({
  limit: z
    .string()
    .regex(/^\d+$/, limitMessage)
    .transform(Number)
    .refine((n) => n >= 1 && n <= MAX_LIMIT, limitMessage)
    .optional()
    .meta({ description: `At most this many records (1 to ${MAX_LIMIT}, default ${MAX_LIMIT})` }),
  cursor: z.string().optional().meta({ description: "The previous page's cursor, as it was answered" }),
});

/** GET /history: a page, with or without each record's payload. */
export const historyQuery = pageQuery.extend({
  excludePayload: z.enum(['true', 'false'], { error: 'true or false' }).optional(),
});
