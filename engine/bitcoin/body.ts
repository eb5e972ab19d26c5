import type { BtcHeader, BtcTransaction } from './block.js';
import { difficultyOf } from './block.js';
import type { BtcRecordView } from './record.js';
import { classifyScript, type ScriptType } from './script.js';

/**
 * The webhook body of a Bitcoin stream, in the shape of the hosted service's
 * OpenAPI schema (the block-replay response; notes §1.4 (b)): block fields all
 * strings, output values BTC numbers, input values BTC strings.
 *
 * Choices where the schema says nothing:
 * - timestamps are seconds (block.timestamp and blockTimestamp as strings, timestamp a number);
 * - a coinbase input shows the serialized outpoint (txid all zeros, vout 4294967295),
 *   scriptSigHex "" and its bytes in `coinbase`; other inputs have coinbase "";
 * - an input's value is the spent output's BTC with exactly 8 decimals ("0.00010000"),
 *   null when the spent output is not known (the narrative docs show null), and its
 *   addresses [] then;
 * - the mempool form's block is { hash "mempool", height "0", every other field "" }, its
 *   transaction's blockHash "mempool", blockNumber 0, blockTimestamp "", timestamp when first seen.
 */
export interface BtcBodyBlock {
  hash: string;
  height: string;
  timestamp: string;
  previousblockhash: string;
  merkleroot: string;
  difficulty: string;
  nTx: string;
  size: string;
  weight: string;
}

export interface BtcBodyInput {
  txid: string;
  vout: number;
  scriptSigHex: string;
  sequence: number;
  coinbase: string;
  txinwitness: string[];
  addresses: string[];
  value: string | null;
}

export interface BtcBodyOutput {
  n: number;
  value: number;
  scriptPubKeyHex: string;
  scriptPubKeyType: ScriptType;
  scriptPubKeyAddress: string;
  scriptPubKeyAddresses: string[];
}

export interface XpubMatch {
  xpub: string;
  address: string;
}

/** A transaction's own fields as the record has them, then its counts, place and parts. */
export interface BtcBodyTransaction
  extends Pick<BtcTransaction, 'txid' | 'hash' | 'version' | 'size' | 'vsize' | 'weight' | 'locktime' | 'isCoinbase'> {
  inputCount: number;
  outputCount: number;
  blockHash: string;
  blockNumber: number;
  blockTimestamp: string;
  timestamp: number;
  vin: BtcBodyInput[];
  vout: BtcBodyOutput[];
  xpubs?: XpubMatch[];
}

export interface BtcBody {
  confirmed: boolean;
  chainId: 'btc-mainnet';
  network: 'mainnet';
  streamId: string;
  tag: string;
  retries: number;
  block: BtcBodyBlock;
  transactions: BtcBodyTransaction[];
}

/** What a stream asks of its bodies. */
export interface BtcBodyOptions {
  streamId: string;
  tag: string;
  includeInputs: boolean;
  includeOutputs: boolean;
  /** The xpubs whose derived address the transaction at this index touched (none: no `xpubs` field). */
  xpubsOf?: (txIndex: number) => readonly XpubMatch[];
}

/** Satoshis as BTC with exactly 8 decimals, from the integer's digits (no float on the way). */
export function satsToBtcString(sats: number): string {
  if (!Number.isSafeInteger(sats) || sats < 0) throw new RangeError(`${sats} is not a number of satoshis`);
  const digits = String(sats).padStart(9, '0');
  return `${digits.slice(0, -8)}.${digits.slice(-8)}`;
}

/** Satoshis as a BTC number: the double nearest k·1e-8, which JSON writes as that decimal (or its shortest equal form). */
export const satsToBtc = (sats: number): number => sats / 1e8;

const hex = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');

const MEMPOOL_BLOCK: BtcBodyBlock = {
  hash: 'mempool',
  height: '0',
  timestamp: '',
  previousblockhash: '',
  merkleroot: '',
  difficulty: '',
  nTx: '',
  size: '',
  weight: '',
};

