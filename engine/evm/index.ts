import { sharedResources, type Family } from '../families/family.js';
import type { FamilyStreams } from '../streams/resources.js';
import { followEvm, type EvmFollowParts } from './follow.js';
import { beginDevnet, devnetReadiness, prepareEvm, type EvmAdapters, type EvmState } from './devnet.js';
import type { StreamDefinition } from '../streams/model.js';
import { compileFilterSet, walkProbe } from './filter.js';
import { prepareBlock, type EvmIngestPool, type NodeAnswers } from './prepared.js';
import { EVM_STREAMS } from './stream.js';
import { addressBody, createStream, updateStream } from '../streams/schemas.js';
import { webhookBuilder, type BuilderDeps } from './webhook-builder.js';
import { chainReads } from './chain-reads.js';

/** The EVM family (engine/families/family.ts). */
export const evm = {
  name: 'evm',
  streams: EVM_STREAMS,
  resources: sharedResources(EVM_STREAMS),
  matching: {
    compile: (version, entries, seed) =>
      compileFilterSet(
        version,
        entries.map((e) => ({ ...e, topic0: e.keys['topic0'] ?? [] })),
        seed,
      ),
    walk: walkProbe,
  },
  follow: followEvm,
  // Trigger calls on their own connections to each node (the followers open them): never queued behind the follower's reads.
  webhooks: (parts: EvmWebhookParts, { triggerNodes }: EvmState) =>
    webhookBuilder({ ...parts, call: chainReads((chain) => triggerNodes.get(chain)).call }),
  tasks: {
    /** A block's node answers, as bytes, into what the main thread writes, index values encoded as the store encodes them. */
    ingest(task: { chain: string; answers: NodeAnswers }, { pack }) {
      const block = prepareBlock(task.chain, task.answers, pack);
      return {
        value: block,
        moved: block === null ? [] : [block.record, block.probe, ...Object.values(block.rows).flatMap((r) => [r.keys, r.bytes])],
      };
    },
  },
  pool: (run): { ingest: EvmIngestPool } => ({
    // The answers' bytes are moved to the worker, not copied.
    ingest: { prepare: (chain, answers) => run('ingest', { chain, answers }, [answers.block, answers.receipts, answers.traces]) },
  }),
  api: { create: createStream, update: updateStream, address: addressBody },
  prepare: prepareEvm,
  begin: beginDevnet,
  readiness: devnetReadiness,
} satisfies Family<StreamDefinition, FamilyStreams<StreamDefinition>, EvmFollowParts, EvmWebhookParts, EvmState, EvmAdapters>;

/** What EVM's webhooks read: the builder's parts but its calls, made on the trigger calls' connections of its state. */
type EvmWebhookParts = Omit<BuilderDeps, 'call'>;
