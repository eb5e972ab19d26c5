import { blockKey } from '../../../ingest/chain-store.js';
import { pos } from '../../../evm/store.js';
import type { BlockTimeRow } from '../../common/block-times.js';
import type { DataIndex } from '../../common/indexer.js';
import { groupKey, groupRow } from '../../common/block-groups.js';
import { byContract, byTopic0, type ContractEntry, type ContractLog, type TopicEntry } from './logs.js';

/** The indexes of block times (`blockTimes`: common/block-times.ts reads them) and of logs by contract (`contractLogs`: logs.ts). */

export const blockTimesIndex: DataIndex = {
  name: 'blockTimes',
  apply(w, block) {
    w.put('blockTimes', blockKey(block.chain, block.number), [block.timestamp, block.hash] satisfies BlockTimeRow);
  },
};

export const contractLogsIndex: DataIndex = {
  name: 'contractLogs',
  apply(w, block) {
    /** Each contract's `a/` entries of the block, in log order: one row (common/block-groups.ts). */
    const byAddress = new Map<string, Array<[number, ContractEntry]>>();
    block.record.txs.forEach((t, ti) => {
      for (const l of t.logs) {
        const address = l.address.toLowerCase();
        const logIndex = Number(l.logIndex);
        const topics = l.topics.map((x) => x.toLowerCase());
        const log: ContractLog = [String(t.tx['hash']).toLowerCase(), ti, topics, l.data];
        let entries = byAddress.get(address);
        if (entries === undefined) byAddress.set(address, (entries = []));
        if (topics[0] === undefined) entries.push([logIndex, log]);
        else {
          entries.push([logIndex, topics[0]]);
          w.put('contractLogs', byTopic0(block.chain, address, topics[0]) + pos(block.number, logIndex), log satisfies TopicEntry);
        }
      }
    });
    for (const [address, entries] of byAddress)
      w.put('contractLogs', groupKey(byContract(block.chain, address), block.number), groupRow(entries));
  },
};
