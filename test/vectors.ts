import { readFileSync } from 'node:fs';
import type { MessageFields } from '../engine/auth/message.js';

// test/fixtures/vectors: copies of the shared test vectors (sources in test/fixtures/README.md).
const VECTORS = new URL('./fixtures/vectors/', import.meta.url);

/** Reads a file of test/fixtures/vectors. */
export const vectors = <T>(path: string): T => JSON.parse(readFileSync(new URL(path, VECTORS), 'utf8')) as T;

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
