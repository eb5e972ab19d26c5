import type { FamilyWorker } from '../families/family.js';
import { bitcoinAddressKey, bitcoinFilterSet, walkBitcoinProbe } from './filter.js';
import { prepareBitcoinBlock, type BitcoinAnswers } from './prepared.js';
import { deriveWindow, type WindowTask } from './xpub-windows.js';

/** What a worker of the pool runs of the Bitcoin family (app/worker.ts), and index.ts reuses: its match step and its tasks. */
const bitcoinWorker = {
  name: 'bitcoin',
  // Its own keys are its xpubs' script hashes (the entries' derived keys).
  matching: {
    addressKey: bitcoinAddressKey,
    compile: (version, entries, _seed, keys) => bitcoinFilterSet(version, entries, keys),
    walk: walkBitcoinProbe,
  },
  tasks: {
    /** Bitcoin Core's getblock answer into the block record and probe column. */
    bitcoin(task: { answers: BitcoinAnswers }) {
      const block = prepareBitcoinBlock(task.answers);
      return { value: block, moved: block === null ? [] : [block.record, block.probe] };
    },
    /** An added xpub's gap window. */
    xpubWindow: (task: WindowTask) => ({ value: deriveWindow(task), moved: [] }),
  },
} satisfies FamilyWorker;

export default bitcoinWorker;
