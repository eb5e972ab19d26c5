import { blockKey } from '../../../ingest/chain-store.js';
import { pos } from '../../../evm/store.js';
import type { BlockTimeRow } from '../../common/block-times.js';
import type { DataIndex } from '../../common/indexer.js';
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
    block.record.txs.forEach((t, ti) => {
      for (const l of t.logs) {
        const address = l.address.toLowerCase();
        const at = pos(block.number, Number(l.logIndex));
        const topics = l.topics.map((x) => x.toLowerCase());
        const log: ContractLog = [String(t.tx['hash']).toLowerCase(), ti, topics, l.data];
        if (topics[0] === undefined) w.put('contractLogs', byContract(block.chain, address) + at, log satisfies ContractEntry);
        else {
          w.put('contractLogs', byContract(block.chain, address) + at, topics[0] satisfies ContractEntry);
          w.put('contractLogs', byTopic0(block.chain, address, topics[0]) + at, log satisfies TopicEntry);
        }
      }
    });
  },
};
