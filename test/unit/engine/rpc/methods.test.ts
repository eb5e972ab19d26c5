import { describe, expect, it } from 'vitest';
import { answerBlock, methodRoute, quantity, shareable } from '../../../../engine/rpc/methods.js';
import { nodeRules } from '../../../../engine/rpc/node-rules.js';

const HASH = `0x${'ab'.repeat(32)}`;
const numberOfHash = (h: string): number | undefined => (h === HASH ? 42 : undefined);

describe('methodRoute', () => {
  it('answers three methods from the store and forwards the reads and a signed send', () => {
    expect(['eth_getLogs', 'eth_getBlockReceipts', 'eth_feeHistory'].map(methodRoute)).toEqual(['store', 'store', 'store']);
    for (const m of [
      'eth_getProof',
      'eth_call',
      'eth_getBalance',
      'eth_blockNumber',
      'eth_chainId',
      'eth_getBlockByNumber',
      'eth_getTransactionReceipt',
      'eth_getCode',
      'net_version',
      'eth_estimateGas',
      'eth_sendRawTransaction',
    ]) {
      expect(methodRoute(m), m).toBe('node');
    }
  });

  it('knows no node administration, account or filter method', () => {
    const refused = [
      'anvil_mine',
      'anvil_setBalance',
      'hardhat_impersonateAccount',
      'evm_snapshot',
      'debug_traceTransaction',
      'admin_nodeInfo',
      'personal_unlockAccount',
      'miner_stop',
      'txpool_content',
      'eth_sendTransaction',
      'eth_sign',
      'eth_signTransaction',
      'eth_signTypedData_v4',
      'eth_accounts',
      'eth_newFilter',
      'eth_getFilterChanges',
      'eth_subscribe',
      'constructor',
      '__proto__',
    ];
    for (const m of refused) expect(methodRoute(m), m).toBeUndefined();
  });

  it('shares answers of reads in flight, never of sends', () => {
    expect(shareable('eth_call')).toBe(true);
    expect(shareable('eth_sendRawTransaction')).toBe(false);
  });
});

describe('answerBlock', () => {
  it('reads the block a call names by number, EIP-1898 object or hash; never a tag', () => {
    expect(answerBlock('eth_getBalance', ['0xabc', '0x10'], '0x1', numberOfHash)).toBe(16);
    expect(answerBlock('eth_getBalance', ['0xabc', 'latest'], '0x1', numberOfHash)).toBeUndefined();
    expect(answerBlock('eth_getBalance', ['0xabc', 'finalized'], '0x1', numberOfHash)).toBeUndefined();
    expect(answerBlock('eth_call', [{}, { blockHash: HASH }], '0x', numberOfHash)).toBe(42);
    expect(answerBlock('eth_call', [{}, { blockNumber: '0x5' }], '0x', numberOfHash)).toBe(5);
    expect(answerBlock('eth_getStorageAt', ['0xabc', '0x0', '0x7'], '0x', numberOfHash)).toBe(7);
    expect(answerBlock('eth_getProof', ['0xabc', [], '0x8'], {}, numberOfHash)).toBe(8);
    expect(answerBlock('eth_getBlockByHash', [HASH, false], {}, numberOfHash)).toBe(42);
    expect(answerBlock('eth_estimateGas', [{}], '0x5208', numberOfHash)).toBeUndefined();
  });

  it('reads it from the answer for a transaction found by hash, not before it is mined', () => {
    expect(answerBlock('eth_getTransactionReceipt', [HASH], { blockNumber: '0x9' }, numberOfHash)).toBe(9);
    expect(answerBlock('eth_getTransactionByHash', [HASH], { blockNumber: null }, numberOfHash)).toBeUndefined();
    expect(answerBlock('eth_getTransactionReceipt', [HASH], null, numberOfHash)).toBeUndefined();
  });

  it("takes a log query's last block only when both ends are numbers", () => {
    expect(answerBlock('eth_getLogs', [{ fromBlock: '0x1', toBlock: '0x3' }], [], numberOfHash)).toBe(3);
    expect(answerBlock('eth_getLogs', [{ fromBlock: '0x1', toBlock: 'latest' }], [], numberOfHash)).toBeUndefined();
    expect(answerBlock('eth_getLogs', [{ fromBlock: '0x1' }], [], numberOfHash)).toBeUndefined();
    expect(answerBlock('eth_getLogs', [{ blockHash: HASH }], [], numberOfHash)).toBe(42);
  });

  it('has no block for answers about the head: chain id, fee history, block number', () => {
    for (const m of ['eth_chainId', 'eth_feeHistory', 'eth_blockNumber', 'eth_gasPrice'])
      expect(answerBlock(m, ['0x1', '0x5', []], '0x1', numberOfHash), m).toBeUndefined();
  });
});

describe('quantity', () => {
  it('reads hex quantities up to 2^52 and nothing else', () => {
    expect(quantity('0x0')).toBe(0);
    expect(quantity('0xFF')).toBe(255);
    expect(quantity('0xfffffffffffff')).toBe(2 ** 52 - 1);
    for (const v of ['0x', '12', 'latest', 12, null, '0x10000000000000', '0xg']) expect(quantity(v), String(v)).toBeUndefined();
  });
});

describe('nodeRules', () => {
  it("knows anvil's rules and geth's log-filter rule; nothing for other clients", () => {
    expect(nodeRules('anvil/v1.7.1')).toEqual({ topicsBeyondLog: 'match', feeHistory: true });
    expect(nodeRules('Geth/v1.14.8-stable-a9523b64/linux-amd64/go1.22.6')).toEqual({ topicsBeyondLog: 'mismatch', feeHistory: false });
    expect(nodeRules('reth/v1.0.0')).toEqual({ topicsBeyondLog: undefined, feeHistory: false });
    expect(nodeRules('')).toEqual({ topicsBeyondLog: undefined, feeHistory: false });
  });
});
