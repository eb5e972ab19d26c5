import { sharedResources, type Family } from '../families/family.js';
import type { FamilyStreams } from '../streams/resources.js';
import { followEvm, type EvmFollowParts } from './follow.js';
import { beginDevnet, devnetReadiness, prepareEvm, type EvmAdapters, type EvmState } from './devnet.js';
import type { StreamDefinition } from '../streams/model.js';
import { evmBlockStore, type EvmIngestPool } from './prepared.js';
import { EVM_STREAMS, evmStreamAnswer } from './stream.js';
import { addressBody, createStream, updateStream } from '../streams/schemas.js';
import { webhookBuilder, type BuilderDeps } from './webhook-builder.js';
import { chainReads } from './chain-reads.js';
import evmWorker from './worker.js';

/** The EVM family (engine/families/family.ts). */
export const evm = {
  // Its name, match step and tasks: a worker of the pool loads only these (worker.ts).
  ...evmWorker,
  streams: EVM_STREAMS,
  resources: sharedResources(EVM_STREAMS),
  follow: followEvm,
  blocks: evmBlockStore,
  // Trigger calls on their own connections to each node (the followers open them): never queued behind the follower's reads.
  webhooks: (parts: EvmWebhookParts, { triggerNodes }: EvmState) =>
    webhookBuilder({ ...parts, call: chainReads((chain) => triggerNodes.get(chain)).call }),
  pool: (run): { ingest: EvmIngestPool } => ({
    // The answers' bytes are moved to the worker, not copied.
    ingest: { prepare: (chain, answers) => run('ingest', { chain, answers }, [answers.block, answers.receipts, answers.traces]) },
  }),
  api: {
    create: createStream,
    update: updateStream,
    address: addressBody,
    stream: evmStreamAnswer,
    // The hosted EVM streams' operationIds (the official SDK's operation ids).
    operations: {
      create: 'CreateStream',
      list: 'GetStreams',
      get: 'GetStream',
      update: 'UpdateStream',
      remove: 'DeleteStream',
      status: 'UpdateStreamStatus',
      addAddresses: 'AddAddressToStream',
      removeAddresses: 'DeleteAddressFromStream',
      addresses: 'GetAddresses',
    },
  },
  prepare: prepareEvm,
  begin: beginDevnet,
  readiness: devnetReadiness,
} satisfies Family<StreamDefinition, FamilyStreams<StreamDefinition>, EvmFollowParts, EvmWebhookParts, EvmState, EvmAdapters>;

/** What EVM's webhooks read: the builder's parts but its calls, made on the trigger calls' connections of its state. */
type EvmWebhookParts = Omit<BuilderDeps, 'call'>;
