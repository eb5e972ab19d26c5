import { z } from 'zod';
import { isDateTime } from '../datetime.js';
import { isAuthority, isStatement, isUri } from './message.js';
import { aptosAddressOf, solanaPublicKey } from './signatures.js';
import { BATCH, CHALLENGE_TEXT, SIGNED_MESSAGE_CHARS } from '../size-limits.js';

/** One schema per Auth API endpoint; the edge validates bodies with these (engine/schema.ts). */

/** The interface's allow-list of EVM chain ids for sign-in. */
export const AUTH_CHAIN_IDS = [
  1, 5, 10, 25, 56, 97, 100, 137, 250, 338, 420, 1284, 1285, 1337, 8453, 43113, 43114, 80001, 80002, 84531, 88888, 11155111,
] as const;

/** Optional fields may also arrive as null (some clients send every key). */
const optional = <T extends z.ZodType>(schema: T) => schema.nullish().transform((v) => v ?? undefined);

/** Written into the message as toISOString() writes it, so the text is what viem's createSiweMessage makes. */
const dateTime = z
  .string()
  .refine(isDateTime, 'not an ISO 8601 (RFC 3339) date-time such as 2026-01-01T00:00:00.000Z')
  .transform((v) => new Date(v).toISOString());

/** Text of at most `max` characters: a longer one is refused before any pattern reads it. */
const bounded = (max: number, error = 'is required') =>
  z.string({ error }).max(max, { error: `at most ${max.toLocaleString('en-US')} characters`, abort: true });

const signInRequest = {
  domain: bounded(CHALLENGE_TEXT.domain).refine(isAuthority, 'not an RFC 4501 DNS authority such as example.com or example.com:8443'),
  uri: bounded(CHALLENGE_TEXT.uri).refine(isUri, 'not an RFC 3986 URI such as https://example.com/login'),
  // An empty statement is no statement (as viem's createSiweMessage writes it).
  statement: optional(
    bounded(CHALLENGE_TEXT.statement, 'a string').refine(
      isStatement,
      "EIP-4361 characters only (letters, digits, spaces, -._~:/?#[]@!$&'()*+,;=), no line break",
    ),
  ).transform((v) => (v === '' ? undefined : v)),
  expirationTime: optional(dateTime),
  notBefore: optional(dateTime),
  resources: optional(
    z
      .array(
        bounded(CHALLENGE_TEXT.resource, 'each resource must be an RFC 3986 URI').refine(isUri, 'each resource must be an RFC 3986 URI'),
      )
      .max(BATCH.challengeResources, `at most ${BATCH.challengeResources} resources`),
  ),
  timeout: z
    .union([z.number(), z.string().regex(/^\d+$/).transform(Number)], { error: 'an integer number of seconds' })
    .pipe(z.number().int('an integer number of seconds').min(15, 'at least 15 seconds').max(12015, 'at most 12015 seconds'))
    .nullish()
    .transform((v) => v ?? 15),
};

/** chainId as a number, a decimal string or a hex string; must be on the allow-list. */
const chainId = z.union([z.number(), z.string()], { error: 'is required' }).transform((v, ctx) => {
  const n = typeof v === 'number' ? v : /^0x[0-9a-f]+$/i.test(v) ? parseInt(v, 16) : /^\d+$/.test(v) ? Number(v) : NaN;
  if (!(AUTH_CHAIN_IDS as readonly number[]).includes(n)) {
    ctx.addIssue({ code: 'custom', message: `not an allowed chain id; allowed: ${AUTH_CHAIN_IDS.join(', ')}` });
    return z.NEVER;
  }
  return n;
});

const evmAddress = z
  .string({ error: 'is required' })
  .regex(/^0[xX][0-9a-fA-F]{40}$/, 'not an EVM address (0x and 40 hex digits)')
  .transform((v) => `0x${v.slice(2)}`);
const solanaAddress = z
  .string({ error: 'is required' })
  .refine((v) => solanaPublicKey(v) !== undefined, 'not a Solana address (base58 of a 32-byte ed25519 key)');
const HEX32 = /^0x[0-9a-f]{64}$/;
const hex32 = (what: string) =>
  z
    .string({ error: 'is required' })
    .regex(/^0x[0-9a-fA-F]{64}$/, `not ${what} (0x and 64 hex digits)`)
    .transform((v) => v.toLowerCase());

