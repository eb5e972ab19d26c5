import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

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
