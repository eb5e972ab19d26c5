import { bitcoin } from '../engine/bitcoin/index.js';
import { evm } from '../engine/evm/index.js';
import { Families, type Replays, type Webhooks } from '../engine/families/registry.js';
import { solana } from '../engine/solana/index.js';

/** The server's chain families, a line each: the registry every shared part is given. */
export const FAMILIES = new Families({ evm, bitcoin, solana });

export type ServerFamilies = typeof FAMILIES;

/** Each family's stream resources, by name. */
export type FamilyResources = ReturnType<ServerFamilies['resources']>;

/** Each family's webhook builder, by name. */
export type FamilyWebhooks = Webhooks<ServerFamilies['byName']>;

/** The block endpoints of each family that has them, by name. */
export type FamilyReplays = Replays<ServerFamilies['byName']>;
