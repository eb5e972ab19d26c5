/**
 * Which methods node access serves, and how. Three are answered from the
 * store when it holds what they ask about; the other reads, and sending a
 * signed transaction, go to the chain's node. Nothing else exists here: node
 * administration (anvil_, hardhat_, evm_, debug_, admin_, miner_, txpool_),
 * accounts kept by the node (personal_, eth_accounts, eth_sign*,
 * eth_sendTransaction), and node-side filters, whose ids every caller of the
 * shared node could poll or remove.
 */
export type MethodRoute = 'store' | 'node';

const FROM_STORE = ['eth_getLogs', 'eth_getBlockReceipts', 'eth_feeHistory'];

const TO_NODE = [
  'web3_clientVersion',
  'web3_sha3',
  'net_version',
  'net_listening',
  'net_peerCount',
  'eth_chainId',
  'eth_blockNumber',
  'eth_syncing',
  'eth_protocolVersion',
  'eth_gasPrice',
  'eth_maxPriorityFeePerGas',
  'eth_blobBaseFee',
  'eth_getBalance',
  'eth_getCode',
  'eth_getStorageAt',
  'eth_getTransactionCount',
  'eth_getProof',
  'eth_getAccount',
  'eth_call',
  'eth_estimateGas',
  'eth_createAccessList',
  'eth_simulateV1',
  'eth_getBlockByNumber',
  'eth_getBlockByHash',
  'eth_getBlockTransactionCountByNumber',
  'eth_getBlockTransactionCountByHash',
  'eth_getUncleCountByBlockNumber',
  'eth_getUncleCountByBlockHash',
  'eth_getUncleByBlockNumberAndIndex',
  'eth_getUncleByBlockHashAndIndex',
  'eth_getTransactionByHash',
  'eth_getTransactionByBlockNumberAndIndex',
  'eth_getTransactionByBlockHashAndIndex',
  'eth_getTransactionReceipt',
  'eth_getRawTransactionByHash',
  'eth_sendRawTransaction',
];

const ROUTES = new Map<string, MethodRoute>([...FROM_STORE.map((m) => [m, 'store'] as const), ...TO_NODE.map((m) => [m, 'node'] as const)]);

/** How `method` is served; undefined when it does not exist here (-32601). */
export const methodRoute = (method: string): MethodRoute | undefined => ROUTES.get(method);

/** Identical calls in flight may share one answer of the node, except a send: each caller's send is its own. */
export const shareable = (method: string): boolean => method !== 'eth_sendRawTransaction';

/** Where a method names the block its answer is about: the position of that parameter. */
const BLOCK_PARAM: Readonly<Record<string, number>> = {
  eth_getBalance: 1,
  eth_getCode: 1,
  eth_getTransactionCount: 1,
  eth_getStorageAt: 2,
  eth_getProof: 2,
  eth_getAccount: 1,
  eth_call: 1,
  eth_estimateGas: 1,
  eth_createAccessList: 1,
  eth_getBlockByNumber: 0,
  eth_getBlockByHash: 0,
  eth_getBlockReceipts: 0,
  eth_getBlockTransactionCountByNumber: 0,
  eth_getBlockTransactionCountByHash: 0,
  eth_getTransactionByBlockNumberAndIndex: 0,
  eth_getTransactionByBlockHashAndIndex: 0,
};

/** Methods whose answer carries the block it is about (a transaction found by hash). */
const RESULT_BLOCK = new Set(['eth_getTransactionByHash', 'eth_getTransactionReceipt']);

/**
 * The block a node's answer is about, where the call or the answer says
 * which: a number or a block hash, never a tag ("latest" moves). Undefined
 * when the answer depends on the head, or says nothing (null: not found yet).
 */
export function answerBlock(
  method: string,
  params: readonly unknown[],
  result: unknown,
  numberOfHash: (hash: string) => number | undefined,
): number | undefined {
  if (result === null || result === undefined) return undefined;
  if (RESULT_BLOCK.has(method)) return quantity((result as { blockNumber?: unknown }).blockNumber);
  if (method === 'eth_getLogs') {
    const f = params[0] as { fromBlock?: unknown; toBlock?: unknown; blockHash?: unknown } | undefined;
    if (typeof f?.blockHash === 'string') return numberOfHash(f.blockHash);
    return quantity(f?.fromBlock) !== undefined ? quantity(f?.toBlock) : undefined;
  }
  const at = BLOCK_PARAM[method];
  return at === undefined ? undefined : blockOf(params[at], numberOfHash);
}

/** A block parameter naming one block for good: a number or a hash, bare or as an EIP-1898 object. */
function blockOf(param: unknown, numberOfHash: (hash: string) => number | undefined): number | undefined {
  if (isHash(param)) return numberOfHash(param);
  if (typeof param === 'object' && param !== null) {
    const o = param as { blockHash?: unknown; blockNumber?: unknown };
    return isHash(o.blockHash) ? numberOfHash(o.blockHash) : quantity(o.blockNumber);
  }
  return quantity(param);
}

/** A hex quantity ("0x1a") as a number; undefined for anything else (tags included). */
export function quantity(v: unknown): number | undefined {
  if (typeof v !== 'string' || !/^0x[0-9a-fA-F]{1,13}$/.test(v)) return undefined;
  return parseInt(v, 16);
}

export const isHash = (v: unknown): v is string => typeof v === 'string' && /^0x[0-9a-fA-F]{64}$/.test(v);