/** The networks a Solana or Aptos sign-in names: what a request takes and its verify answers. */
export const solanaNetwork = z.enum(['mainnet', 'devnet', 'testnet'], { error: 'one of mainnet, devnet, testnet' });
export const aptosNetwork = z.enum(['mainnet', 'testnet'], { error: 'one of mainnet, testnet' });

const evmRequest = z.object({ ...signInRequest, chainId, address: evmAddress });
const solanaRequest = z.object({
  ...signInRequest,
  network: solanaNetwork,
  address: solanaAddress,
});
const aptosRequest = z
  .object({
    ...signInRequest,
    network: aptosNetwork,
    address: hex32('an Aptos address'),
    publicKey: hex32('an ed25519 public key'),
  })
  // zod runs this even when a field failed: derive the address only from a well-formed key.
  .refine((b) => !HEX32.test(b.publicKey) || !HEX32.test(b.address) || aptosAddressOf(b.publicKey) === b.address, {
    path: ['address'],
    message: 'does not belong to publicKey (expected sha3-256(publicKey ‖ 0x00))',
  });

export const challengeRequest = { evm: evmRequest, solana: solanaRequest, aptos: aptosRequest };
export type ChallengeRequest = z.infer<typeof evmRequest> | z.infer<typeof solanaRequest> | z.infer<typeof aptosRequest>;

export const signedMessage = z.object({
  message: z
    .string({ error: 'is required' })
    .min(1, 'is required')
    .max(SIGNED_MESSAGE_CHARS, `at most ${SIGNED_MESSAGE_CHARS.toLocaleString('en-US')} characters`),
  signature: z.string({ error: 'is required' }).min(1, 'is required').max(1_024),
});

export const blockchainType = z.enum(['evm', 'solana', 'aptos'], { error: 'one of evm, solana, aptos' });

/** The longest address or public key a bind names: an uncompressed secp256k1 key in hex is 132. */
const ACCOUNT_TEXT = 256;

/** An address of a given chain family, checked and put in the stored form. */
const account = z
  .object({ blockchainType, address: bounded(ACCOUNT_TEXT), publicKey: optional(bounded(ACCOUNT_TEXT, 'a string')) })
  .superRefine((a, ctx) => {
    const bad = (path: string, message: string) => ctx.addIssue({ code: 'custom', path: [path], message });
    if (a.blockchainType === 'evm' && !/^0[xX][0-9a-fA-F]{40}$/.test(a.address))
      bad('address', 'not an EVM address (0x and 40 hex digits)');
    if (a.blockchainType === 'solana' && solanaPublicKey(a.address) === undefined) bad('address', 'not a Solana address');
    if (a.blockchainType === 'aptos') {
      if (!/^0x[0-9a-fA-F]{64}$/.test(a.address)) bad('address', 'not an Aptos address (0x and 64 hex digits)');
      else if (a.publicKey === undefined || !/^0x[0-9a-fA-F]{64}$/.test(a.publicKey))
        bad('publicKey', 'an Aptos address needs its ed25519 publicKey (0x and 64 hex digits)');
      else if (aptosAddressOf(a.publicKey) !== a.address.toLowerCase()) bad('address', 'does not belong to publicKey');
    }
  })
  .transform((a) => (a.blockchainType === 'evm' ? { ...a, address: `0x${a.address.slice(2)}` } : a));
export type Account = z.infer<typeof account>;

export const bindRequest = z.object({
  addresses: z
    .array(account, { error: 'an array of {blockchainType, address, publicKey?}' })
    .min(1, 'at least one address')
    .max(BATCH.bindAddresses, `at most ${BATCH.bindAddresses} addresses`),
});

export const bindVerify = z.object({
  verifications: z
    .array(signedMessage, { error: 'an array of {message, signature}' })
    .min(1, 'at least one verification')
    .max(BATCH.bindVerifications, `at most ${BATCH.bindVerifications} verifications`),
});

export const profileId = z
  .string({ error: 'is required' })
  .regex(/^0x[0-9a-f]{64}$/i, 'a profile id is 66 characters: 0x and 64 hex digits');

/** GET /profile/:profileId/addresses: its path. */
export const profilePath = z.object({ profileId });

export const bindRemove = z.intersection(account, z.object({ profileId }));
