import { bitcoin } from '../engine/bitcoin/index.js';
import { evm } from '../engine/evm/index.js';
import { Families } from '../engine/families/registry.js';
import { solana } from '../engine/solana/index.js';

/** The server's chain families, a line each: the registry every shared part is given. */
export const FAMILIES = new Families({ evm, bitcoin, solana });

export type ServerFamilies = typeof FAMILIES;

/** Each family's stream resources, by name. */
export type FamilyResources = ReturnType<ServerFamilies['resources']>;
