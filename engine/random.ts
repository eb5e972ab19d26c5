import { randomBytes } from '@noble/hashes/utils.js';

const ALPHANUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** `n` characters of [A-Za-z0-9] from a CSPRNG, without modulo bias. */
export function randomAlphanumeric(n: number): string {
  let out = '';
  while (out.length < n) {
    for (const b of randomBytes(n * 2)) {
      if (b < 248 && out.length < n) out += ALPHANUM[b % 62];
    }
  }
  return out;
}
