import { findChain, type Chain } from '../chains/registry.js';
import { chainRemoval } from '../chains/removals.js';
import type { Logger } from '../log.js';
import type { FamilyName } from './model.js';

/**
 * Streams on chains this server does not follow. Such a stream is accepted (clients written for the hosted
 * service create streams for any chain it supports, and the stream is useful once the operator adds the
 * chain), and its statusMessage names each such chain and the variable that adds it. The message is worked
 * out from the running configuration at each answer, never stored in the record: a restart that follows the
 * chain clears it, one that stops following it brings it back, and no stored record needs rewriting for either.
 */

/** What adds a chain of each family to the ones the server follows. */
const ADDED_BY: Record<FamilyName, (them: string) => string> = {
  evm: (them) => `Add ${them} to CHAINPOST_CHAINS`,
  bitcoin: () => "Set CHAINPOST_BITCOIN_RPC (a Bitcoin Core node's URL)",
  solana: () => "Set CHAINPOST_SOLANA_RPC (a Solana node's URL)",
};

const label = (c: Chain): string => (c.slug === c.key ? c.key : `${c.key} (${c.slug})`);

/** `a`, `a and b`, `a, b and c`. */
const listed = (items: readonly string[]): string =>
  items.length === 1 ? items[0]! : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;

/** What a stream on chains this server does not follow is told: those chains (store keys), and the message. */
export interface Unfollowed {
  chains: string[];
  message: string;
}

/**
 * The chains of `chains` (store keys) this server does not follow, and the message naming them: one sentence
 * per family, in the form of the "matches nothing" message (what holds, then what to set). undefined when it
 * follows them all. A chain removed from streams or no longer producing blocks is left to its own message:
 * following it would not help.
 */
export function unfollowed(chains: readonly string[], follows: (chain: string) => boolean, now: number): Unfollowed | undefined {
  const missing = new Map<FamilyName, Chain[]>();
  for (const key of chains) {
    const chain = findChain(key);
    if (chain === undefined || chain.family === 'aptos' || follows(chain.key)) continue;
    if (chainRemoval(chain, 'streams', now) !== undefined || chainRemoval(chain, 'blocks', now) !== undefined) continue;
    missing.set(chain.family, [...(missing.get(chain.family) ?? []), chain]);
  }
  if (missing.size === 0) return undefined;
  const sentences = [...missing].map(([family, list]) => {
    const them = list.length === 1 ? 'it' : 'them';
    return `Stream cannot fire on chain${list.length === 1 ? '' : 's'} ${listed(list.map(label))}: this server does not follow ${them}. ${ADDED_BY[family](them)} and restart the server.`;
  });
  return { chains: [...missing.values()].flat().map((c) => c.key), message: sentences.join(' ') };
}

/** The chains this server follows, as the streams service tells its answers and its log. */
export class FollowedChains {
  constructor(
    /** Whether the running configuration follows a chain (store key). */
    private readonly follows: (chain: string) => boolean,
    private readonly log?: Logger,
  ) {}

  /**
   * The stream's answer with what cannot fire after the family's own message (what the definition lacks, or a
   * removed chain); a stream in error or terminated keeps that message alone.
   */
  answer(response: Record<string, unknown>, status: string, chains: readonly string[], now: number): Record<string, unknown> {
    if (status === 'error' || status === 'terminated') return response;
    const note = unfollowed(chains, this.follows, now);
    if (note === undefined) return response;
    const rest = typeof response['statusMessage'] === 'string' ? response['statusMessage'] : '';
    return { ...response, statusMessage: rest === '' ? note.message : `${rest} ${note.message}` };
  }

  /** A stream created or updated: one warn line when it cannot fire on some of its chains. */
  saved(streamId: string, chains: readonly string[], now: number): void {
    const note = unfollowed(chains, this.follows, now);
    if (note !== undefined)
      this.log?.warn('stream on a chain this server does not follow', { streamId, chains: note.chains, statusMessage: note.message });
  }
}

/** No configuration to compare with (unit tests, benches): every chain counts as followed. */
export const EVERY_CHAIN = new FollowedChains(() => true);
