import { hostedOperations, sharedResources, type Family } from '../families/family.js';
import type { FamilyStreams } from '../streams/resources.js';
import { followSolana, prepareSolana, type SolanaAdapters, type SolanaFollowParts } from './follow.js';
import { solanaBlockStore, type SolanaIngestPool } from './prepared.js';
import { solanaDefinition, solanaReplay } from './replay.js';
import { solanaWebhookBuilder } from './webhook.js';
import solanaWorker from './worker.js';
import {
  createSolanaStream,
  SOLANA_STREAMS,
  solanaStreamAnswer,
  solanaAddressBody,
  solanaBlockRequestBody,
  updateSolanaStream,
  type SolanaStreamDefinition,
} from './stream.js';

/** The Solana family (engine/families/family.ts). */
export const solana = {
  // Its name, match step and tasks: a worker of the pool loads only these (worker.ts).
  ...solanaWorker,
  streams: SOLANA_STREAMS,
  resources: sharedResources(SOLANA_STREAMS),
  follow: followSolana,
  blocks: solanaBlockStore,
  webhooks: (_parts: object) => solanaWebhookBuilder(),
  replay: solanaReplay,
  pool: (run): { solana: SolanaIngestPool } => ({
    solana: { prepare: (chain, answers) => run('solana', { chain, answers }, [answers.block]) },
  }),
  api: {
    create: createSolanaStream,
    update: updateSolanaStream,
    address: solanaAddressBody,
    stream: solanaStreamAnswer,
    blockRequest: solanaBlockRequestBody.transform(solanaDefinition),
    operations: hostedOperations('solana'),
  },
  prepare: prepareSolana,
} satisfies Family<
  SolanaStreamDefinition,
  FamilyStreams<SolanaStreamDefinition>,
  SolanaFollowParts,
  object,
  SolanaAdapters,
  SolanaAdapters
>;
