import type { FamilyWorker } from '../families/family.js';
import { evmAddressKey, evmFilterSet, walkProbe } from './filter.js';
import { prepareBlock, type NodeAnswers } from './prepared.js';

/** What a worker of the pool runs of the EVM family (app/worker.ts), and index.ts reuses: its match step and its tasks. */
const evmWorker = {
  name: 'evm',
  matching: {
    addressKey: evmAddressKey,
    compile: (version, entries, seed, addresses) =>
      evmFilterSet(
        version,
        entries.map((e) => ({ ...e, topic0: e.keys['topic0'] ?? [] })),
        addresses,
        seed,
      ),
    walk: walkProbe,
  },
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
} satisfies FamilyWorker;

export default evmWorker;
