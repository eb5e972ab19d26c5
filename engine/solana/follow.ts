import { followerOptions } from '../ingest/following.js';
import { findChain } from '../chains/registry.js';
import type { FollowParts, PrepareParts, Started } from '../families/family.js';
import type { SlotWake } from '../ports.js';
import { SolanaFollower } from './follower.js';
import type { SolanaIngestPool } from './prepared.js';
import { SOLANA_CHAIN } from './stream.js';

/** What the Solana follower needs beyond the shared parts. */
export interface SolanaFollowParts {
  pool: { solana: SolanaIngestPool };
}

/** The adapters bound to the Solana family (app/families.ts), which are its state. */
export interface SolanaAdapters {
  /** slotSubscribe on a node's WebSocket. */
  slotSubscription(wsUrl: string): SlotWake & Started;
}

/** The Solana chains' skipped slots on /metrics, registered before its followers start (its help and type shown without them). */
export function prepareSolana({ metrics, following }: PrepareParts, adapters: SolanaAdapters): SolanaAdapters {
  metrics.gauge(
    'chainpost_chain_skipped_slots_total',
    'Slots the node reported skipped (no block), per Solana chain, since the start.',
    () =>
      following.followers.flatMap((f) => {
        const s = f.status();
        return 'skippedSlots' in s && typeof s.skippedSlots === 'number' ? [{ labels: { chain: s.chain }, value: s.skippedSlots }] : [];
      }),
    'counter',
  );
  return adapters;
}

/** The Solana follower, when a Solana node is configured (CHAINPOST_SOLANA_RPC), woken by its slot subscription when it has a WebSocket. */
export function followSolana(
  { config, log, clock, kv, following, events, rpc, pool }: FollowParts & SolanaFollowParts,
  { slotSubscription }: SolanaAdapters,
): Started | void {
  if (config.solana.url === undefined) return;
  const upstream = rpc(config.solana.url);
  const slots = config.solana.wsUrl === undefined ? undefined : slotSubscription(config.solana.wsUrl);
  following.add(
    SOLANA_CHAIN,
    config.solana.url,
    upstream,
    (stored) =>
      new SolanaFollower(SOLANA_CHAIN, upstream, kv, clock, events(), log, {
        ...followerOptions(config, findChain(SOLANA_CHAIN)!, stored),
        pollMs: config.solana.pollMs,
        pool: pool.solana,
        ...(slots === undefined ? {} : { slots }),
      }),
  );
  return slots;
}