function blockOf(h: BtcHeader): BtcBodyBlock {
  return {
    hash: h.hash,
    height: String(h.height),
    timestamp: String(h.time),
    previousblockhash: h.previousblockhash,
    merkleroot: h.merkleroot,
    difficulty: String(difficultyOf(h.bits)),
    nTx: String(h.nTx),
    size: String(h.size),
    weight: String(h.weight),
  };
}

function inputOf(t: BtcTransaction, k: number): BtcBodyInput {
  const i = t.vin[k]!;
  const spent = i.prevout === undefined ? undefined : classifyScript(i.prevout.script).address;
  return {
    txid: i.txid,
    vout: i.vout,
    scriptSigHex: t.isCoinbase ? '' : hex(i.scriptSig),
    sequence: i.sequence,
    coinbase: t.isCoinbase ? hex(i.scriptSig) : '',
    txinwitness: i.witness.map(hex),
    addresses: spent === undefined ? [] : [spent],
    value: i.prevout === undefined ? null : satsToBtcString(i.prevout.value),
  };
}

function outputOf(t: BtcTransaction, n: number): BtcBodyOutput {
  const o = t.vout[n]!;
  const { type, address } = classifyScript(o.script);
  return {
    n,
    value: satsToBtc(o.value),
    scriptPubKeyHex: hex(o.script),
    scriptPubKeyType: type,
    scriptPubKeyAddress: address ?? '',
    scriptPubKeyAddresses: address === undefined ? [] : [address],
  };
}

/** Where a transaction is: its block's hash, height and time (the mempool's sentinels before it is mined). */
interface Placement {
  blockHash: string;
  blockNumber: number;
  blockTimestamp: string;
  timestamp: number;
}

function txOf(t: BtcTransaction, index: number, at: Placement, o: BtcBodyOptions): BtcBodyTransaction {
  const body: BtcBodyTransaction = {
    txid: t.txid,
    hash: t.hash,
    version: t.version,
    size: t.size,
    vsize: t.vsize,
    weight: t.weight,
    locktime: t.locktime,
    isCoinbase: t.isCoinbase,
    inputCount: t.vin.length,
    outputCount: t.vout.length,
    blockHash: at.blockHash,
    blockNumber: at.blockNumber,
    blockTimestamp: at.blockTimestamp,
    timestamp: at.timestamp,
    vin: o.includeInputs ? t.vin.map((_, k) => inputOf(t, k)) : [],
    vout: o.includeOutputs ? t.vout.map((_, n) => outputOf(t, n)) : [],
  };
  const xpubs = o.xpubsOf?.(index) ?? [];
  if (xpubs.length > 0) body.xpubs = [...xpubs];
  return body;
}

const envelope = (o: BtcBodyOptions, confirmed: boolean, block: BtcBodyBlock, transactions: BtcBodyTransaction[]): BtcBody => ({
  confirmed,
  chainId: 'btc-mainnet',
  network: 'mainnet',
  streamId: o.streamId,
  tag: o.tag,
  retries: 0,
  block,
  transactions,
});

/** The body of a block delivery: the transactions at `txIndexes` (the matched ones, in block order) decoded from the record alone. */
export function bitcoinBody(view: BtcRecordView, o: BtcBodyOptions & { confirmed: boolean; txIndexes: readonly number[] }): BtcBody {
  const h = view.header;
  const at: Placement = { blockHash: h.hash, blockNumber: h.height, blockTimestamp: String(h.time), timestamp: h.time };
  return envelope(
    o,
    o.confirmed,
    blockOf(h),
    o.txIndexes.map((i) => txOf(view.tx(i), i, at, o)),
  );
}

/** The body of a mempool delivery of `tx` (xpubsOf is asked for index 0); `now` (seconds), when it was first seen, is its timestamp and blockTimestamp is "". */
export function mempoolBody(tx: BtcTransaction, o: BtcBodyOptions & { now: number }): BtcBody {
  return envelope(o, false, MEMPOOL_BLOCK, [
    txOf(tx, 0, { blockHash: 'mempool', blockNumber: 0, blockTimestamp: '', timestamp: o.now }, o),
  ]);
}
