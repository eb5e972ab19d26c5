import { badRequest } from '../errors.js';
import { MessageError, parseMessage, type Family, type MessageFields } from './message.js';
import { SignatureFormatError, verifyAptos, verifyEvm, verifySolana } from './signatures.js';

/**
 * Verifying a signed sign-in message: parse it strictly, check the signature
 * by the message's own address, then its validity window. Every refusal is a
 * 400 naming the field (message, signature, expirationTime, notBefore …).
 */
export interface VerifyContext {
  /** Service time, ms. */
  now: number;
  /** Allowance for clock skew on expirationTime and notBefore, ms. */
  skewMs: number;
  /** Aptos only: the public key given when the challenge was requested. */
  publicKey?: string;
}

export async function verifySignIn(family: Family, text: string, signature: string, ctx: VerifyContext): Promise<MessageFields> {
  let fields: MessageFields;
  try {
    fields = parseMessage(family, text);
  } catch (err) {
    if (err instanceof MessageError) throw badRequest('message', err.message);
    throw err;
  }
  if (!(await signatureValid(family, text, signature, fields, ctx))) throw badRequest('signature', `not a valid signature of this message by ${fields.address}`);
  checkWindow(fields, ctx.now, ctx.skewMs);
  return fields;
}

async function signatureValid(family: Family, text: string, signature: string, f: MessageFields, ctx: VerifyContext): Promise<boolean> {
  try {
    if (family === 'evm') return await verifyEvm(text, signature, f.address);
    if (family === 'solana') return verifySolana(text, signature, f.address);
    if (ctx.publicKey === undefined) return false;
    const application = f.uri === undefined ? '' : safeOrigin(f.uri);
    return verifyAptos(text, signature, ctx.publicKey, { address: f.address, nonce: f.nonce ?? '', application, chainId: Number(f.chain) });
  } catch (err) {
    if (err instanceof SignatureFormatError) throw badRequest('signature', err.message);
    throw err;
  }
}

const safeOrigin = (uri: string): string => {
  try {
    return new URL(uri).origin;
  } catch {
    return uri;
  }
};

/** expirationTime and notBefore of the message, each with the skew allowance. */
export function checkWindow(f: Pick<MessageFields, 'expirationTime' | 'notBefore'>, now: number, skewMs: number): void {
  if (f.expirationTime !== undefined && now > Date.parse(f.expirationTime) + skewMs) throw badRequest('expirationTime', `the message expired at ${f.expirationTime}`);
  if (f.notBefore !== undefined && now < Date.parse(f.notBefore) - skewMs) throw badRequest('notBefore', `the message is not valid before ${f.notBefore}`);
}
