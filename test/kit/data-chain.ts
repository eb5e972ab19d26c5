import { indexedBlock, type IndexedBlock } from '../../engine/data-api/common/indexer.js';
import type { BlockRecord, StoredTx } from '../../engine/evm/record.js';
import { TRANSFER, TRANSFER_SINGLE } from '../../engine/evm/store.js';

/**
 * A synthetic EVM chain for bench:data, made the way a node's answers become
 * records (engine/evm/record.ts): blocks of transactions each carrying one
 * transfer log, ERC-20 mostly and an ERC-721 or ERC-1155 one in ten, between
 * `wallets` addresses spread over the key space as real ones are, over `tokens`
 * contracts of which a few carry most transfers (as on mainnet). Deterministic
 * for a seed, so a run can be repeated.
 */

export interface ChainShape {
  blocks: number;
  transfersPerBlock: number;
  wallets: number;
  tokens: number;
  /** Contracts among `tokens` that are NFT collections (the last ones). */
  nftContracts: number;
  seed: number;
}

/** Block 0's time (2023-11-14); a block every 12 s. */
const GENESIS_TIME = 1_700_000_000;
export const syntheticTime = (number: number): number => GENESIS_TIME + number * 12;

/** mulberry32: a small seeded PRNG (uniform in [0, 1)). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** 32 bits mixed (murmur3's finalizer): index i → a well-spread word. */
function mix(x: number): number {
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
  return (x ^ (x >>> 16)) >>> 0;
}

const word8 = (x: number): string => x.toString(16).padStart(8, '0');

/** The address of wallet i (or of token i under another tag): 20 bytes spread over the key space, lower case. */
export function addressOf(kind: 'wallet' | 'token', i: number): string {
  const tag = kind === 'wallet' ? 0x1000_0000 : 0x2000_0000;
  return `0x${word8(mix(i ^ tag))}${word8(mix(i + 1 + tag))}${word8(mix(i + 2 + tag))}${word8(mix(i + 3 + tag))}${word8(i)}`;
}

const topicOf = (address: string): string => `0x${'0'.repeat(24)}${address.slice(2)}`;
const quantity = (n: number | bigint): string => `0x${n.toString(16)}`;
const word = (n: number | bigint): string => n.toString(16).padStart(64, '0');

/**
 * Token i of `tokens` with a power law (token 0 the busiest): about a third of the transfers go to the
 * first 1% of tokens, as stablecoins and wrapped ether take theirs on mainnet.
 */
function pickToken(r: number, tokens: number): number {
  return Math.min(tokens - 1, Math.floor(tokens ** r) - 1);
}

/** Block `n` of the chain with its transfers. */
export function syntheticBlock(chain: string, shape: ChainShape, n: number): IndexedBlock {
  const rand = prng(shape.seed * 1_000_003 + n);
  const number = n;
  const timestamp = syntheticTime(n);
  const hash = syntheticHash(number);
  const txs: StoredTx[] = n === 0 ? creations(shape) : [];
  const erc20s = shape.tokens - shape.nftContracts;
  for (let i = 0; i < shape.transfersPerBlock; i++) {
    // Three in ten are mints, so that balances build up as on a real chain.
    const from = rand() < 0.3 ? ZERO : addressOf('wallet', Math.floor(rand() * shape.wallets));
    const to = addressOf('wallet', Math.floor(rand() * shape.wallets));
    const nft = rand() < 0.1 && shape.nftContracts > 0;
    const token = nft ? erc20s + Math.floor(rand() * shape.nftContracts) : pickToken(rand(), erc20s);
    const contract = addressOf('token', token);
    const txHash = `0x${word8(mix(number))}${word8(i)}${word8(mix(i ^ number))}${'0'.repeat(32)}${word8(number)}`;
    const tokenId = BigInt(Math.floor(rand() * 10_000));
    const log = nft
      ? token % 2 === 0
        ? { address: contract, topics: [TRANSFER, topicOf(from), topicOf(to), `0x${word(tokenId)}`], data: '0x', logIndex: quantity(i) }
        : {
            address: contract,
            topics: [TRANSFER_SINGLE, topicOf(from), topicOf(from), topicOf(to)],
            data: `0x${word(tokenId)}${word(1 + Math.floor(rand() * 5))}`,
            logIndex: quantity(i),
          }
      : {
          address: contract,
          topics: [TRANSFER, topicOf(from), topicOf(to)],
          data: `0x${word(BigInt(Math.floor(rand() * 1e9)) * 10n ** 9n)}`,
          logIndex: quantity(i),
        };
    txs.push({
      tx: {
        hash: txHash,
        from,
        to: contract,
        value: '0x0',
        nonce: quantity(n),
        gas: '0x30d40',
        gasPrice: '0x3b9aca00',
        input: '0xa9059cbb',
        type: '0x2',
      },
      receipt: {
        status: '0x1',
        gasUsed: '0xc350',
        cumulativeGasUsed: quantity(50_000 * (i + 1)),
        effectiveGasPrice: '0x3b9aca00',
        contractAddress: null,
        type: '0x2',
      },
      logs: [log],
    });
  }
  const header = {
    number: quantity(number),
    hash,
    parentHash: n === 0 ? `0x${'0'.repeat(64)}` : syntheticHash(number - 1),
    timestamp: quantity(timestamp),
    miner: addressOf('wallet', 0),
    gasUsed: quantity(50_000 * txs.length),
    gasLimit: '0x1c9c380',
    baseFeePerGas: '0x3b9aca00',
  };
  const record: BlockRecord = { header, txs, internal: [] };
  return indexedBlock(chain, number, hash, record);
}

const ZERO = `0x${'0'.repeat(40)}`;

/** Block 0 creates every token (receipts with contractAddress): the indexes then know each token's whole history and ask no node. */
function creations(shape: ChainShape): StoredTx[] {
  return Array.from({ length: shape.tokens }, (_, i) => ({
    tx: {
      hash: `0x${word8(mix(i))}${'0'.repeat(48)}${word8(i)}`,
      from: addressOf('wallet', i),
      to: null,
      value: '0x0',
      nonce: '0x0',
      gas: '0x30d40',
      gasPrice: '0x3b9aca00',
      input: '0x60806040',
      type: '0x2',
    },
    receipt: {
      status: '0x1',
      gasUsed: '0x30d40',
      cumulativeGasUsed: quantity(200_000 * (i + 1)),
      effectiveGasPrice: '0x3b9aca00',
      contractAddress: addressOf('token', i),
      type: '0x2',
    },
    logs: [],
  }));
}

/** The hash syntheticBlock gives block `number`. */
export function syntheticHash(number: number): string {
  return `0x${word8(mix(number))}${word8(mix(number ^ 0x55))}${'0'.repeat(40)}${word8(number)}`;
}
