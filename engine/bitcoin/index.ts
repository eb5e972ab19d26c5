import type { Family, StreamParts } from '../families/family.js';
import { followBitcoin, type BitcoinFollowParts } from './follow.js';
import { compileBitcoinFilter, walkBitcoinProbe } from './filter.js';
import { BitcoinStreams } from './stream-service.js';
import { BITCOIN_STREAMS, type BitcoinStreamDefinition } from './stream.js';

/** The Bitcoin family (engine/families/family.ts): its streams have extended keys beyond the shared resources. */
export const bitcoin = {
  name: 'bitcoin',
  streams: BITCOIN_STREAMS,
  resources: (p: StreamParts) => new BitcoinStreams(p.kv, p.clock, p.dispatcher, p.watch, p.limits, p.targets, p.followed, p.plane),
  // Its own keys are its xpubs' script hashes (the entries' derived keys).
  matching: { compile: compileBitcoinFilter, walk: walkBitcoinProbe },
  follow: followBitcoin,
} satisfies Family<BitcoinStreamDefinition, BitcoinStreams, BitcoinFollowParts>;
