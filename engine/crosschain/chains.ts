import { chainFor } from '../chains/lifecycle.js';
import { chainRemoval } from '../chains/removals.js';
import { findChain, type Chain, type ChainFamily } from '../chains/registry.js';
import { badRequest } from '../errors.js';

/**
 * The cross-chain API's `chains` parameter (data-api-notes §4.1): hex ids, the
 * registry's names and the Universal API's own aliases (`ethereum`, `binance`,
 * `moon beam`, `bitcoin`, `sol`…), and the groups `all`, `mainnets` and
 * `testnets`, which stand for the chains this server follows. A chain the
 * server does not follow is not an error: the answer covers the others and
 * names it in `meta.unsupportedChains`. An unknown name, a removed chain or one
 * of a family the endpoint does not serve as a group would is a 400 naming it.
 */

/** The Universal API's aliases the registry does not already hold, by the registry key they mean. */
const V1_ALIASES: Readonly<Record<string, string>> = {
  'binance smart chain testnet': '0x61',
  cro: '0x19',
  'moon beam': '0x504',
  'moon river': '0x505',
  'flow testnet': '0x221',
  'ronin testnet': '0x7e5',
};

/** Chains the Universal API lists that the registry (the interface's chains) does not, by name and by id: never followed here, so always unsupported. */
const V1_ONLY_IDS: Readonly<Record<string, string>> = {
  sei: '0x531',
  'sei-testnet': '0x530',
  monad: '0x8f',
  metis: '0x440',
  sonic: '0x92',
};
const v1Only = (name: string): string | undefined => {
  if (V1_ONLY_IDS[name] !== undefined) return V1_ONLY_IDS[name];
  // An id in any form findChain takes (hex with leading zeros, decimal).
  const hex = /^(0x[0-9a-f]{1,16}|\d{1,16})$/.test(name) ? `0x${BigInt(name).toString(16)}` : undefined;
  return hex !== undefined && Object.values(V1_ONLY_IDS).includes(hex) ? hex : undefined;
};

export type ChainGroup = 'all' | 'mainnets' | 'testnets';
const GROUPS: ReadonlySet<string> = new Set<ChainGroup>(['all', 'mainnets', 'testnets']);

/** The id a chain has in /v1 answers (`meta.syncedAt` keys, `chainId` fields): the hex id, or the family's name. */
export const v1ChainId = (chain: Chain): string => chain.hexId ?? chain.key;

export interface ResolvedChains {
  /** Followed chains the request covers, once each, in the order asked (a group in the registry's order). */
  readonly chains: readonly Chain[];
  /** Chains asked for that this server does not follow (or this endpoint does not serve), as /v1 ids. */
  readonly unsupported: readonly string[];
}

export interface ChainScope {
  /** The chains this server follows (registry keys). */
  readonly followed: readonly string[];
  /** The families this endpoint answers for; a chain of another family asked by name is unsupported here. */
  readonly families: readonly ChainFamily[];
  /** Service time, for the removals table. */
  readonly now: number;
}

/** Resolves the values of `chains` (each may itself be a comma list); none given means `all`. */
export function resolveChains(values: readonly string[], scope: ChainScope, field = 'chains'): ResolvedChains {
  const names = values
    .flatMap((v) => v.split(','))
    .map((v) => v.trim().toLowerCase())
    .filter((v) => v !== '');
  const followed = new Set(scope.followed);
  const chains: Chain[] = [];
  const unsupported: string[] = [];
  const take = (c: Chain): void => {
    if (!chains.includes(c)) chains.push(c);
  };
  for (const name of names.length === 0 ? ['all'] : names) {
    if (GROUPS.has(name)) {
      for (const key of scope.followed) {
        const c = findChain(key);
        // A chain still followed for what remains of it (blocks, node access) is out of a group once removed from the cross-chain API.
        if (
          c !== undefined &&
          scope.families.includes(c.family) &&
          inGroup(c, name as ChainGroup) &&
          chainRemoval(c, 'crosschain', scope.now) === undefined
        )
          take(c);
      }
      continue;
    }
    const only = v1Only(name);
    if (only !== undefined) {
      if (!unsupported.includes(only)) unsupported.push(only);
      continue;
    }
    const found = findChain(V1_ALIASES[name] ?? name);
    // Unknown, Aptos, or removed on the cross-chain surface: chainFor answers the 400 naming the field.
    const chain = chainFor(found?.key ?? name, 'crosschain', scope.now, { field, families: ['evm', 'bitcoin', 'solana'] });
    if (followed.has(chain.key) && scope.families.includes(chain.family)) take(chain);
    else if (!unsupported.includes(v1ChainId(chain))) unsupported.push(v1ChainId(chain));
  }
  return { chains, unsupported };
}

const inGroup = (c: Chain, group: ChainGroup): boolean => group === 'all' || (group === 'testnets') === c.testnet;

/** The one chain of a `/v1/chains/:chainAlias/…` path: followed and of a family the endpoint serves, else 400 naming `chainAlias`. */
export function pathChain(alias: string, scope: ChainScope): Chain {
  const name = alias.trim().toLowerCase();
  if (name === '' || name.includes(',')) throw badRequest('chainAlias', 'one chain, such as ethereum, 0x1 or bitcoin');
  if (GROUPS.has(name)) throw badRequest('chainAlias', `one chain, not the group "${alias}"`);
  const { chains, unsupported } = resolveChains([alias], scope, 'chainAlias');
  const chain = chains[0];
  if (chain === undefined)
    throw badRequest(
      'chainAlias',
      `${unsupported[0] ?? alias} is not followed by this server${scope.families.length < 3 ? ` or not served here (${scope.families.join(', ')})` : ''}`,
    );
  return chain;
}
