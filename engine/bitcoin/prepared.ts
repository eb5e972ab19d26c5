import { addressRows, removeAddressRows, writeAddressRows, type AddressRows } from './address-index.js';
import type { IngestPool, Kv } from '../ports.js';
import { blockKey, isCanonicalBlock, removeCanonical, writeCanonical } from '../ingest/chain-store.js';
import type { BlockStore } from '../ingest/commit.js';
import { fillPrevouts, unresolvedInputs, type Prevout } from './block.js';
import { scanCoreBlock } from './core-scan.js';
import { buildBtcProbe } from './probe.js';
import { BtcRecordView, encodeRecord } from './record.js';

/**
 * A Bitcoin block made ready to write off the main thread (the worker pool's
 * `bitcoin` task): Bitcoin Core's getblock answer parsed into the stored record
 * and probe column, with what the follower needs to check and complete it.
 */
export interface PreparedBitcoinBlock {
  number: number;
  hash: string;
  parentHash: string;
  record: Uint8Array;
  probe: Uint8Array;
  /** Inputs (coinbases aside) in the block. */
  inputCount: number;
  /** Inputs whose spent output neither the node nor the given prevouts had, in block order. */
  unresolved: Array<{ txid: string; vout: number }>;
  /** Each transaction's outputs (satoshis and script), kept for later blocks' inputs while the node gives no spent outputs. */
  outputs: Array<{ txid: string; outputs: Array<[value: number, script: Uint8Array]> }>;
  /** The block's rows of the address indexes (engine/bitcoin/address-index.ts). */
  addresses: AddressRows;
}

export type { Prevout } from './block.js';

export interface BitcoinAnswers {
  /** The response body of getblock(hash, 3). */
  block: Uint8Array;
  /** Spent outputs by outputKey(txid, vout), for inputs the node gave without them. */
  prevouts?: ReadonlyMap<string, Prevout>;
  /** Whether the block's outputs are wanted (kept for later inputs). */
  keepOutputs?: boolean;
}

export type BitcoinIngestPool = IngestPool<BitcoinAnswers, PreparedBitcoinBlock>;

/** Bitcoin Core's getblock answer into the block to write; null when it says null. */
export function prepareBitcoinBlock(answers: BitcoinAnswers): PreparedBitcoinBlock | null {
  const block = scanCoreBlock(answers.block);
  if (block === null) return null;
  const { header, txs } = block;
  // Inputs spending an earlier output of the block itself resolve here whatever the node gave.
  fillPrevouts(txs, (txid, vout) => answers.prevouts?.get(outputKey(txid, vout)));
  return {
    number: header.height,
    hash: header.hash,
    parentHash: header.previousblockhash,
    record: encodeRecord({ header, txs }),
    probe: buildBtcProbe(txs),
    inputCount: txs.reduce((n, t) => n + (t.isCoinbase ? 0 : t.vin.length), 0),
    unresolved: unresolvedInputs(txs).map(({ txid, vout }) => ({ txid, vout })),
    // Scripts copied out of the scan's arena: a view would send the whole arena to the main thread.
    addresses: addressRows(header.height, txs),
    outputs:
      answers.keepOutputs === true
        ? txs.map((t) => ({
            txid: t.txid,
            outputs: t.vout.map((o): [number, Uint8Array] => [o.value, Uint8Array.prototype.slice.call(o.script)]),
          }))
        : [],
  };
}

export const outputKey = (txid: string, vout: number): string => `${txid}:${vout}`;

/** `btcOutputs` keys: a transaction's outputs by `chain/txid`, and the txids of block n by `chain/#n` (what a reorg removes). */
const txKey = (chain: string, txid: string): string => `${chain}/${txid}`;
const blockTxsKey = (chain: string, n: number): string => `${chain}/#${n.toString(16).padStart(12, '0')}`;

interface StoredOutputs {
  o: Array<[number, Uint8Array]>;
}

/** Stores a block's outputs for the inputs of later blocks (call inside a transaction). */
export function writeOutputs(kv: Kv, chain: string, b: Pick<PreparedBitcoinBlock, 'number' | 'outputs'>): void {
  for (const t of b.outputs) kv.put('btcOutputs', txKey(chain, t.txid), { o: t.outputs } satisfies StoredOutputs);
  kv.put(
    'btcOutputs',
    blockTxsKey(chain, b.number),
    b.outputs.map((t) => t.txid),
  );
}

/** Removes what writeOutputs stored for block n (a reorg; call inside a transaction). */
export function removeOutputs(kv: Kv, chain: string, n: number): void {
  const txids = kv.get<string[]>('btcOutputs', blockTxsKey(chain, n));
  if (txids === undefined) return;
  for (const txid of txids) kv.remove('btcOutputs', txKey(chain, txid));
  kv.remove('btcOutputs', blockTxsKey(chain, n));
}

/** The stored outputs these inputs spend, by outputKey. */
export function prevoutsOf(kv: Kv, chain: string, inputs: ReadonlyArray<{ txid: string; vout: number }>): Map<string, Prevout> {
  const found = new Map<string, Prevout>();
  for (const { txid, vout } of inputs) {
    const o = kv.get<StoredOutputs>('btcOutputs', txKey(chain, txid))?.o[vout];
    if (o !== undefined) found.set(outputKey(txid, vout), { value: o[0], script: o[1] });
  }
  return found;
}

/**
 * The Bitcoin family's part of the commit path (engine/ingest/commit.ts): the follower's commits and a cluster
 * node's apply of a published block write alike. Its outputs are written when the follower kept them (for a
 * later block's inputs); its address rows add and spend as the block did.
 */
export const bitcoinBlockStore: BlockStore<PreparedBitcoinBlock> = {
  write(kv, chain, blocks) {
    for (const b of blocks) {
      writeCanonical(kv, chain, b);
      if (b.outputs.length > 0) writeOutputs(kv, chain, b);
      writeAddressRows(kv, chain, b.number, b.addresses);
    }
  },
  remove(kv, chain, from, to) {
    // The address indexes first, highest block first: each block puts back what it spent (engine/bitcoin/address-index.ts).
    for (let n = to; n >= from; n--) {
      const record = kv.getRaw('blocks', blockKey(chain, n));
      if (record !== undefined) removeAddressRows(kv, chain, BtcRecordView.of(record));
    }
    for (let n = from; n <= to; n++) {
      // Its outputs first: they are read from the record.
      removeOutputs(kv, chain, n);
      removeCanonical(kv, chain, n);
    }
  },
  received(data) {
    const b = data as Partial<PreparedBitcoinBlock>;
    if (!isCanonicalBlock(b) || !Array.isArray(b.outputs) || typeof b.addresses !== 'object' || b.addresses === null)
      throw new Error('a Bitcoin block without its number, hashes, record, probe column, outputs or address rows');
    return b as PreparedBitcoinBlock;
  },
};
