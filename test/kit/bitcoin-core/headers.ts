/**
 * The block index below the blocks a stand-in serves, as a pruned node at a mainnet height has it: a header
 * for every height from genesis up, each computed from its height when asked (nothing is kept per height),
 * so a chain can stand above block 880,000 with only its top blocks in memory. Genesis is mainnet's; the
 * others have mainnet-like fields (a block every 600 s from genesis's time, 2025's difficulty) and a hash
 * that looks mined (leading zeros) and ends with the height in 8 hex digits, so a hash finds its height
 * without a table. Not modelled: such a hash is not the double SHA-256 of its header's fields.
 */
import { createHash } from 'node:crypto';
import { Block } from 'bitcoinjs-lib';
import { blockWork, type BlockPlace, type IndexEntry } from './shapes.js';

export const GENESIS_HASH = '000000000019d6689c085ae165831e934ff763ae46a2a6c172b3f1b60a8ce26f';

const GENESIS = {
  version: 1,
  merkleroot: '4a5e1e4baab89f3a32518a88c31bc87f618f76673e2cc77ab2127b7afdeda33b',
  time: 1231006505,
  bits: 0x1d00ffff,
  nonce: 2083236893,
};
/** Mainnet's difficulty bits around block 880,000 (January 2025). */
const BITS = 0x17028c61;
const BLOCK_SECONDS = 600;

const sha256 = (text: string): Buffer => createHash('sha256').update(text).digest();

export class PrunedHeaders {
  /** Headers for heights 0 … count − 1. */
  constructor(readonly count: number) {}

  hash(height: number): string {
    if (height === 0) return GENESIS_HASH;
    return `${'0'.repeat(19)}${sha256(`chainpost stand-in block ${height}`).toString('hex').slice(0, 37)}${height.toString(16).padStart(8, '0')}`;
  }

  /** The height of a hash this index holds, else undefined. */
  heightOf(hash: string): number | undefined {
    if (hash === GENESIS_HASH) return 0;
    const height = parseInt(hash.slice(56), 16);
    return height > 0 && height < this.count && this.hash(height) === hash ? height : undefined;
  }

  time(height: number): number {
    return GENESIS.time + BLOCK_SECONDS * height;
  }

  /** Core's median time past: the median of the block's time and its ten predecessors' (all increasing here). */
  mediantime(height: number): number {
    const n = Math.min(height + 1, 11);
    return this.time(height - (n - 1) + Math.floor(n / 2));
  }

  chainwork(height: number): bigint {
    return blockWork(GENESIS.bits) + BigInt(height) * blockWork(BITS);
  }

  /** What the index holds of the block at `height`. */
  entry(height: number): IndexEntry {
    const own =
      height === 0
        ? GENESIS
        : {
            version: 0x20000000,
            merkleroot: sha256(`chainpost stand-in merkle root ${height}`).toString('hex'),
            time: this.time(height),
            bits: BITS,
            nonce: sha256(`chainpost stand-in nonce ${height}`).readUInt32LE(),
          };
    // A pruned block's transaction count stays in the index; any plausible count does here.
    return { ...own, hash: this.hash(height), nTx: height === 0 ? 1 : 1 + (height % 4000) };
  }

  /** Where the block at `height` is: below a chain whose tip is `tip` and whose block at `count` is `next`. */
  place(height: number, tip: number, next: string | undefined): BlockPlace {
    const after = height + 1 < this.count ? this.hash(height + 1) : next;
    return {
      height,
      confirmations: tip - height + 1,
      mediantime: this.mediantime(height),
      chainwork: this.chainwork(height),
      ...(height === 0 ? {} : { previousblockhash: this.hash(height - 1) }),
      ...(after === undefined ? {} : { nextblockhash: after }),
    };
  }

  /** The 80-byte header (getblockheader false) with these fields. */
  raw(height: number): string {
    const h = this.entry(height);
    const block = new Block();
    block.version = h.version;
    block.prevHash = Buffer.from(height === 0 ? '0'.repeat(64) : this.hash(height - 1), 'hex').reverse();
    block.merkleRoot = Buffer.from(h.merkleroot, 'hex').reverse();
    block.timestamp = h.time;
    block.bits = h.bits;
    block.nonce = h.nonce;
    return block.toHex(true);
  }
}
