import { sharedResources, type Family } from '../families/family.js';
import type { FamilyStreams } from '../streams/resources.js';
import { followSolana, prepareSolana, type SolanaAdapters, type SolanaFollowParts } from './follow.js';
import { compileSolanaFilter, walkSolanaProbe } from './filter.js';
import { prepareSolanaBlock, type SolanaAnswers, type SolanaIngestPool } from './prepared.js';
import { solanaDefinition, solanaReplay } from './replay.js';
import { solanaWebhookBuilder } from './webhook.js';
import {
  createSolanaStream,
  SOLANA_STREAMS,
  solanaAddressBody,
  solanaBlockRequestBody,
  updateSolanaStream,
  type SolanaStreamDefinition,
} from './stream.js';

/** The Solana family (engine/families/family.ts). */
export const solana = {
  name: 'solana',
  streams: SOLANA_STREAMS,
  resources: sharedResources(SOLANA_STREAMS),
  matching: {
    compile: (version, entries, seed) =>
      compileSolanaFilter(
        version,
        entries.map((e) => ({ ...e, programIds: e.keys['programIds'] ?? [], mintAddresses: e.keys['mintAddresses'] ?? [] })),
        seed,
      ),
    walk: walkSolanaProbe,
  },
  follow: followSolana,
  webhooks: (_parts: object) => solanaWebhookBuilder(),
  replay: solanaReplay,
  tasks: {
    /** getBlock's answer into the slot record and probe column, or what the node said instead. */
    solana(task: { answers: SolanaAnswers }) {
      const block = prepareSolanaBlock(task.answers);
      return { value: block, moved: block === null || 'error' in block ? [] : [block.record, block.probe] };
    },
  },
  pool: (run): { solana: SolanaIngestPool } => ({
    solana: { prepare: (chain, answers) => run('solana', { chain, answers }, [answers.block]) },
  }),
  api: {
    create: createSolanaStream,
    update: updateSolanaStream,
    address: solanaAddressBody,
    blockRequest: solanaBlockRequestBody.transform(solanaDefinition),
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
