import type { Kv } from '../ports.js';
import { transferCount } from './address-index.js';
import { deriveAddresses, type Branch, type ExtendedKey, type ScriptType } from './xpub.js';

/**
 * A wallet's addresses under an extended public key, as the cross-chain API
 * lists them: on the receive (…/0/i) and change (…/1/i) branches, every index
 * up to `gap` past the last one a transaction touched, the gap rule of Bitcoin
 * streams (xpub-windows.ts), with each address's transaction count from the
 * address index (address-index.ts). A branch stops at MAX_PER_BRANCH.
 */

/** The most addresses listed per branch, however far its use goes: a request's derivation is bounded. */
export const MAX_PER_BRANCH = 10_000;

export interface WalletAddress {
  address: string;
  /** BIP-44/49/84 path when the key is an account key (depth 3, hardened), else m/branch/index from a master key, or branch/index below the key. */
  path: string;
  branch: Branch;
  index: number;
  transfers: number;
}

const PURPOSE: Readonly<Record<ScriptType, number>> = { p2pkh: 44, 'p2sh-p2wpkh': 49, p2wpkh: 84 };
const HARDENED = 0x80000000;

/** Where the key's children sit in the wallet: the path written before `branch/index`. */
function pathPrefix(key: ExtendedKey): string {
  if (key.depth === 0) return 'm/';
  if (key.depth === 3 && key.childNumber >= HARDENED) return `m/${PURPOSE[key.type]}'/0'/${key.childNumber - HARDENED}'/`;
  return '';
}

export function walletAddresses(kv: Kv, chain: string, key: ExtendedKey, gap: number, max = MAX_PER_BRANCH): WalletAddress[] {
  const prefix = pathPrefix(key);
  const out: WalletAddress[] = [];
  for (const branch of [0, 1] as const) {
    let used = -1;
    const found: WalletAddress[] = [];
    // Derived a gap at a time: the window ends `gap` past the last used index, which moves as uses are found.
    while (found.length < Math.min(used + 1 + gap, max)) {
      const from = found.length;
      const addresses = deriveAddresses(key, branch, from, Math.min(gap, max - from));
      addresses.forEach((address, k) => {
        const transfers = transferCount(kv, chain, address);
        if (transfers > 0) used = from + k;
        found.push({ address, path: `${prefix}${branch}/${from + k}`, branch, index: from + k, transfers });
      });
    }
    out.push(...found.slice(0, Math.min(used + 1 + gap, max)));
  }
  return out;
}
