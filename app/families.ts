import { Families, bind, type Replays, type States, type Webhooks } from '../engine/families/registry.js';
import { embeddedDevnet } from '../http/clients/embedded-devnet.js';
import { slotSubscription } from '../http/clients/solana-slots.js';
import { CHAIN_FAMILIES } from './family-list.js';

/** The server's chain families (app/family-list.ts) with the adapters bound to those that take any: the registry every shared part is given. */
export const FAMILIES = new Families({
  ...CHAIN_FAMILIES,
  evm: bind(CHAIN_FAMILIES.evm, { devnet: embeddedDevnet }),
  solana: bind(CHAIN_FAMILIES.solana, { slotSubscription }),
});

export type ServerFamilies = typeof FAMILIES;

/** Each family's part of the commit path, by name: what a cluster node applies the published blocks with (bus/blocks.ts). */
export const BLOCK_STORES = FAMILIES.blockStores();

/** Each family's stream resources, by name. */
export type FamilyResources = ReturnType<ServerFamilies['resources']>;

/** Each family's webhook builder, by name. */
export type FamilyWebhooks = Webhooks<ServerFamilies['byName']>;

/** The block endpoints of each family that has them, by name. */
export type FamilyReplays = Replays<ServerFamilies['byName']>;

/** Each family's state, by name. */
export type FamilyStates = States<ServerFamilies['byName']>;
