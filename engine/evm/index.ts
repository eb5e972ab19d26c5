import { sharedResources, type Family } from '../families/family.js';
import type { FamilyStreams } from '../streams/resources.js';
import { followEvm, type EvmFollowParts } from './follow.js';
import type { StreamDefinition } from '../streams/model.js';
import { compileFilterSet, walkProbe } from './filter.js';
import { EVM_STREAMS } from './stream.js';
import { webhookBuilder, type BuilderDeps } from './webhook-builder.js';

/** The EVM family (engine/families/family.ts). */
export const evm = {
  name: 'evm',
  streams: EVM_STREAMS,
  resources: sharedResources(EVM_STREAMS),
  matching: {
    compile: (version, entries, seed) => compileFilterSet(version, entries.map((e) => ({ ...e, topic0: e.keys['topic0'] ?? [] })), seed),
    walk: walkProbe,
  },
  follow: followEvm,
  webhooks: (parts: BuilderDeps) => webhookBuilder(parts),
} satisfies Family<StreamDefinition, FamilyStreams<StreamDefinition>, EvmFollowParts, BuilderDeps>;
