import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { MessageFields } from '../engine/auth/message.js';

/** Reads a file of ../shared/vectors (never edited). */
export const vectors = <T>(path: string): T => JSON.parse(readFileSync(fileURLToPath(new URL(`../../shared/vectors/${path}`, import.meta.url)), 'utf8')) as T;

/** A SIWE vector's field object, as the spruceid files write it. */
export interface SiweFields {
  scheme?: string | null;
  domain: string;
  address: string;
  statement?: string;
  uri: string;
  version: string;
  chainId: number | string;
  nonce: string;
  issuedAt: string;
  expirationTime?: string;
  notBefore?: string;
  requestId?: string;
  resources?: string[];
}

/** The vectors' field objects in this module's terms (chainId → chain). */
export function fromSiwe(f: Partial<SiweFields>): MessageFields {
  const { chainId, scheme, ...rest } = f;
  const out = { ...rest } as MessageFields;
  if (chainId !== undefined) out.chain = String(chainId);
  if (scheme !== undefined && scheme !== null) out.scheme = scheme;
  return out;
}
