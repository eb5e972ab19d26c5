import { z } from 'zod';
import { AddressError, decodeAddress } from '../bitcoin/address.js';
import { walletAddresses } from '../bitcoin/xpub-wallet.js';
import { ExtendedKeyError, parseExtendedKey, type ExtendedKey } from '../bitcoin/xpub.js';
import type { ChainFamily } from '../chains/registry.js';
import type { Kv } from '../ports.js';

/**
 * The wallet of a /v1/wallets/:walletAddressOrPublicKey/… path: an EVM address, a Bitcoin mainnet address, or
 * a Bitcoin extended public key (xpub, ypub, zpub) whose derived addresses are read together. The wallet's
 * kind decides the family of chains that can answer for it: the other chains asked are unsupported for it
 * (`meta.unsupportedChains`), as a chain this server does not follow.
 */

export type Wallet = { kind: 'evm'; address: string } | { kind: 'bitcoin'; address: string } | { kind: 'xpub'; key: ExtendedKey };

/**
 * `addressType` of the answers. The Universal API names the field but not its values (data-api-notes §4.2):
 * these are chainpost's, one per kind of wallet it reads.
 */
export const addressType = (w: Wallet): 'evm' | 'bitcoin' | 'xpub' => w.kind;

/** The path's value as given (an EVM address lower case, bech32 lower case): `address` of the answers. */
export const walletText = (w: Wallet): string => (w.kind === 'xpub' ? w.key.text : w.address);

export const walletFamilies = (w: Wallet): ChainFamily[] => (w.kind === 'evm' ? ['evm'] : ['bitcoin']);

const EVM = /^0x[0-9a-fA-F]{40}$/;

/** An address or public key of any kind; `xpubs`: whether an extended key is taken (insight names one address). */
export const walletParam = (xpubs: boolean) =>
  z.string().transform((raw, ctx): Wallet => {
    const text = raw.trim();
    if (EVM.test(text)) return { kind: 'evm', address: text.toLowerCase() };
    if (xpubs && /^[xyz]pub/.test(text)) {
      try {
        return { kind: 'xpub', key: parseExtendedKey(text) };
      } catch (err) {
        if (!(err instanceof ExtendedKeyError)) throw err;
        ctx.addIssue({ code: 'custom', message: err.message });
        return z.NEVER;
      }
    }
    try {
      return { kind: 'bitcoin', address: decodeAddress(text).address };
    } catch (err) {
      if (!(err instanceof AddressError)) throw err;
      ctx.addIssue({
        code: 'custom',
        message: `not an EVM address (0x and 40 hex digits), a Bitcoin mainnet address${xpubs ? ' or an xpub, ypub or zpub' : ''}: ${err.message}`,
      });
      return z.NEVER;
    }
  });

/** A Bitcoin wallet's addresses: the one address, or an extended key's derived ones (the gap rule of xpub-wallet.ts) with their paths. */
export function bitcoinAddresses(
  kv: Kv,
  chain: string,
  w: Exclude<Wallet, { kind: 'evm' }>,
  gap: number,
): Array<{ address: string; path: string | null }> {
  if (w.kind === 'bitcoin') return [{ address: w.address, path: null }];
  return walletAddresses(kv, chain, w.key, gap).map(({ address, path }) => ({ address, path }));
}
