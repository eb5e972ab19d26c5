import { BITCOIN_STREAMS } from '../bitcoin/stream.js';
import { SOLANA_STREAMS } from '../solana/stream.js';
import { EVM_STREAMS } from '../evm/stream.js';
import type { StreamFamily, Watched } from './family.js';
import { familyNameOf, type FamilyName, type StoredStream, type StreamCommon } from './model.js';

/** Every stream family, by the name its records carry. */
const FAMILIES: Record<FamilyName, StreamFamily<StreamCommon>> = {
  evm: EVM_STREAMS as unknown as StreamFamily<StreamCommon>,
  bitcoin: BITCOIN_STREAMS as unknown as StreamFamily<StreamCommon>,
  solana: SOLANA_STREAMS as unknown as StreamFamily<StreamCommon>,
};

/** A stored record of any family with what matching reads (as the service tells the watchlist on create and update). */
export const watchedOf = (s: StoredStream): StoredStream & Watched => ({ ...s, ...FAMILIES[familyNameOf(s)].watched(s) });
