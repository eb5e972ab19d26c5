import type { BeginParts, PrepareParts } from '../families/family.js';
import type { Part } from '../readiness.js';
import type { Config } from '../config/config.js';
import type { Upstream } from '../ports.js';

/** The embedded devnet's process (app/families.ts binds it): engine/ starts no process. */
export interface EmbeddedDevnet {
  /**
   * Starts the devnet (what was ingested from a previous one whose state is gone cleared first), told on the
   * log and to the person at the terminal: its chain and its node.
   */
  start(parts: Pick<BeginParts, 'config' | 'log' | 'kv' | 'notice'>): Promise<{ chain: string; url: string; stop(): Promise<void> }>;
}

/** The adapters bound to the EVM family. */
export interface EvmAdapters {
  devnet: EmbeddedDevnet;
}

/** The EVM family's state. */
export interface EvmState {
  /** The chains it follows and their nodes: CHAINPOST_CHAINS or, once started, the embedded devnet. */
  chains: ReadonlyMap<string, string>;
  devnet: EmbeddedDevnet;
  /** The trigger calls' own connections to each chain's node, opened by its follower, read by its webhook builder. */
  triggerNodes: Map<string, Upstream>;
}

export const prepareEvm = ({ config }: PrepareParts, { devnet }: EvmAdapters): EvmState => ({
  chains: config.chains,
  devnet,
  triggerNodes: new Map(),
});

/** The embedded devnet when CHAINPOST_CHAINS is unset, before the worker pool: the EVM chain followed, at its own pace. */
export async function beginDevnet(
  { before, readiness, following, ...parts }: BeginParts,
  state: EvmState,
): Promise<{ stop(): Promise<void> } | void> {
  if (devnetReadiness(parts.config).length === 0) return;
  await before('devnet');
  const devnet = await state.devnet.start(parts);
  state.chains = new Map([[devnet.chain, devnet.url]]);
  following.blockTimes.set(devnet.chain, parts.config.devnet.blockTime * 1000);
  readiness.up('devnet');
  return devnet;
}

/** The embedded devnet is a part of the server's readiness. */
export const devnetReadiness = (config: Config): Part[] => (config.ingest === 'embedded' ? ['devnet'] : []);
