// ENSIP-15 normalization from the package viem's `normalize` wraps (its ox/Ens loads all of ox at the server's start).
import { ens_normalize as normalize } from '@adraffy/ens-normalize';
import { concatHex, decodeFunctionResult, encodeFunctionData, keccak256, parseAbi, stringToHex } from 'viem/utils';
import type { Hex } from 'viem';
import { z } from 'zod';
import { ApiError, notFound } from '../../errors.js';
import type { DataDeps } from '../common/deps.js';
import { fromNode } from '../common/node-reads.js';
import { readBlock } from '../common/read-at.js';
import { evmAddress } from '../common/params.js';

/**
 * ENS names (GET /resolve/ens/:domain, /resolve/:domain, /resolve/:address/reverse,
 * /resolve/:address/domain), read from the ENS registry of one followed chain
 * (0x1 and its registry unless CHAINPOST_ENS names another: engine/config/config.ts) by eth_call at the
 * stored head: registry.resolver(namehash) then resolver.addr(node); an
 * address's name is the reverse node's (`<hex>.addr.reverse`) resolver.name,
 * answered only when that name resolves back to the address (ENSIP-3). This is
 * the plain ENS lookup, not viem's getEnsAddress/getEnsName: those go through
 * the Universal Resolver, which a devnet does not have; so wildcard (ENSIP-10)
 * and off-chain (CCIP-read) names do not resolve here. Unstoppable Domains'
 * registries are not read: /resolve/:domain and /resolve/:address/domain answer
 * from ENS.
 */

export interface EnsConfig {
  /** The chain whose registry is read (hex id). */
  chain: string;
  registry: string;
}

const zeroAddress = '0x0000000000000000000000000000000000000000';
const ROOT_NODE: Hex = `0x${'00'.repeat(32)}`;

/**
 * EIP-137's namehash of a normalized name (the root's is zero). viem exports its namehash only with its main
 * entry and viem/ens, which load viem's clients and all of ox at the server's start; a normalized name has no
 * `[hash]` labels, the one case viem's adds.
 */
export function namehash(name: string): Hex {
  if (name === '') return ROOT_NODE;
  return name.split('.').reduceRight<Hex>((node, label) => keccak256(concatHex([node, keccak256(stringToHex(label))])), ROOT_NODE);
}

const REGISTRY = parseAbi(['function resolver(bytes32 node) view returns (address)']);
const RESOLVER = parseAbi(['function addr(bytes32 node) view returns (address)', 'function name(bytes32 node) view returns (string)']);

/** A name as ENS normalizes it (UTS-46), or a 400 naming `field`. */
const ensName = z.string().transform((name, ctx) => {
  try {
    return normalize(name);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: `not an ENS name (${(err as Error).message.split('\n')[0]})` });
    return z.NEVER;
  }
});

export const resolveDomainQuery = z.object({ domain: ensName });
export const resolveUnstoppableQuery = z.object({ domain: ensName, currency: z.enum(['eth', '0x1'], 'eth or 0x1').default('eth') });
export const resolveAddressQuery = z.object({ address: evmAddress });
/** What a name resolves to (lower case), and an address's primary name. */
export const resolveDomainAnswer = z.object({ address: z.string() });
export const reverseNameAnswer = z.object({ name: z.string() });

type Deps = Pick<DataDeps, 'kv' | 'reads' | 'follower'>;

async function call<F extends 'resolver' | 'addr' | 'name'>(deps: Deps, ens: EnsConfig, to: string, fn: F, node: Hex) {
  const abi = fn === 'resolver' ? REGISTRY : RESOLVER;
  const data = encodeFunctionData({ abi, functionName: fn, args: [node] } as never);
  const out = await fromNode(() => deps.reads.call(ens.chain, to, data, readBlock(deps.kv, ens.chain, undefined)));
  // A revert or no code (a resolver without the function): no record.
  if (out === null || out === '0x') return undefined;
  return decodeFunctionResult({ abi, functionName: fn, data: out } as never) as unknown as F extends 'name' ? string : Hex;
}

function followed(deps: Deps, ens: EnsConfig): void {
  if (deps.follower(ens.chain) === undefined)
    throw new ApiError(
      404,
      `ENS is read from chain ${ens.chain}, which this server does not follow (CHAINPOST_CHAINS; CHAINPOST_ENS names another chain's registry)`,
    );
}

/** The address a normalized name resolves to, or undefined. */
async function addressOf(deps: Deps, ens: EnsConfig, name: string): Promise<string | undefined> {
  const node = namehash(name);
  const resolver = await call(deps, ens, ens.registry, 'resolver', node);
  if (resolver === undefined || resolver === zeroAddress) return undefined;
  const addr = await call(deps, ens, resolver, 'addr', node);
  return addr === undefined || addr === zeroAddress ? undefined : addr.toLowerCase();
}

/** GET /resolve/ens/:domain and /resolve/:domain: `{address}`, 404 when the name has none. */
export async function resolveDomain(deps: Deps, ens: EnsConfig, q: { domain: string }) {
  followed(deps, ens);
  const address = await addressOf(deps, ens, q.domain);
  if (address === undefined) throw notFound(`${q.domain} resolves to no address`);
  return { address };
}

/** GET /resolve/:address/reverse and /resolve/:address/domain: `{name}`, 404 when the address has no primary name. */
export async function reverseName(deps: Deps, ens: EnsConfig, q: z.output<typeof resolveAddressQuery>) {
  followed(deps, ens);
  const node = namehash(`${q.address.slice(2)}.addr.reverse`);
  const resolver = await call(deps, ens, ens.registry, 'resolver', node);
  const name = resolver === undefined || resolver === zeroAddress ? undefined : await call(deps, ens, resolver, 'name', node);
  if (name === undefined || name === '') throw notFound(`${q.address} has no ENS name`);
  // A reverse record anyone can set: it counts only when the name resolves back to the address.
  let normalized: string;
  try {
    normalized = normalize(name);
  } catch {
    throw notFound(`${q.address} names ${JSON.stringify(name)}, which is not a valid ENS name`);
  }
  if ((await addressOf(deps, ens, normalized)) !== q.address)
    throw notFound(`${q.address} names ${name}, which does not resolve back to it`);
  return { name };
}
