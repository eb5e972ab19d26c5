import { z } from 'zod';
import { aptosNetwork, solanaNetwork } from './schemas.js';

/**
 * What the Authentication API answers (engine/auth/service.ts makes these; the OpenAPI document and the test
 * suite's check of every answer read them). Field names as the interface's Challenge and Verified challenge.
 */

const profileId = z.string().meta({ description: '0x and 64 hex digits' });

/** POST /challenge/request/{evm,solana,aptos}. */
export const challenge = z.object({
  id: z.string().meta({ description: 'The challenge id: secret, kept by the calling backend' }),
  profileId,
  message: z.string().meta({ description: 'The text the end user signs' }),
});

const verifiedFields = {
  id: z.string(),
  domain: z.string(),
  uri: z.string(),
  version: z.string(),
  nonce: z.string(),
  profileId,
  address: z.string(),
  statement: z.string().optional(),
  expirationTime: z.string().optional(),
  notBefore: z.string().optional(),
  resources: z.array(z.string()).optional(),
  token: z.string().meta({ description: 'An EdDSA JWT signed by this server (its key at /.well-known/jwks.json), audience the domain' }),
  tokenIssuer: z.string().meta({ description: "The token's issuer (iss), one per tenant: what a backend pins with the domain" }),
};

/** POST /challenge/verify/{family}: the Verified challenge of each family. */
export const verifiedChallenge = {
  evm: z.object({ ...verifiedFields, chainId: z.number().int() }),
  solana: z.object({ ...verifiedFields, network: solanaNetwork }),
  aptos: z.object({ ...verifiedFields, network: aptosNetwork, publicKey: z.string() }),
};

/** POST /bind/request: one message per address, each to be signed by its address. */
export const bindMessages = z.object({ messages: z.array(z.string()) });
/** POST /bind/remove: the message the address signs to leave the profile. */
export const unbindMessage = z.object({ message: z.string() });
/** POST /bind/request/verify and /bind/remove/verify: the profile the addresses are bound to, or were unbound from. */
export const boundProfile = z.object({ profileId });
/** GET /profile/:profileId/addresses. */
export const profileAddresses = z.array(z.string());

/** GET /.well-known/jwks.json: the Ed25519 public key the tokens are signed with. */
export const jwks = z.object({
  keys: z.array(
    z.object({
      kty: z.literal('OKP'),
      crv: z.literal('Ed25519'),
      x: z.string(),
      kid: z.string(),
      alg: z.literal('EdDSA'),
      use: z.literal('sig'),
    }),
  ),
});
