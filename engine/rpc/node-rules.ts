import type { TopicsBeyondLog } from './logs.js';

/**
 * Where nodes answer the same call differently, node access answers from the
 * store only by the rules of the node behind the chain, known from its
 * web3_clientVersion ("anvil/v1.7.1", "Geth/v1.14.8-stable/…").
 */
export interface NodeRules {
  /** The node's rule for a filter's topic positions beyond a log's own topics (undefined: not known). */
  topicsBeyondLog: TopicsBeyondLog;
  /** Whether eth_feeHistory may be answered from the store (anvil's rules are the ones known). */
  feeHistory: boolean;
}

export function nodeRules(clientVersion: string): NodeRules {
  const client = clientVersion.split('/')[0]!.toLowerCase();
  if (client === 'anvil') return { topicsBeyondLog: 'match', feeHistory: true };
  if (client === 'geth') return { topicsBeyondLog: 'mismatch', feeHistory: false };
  return { topicsBeyondLog: undefined, feeHistory: false };
}
