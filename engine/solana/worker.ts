import type { FamilyWorker } from '../families/family.js';
import { solanaAddressKey, solanaFilterSet, walkSolanaProbe } from './filter.js';
import { prepareSolanaBlock, type SolanaAnswers } from './prepared.js';

/** What a worker of the pool runs of the Solana family (app/worker.ts), and index.ts reuses: its match step and its tasks. */
const solanaWorker = {
  name: 'solana',
  matching: {
    addressKey: solanaAddressKey,
    compile: (version, entries, seed, addresses) =>
      solanaFilterSet(
        version,
        entries.map((e) => ({ ...e, programIds: e.keys['programIds'] ?? [], mintAddresses: e.keys['mintAddresses'] ?? [] })),
        addresses,
        seed,
      ),
    walk: walkSolanaProbe,
  },
  tasks: {
    /** getBlock's answer into the slot record and probe column, or what the node said instead. */
    solana(task: { answers: SolanaAnswers }) {
      const block = prepareSolanaBlock(task.answers);
      return { value: block, moved: block === null || 'error' in block ? [] : [block.record, block.probe] };
    },
  },
} satisfies FamilyWorker;

export default solanaWorker;
