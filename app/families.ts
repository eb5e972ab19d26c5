import { bitcoin } from '../engine/bitcoin/index.js';
import { evm } from '../engine/evm/index.js';
import { Families, bind, type Replays, type States, type Webhooks } from '../engine/families/registry.js';
import { solana } from '../engine/solana/index.js';
import { embeddedDevnet } from '../http/clients/embedded-devnet.js';
import { slotSubscription } from '../http/clients/solana-slots.js';

/** The server's chain families, a line each with the adapters bound to it: the registry every shared part is given. */
export const FAMILIES = new Families({
  evm: bind(evm, { devnet: embeddedDevnet }),
  bitcoin,
  solana: bind(solana, { slotSubscription }),
});

export type ServerFamilies = typeof FAMILIES;

/** Each family's stream resources, by name. */
export type FamilyResources = ReturnType<ServerFamilies['resources']>;

/** Each family's webhook builder, by name. */
export type FamilyWebhooks = Webhooks<ServerFamilies['byName']>;

/** The block endpoints of each family that has them, by name. */
export type FamilyReplays = Replays<ServerFamilies['byName']>;

/** Each family's state, by name. */
export type FamilyStates = States<ServerFamilies['byName']>;
