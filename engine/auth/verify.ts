import { badRequest } from '../errors.js';
import { MessageError, parseMessage, type Family, type MessageFields } from './message.js';
import { SignatureFormatError, verifyAptos, verifyEvm, verifySolana } from './signatures.js';

/**
 * Verifying a signed message: parse it strictly, check the signature by the
 * message's own address, then its validity window. Every refusal is a 400
 * naming the field (message, signature, expirationTime, notBefore).
 */
export interface VerifyContext {
  /** Service time, ms. */
  now: number;
  /** Allowance for clock skew on expirationTime and notBefore, ms. */
  skewMs: number;
  /** Aptos only: the public key given when the challenge was requested. */
  publicKey?: string;
}

/** Parses a sign-in message, answering 400 (field `message`) when it is not one. */
export function parseSignIn(family: Family, text: string): MessageFields {
  try {
    return parseMessage(family, text);
  } catch (err) {
    if (err instanceof MessageError) throw badRequest('message', err.field === 'message' ? err.problem : err.message);
    throw err;
  }
}

export async function verifySignIn(
  family: Family,
  text: string,
  signature: string,
  ctx: VerifyContext,
  fields = parseSignIn(family, text),
): Promise<MessageFields> {
  const signer: Signer = {
    family,
    address: fields.address,
    nonce: fields.nonce ?? '',
    application: fields.uri === undefined ? '' : origin(fields.uri),
    chainId: Number(fields.chain),
  };
  if (ctx.publicKey !== undefined) signer.publicKey = ctx.publicKey;
  if (!(await signatureValid(text, signature, signer)))
    throw badRequest('signature', `not a valid signature of this message by ${fields.address}`);
  checkWindow(fields, ctx.now, ctx.skewMs);
  return fields;
}

/** Who must have signed, and for Aptos what a wallet may have wrapped around the text. */
export interface Signer {
  family: Family;
  address: string;
  publicKey?: string;
  nonce: string;
  application: string;
  chainId: number;
}

/** Whether `signature` over `text` is by `signer`; a malformed signature is a 400 naming `field`. */
export async function signatureValid(text: string, signature: string, signer: Signer, field = 'signature'): Promise<boolean> {
  try {
    if (signer.family === 'evm') return await verifyEvm(text, signature, signer.address);
    if (signer.family === 'solana') return verifySolana(text, signature, signer.address);
    return signer.publicKey !== undefined && verifyAptos(text, signature, signer.publicKey, signer);
  } catch (err) {
    if (err instanceof SignatureFormatError) throw badRequest(field, err.message);
    throw err;
  }
}

const origin = (uri: string): string => {
  try {
    return new URL(uri).origin;
  } catch {
    return uri;
  }
};

/** expirationTime and notBefore of the message, each with the skew allowance. */
function checkWindow(f: Pick<MessageFields, 'expirationTime' | 'notBefore'>, now: number, skewMs: number): void {
  // "Stops being valid exactly" at expirationTime (plus the allowance): that instant is already too late.
  if (f.expirationTime !== undefined && now >= Date.parse(f.expirationTime) + skewMs)
    throw badRequest('expirationTime', `the message expired at ${f.expirationTime}`);
  if (f.notBefore !== undefined && now < Date.parse(f.notBefore) - skewMs)
    throw badRequest('notBefore', `the message is not valid before ${f.notBefore}`);
}
