import type { RawBlock, RawInput, RawOutput, RawTransaction } from './raw.js';

/**
 * A Bitcoin block as the Bitcoin family stores it: what the block record
 * encodes and its view gives back, whichever way the block came (Core's
 * getblock JSON, or a serialized block). Values are satoshis, scripts bytes,
 * ids Core's display hex. An input carries the output it spends (`prevout`)
 * when that is known: getblock verbosity 3 gives it, otherwise the follower
 * fills it in (fillPrevouts) from its stored outputs or getrawtransaction.
 */
export interface BtcHeader {
  hash: string;
  height: number;
  /** Seconds since 1970. */
  time: number;
  /** All zeros for the genesis block (Core leaves the field out). */
  previousblockhash: string;
  merkleroot: string;
  /** The compact target, as a number (Core shows it as 8 hex digits). */
  bits: number;
  version: number;
  nonce: number;
  nTx: number;
  size: number;
  strippedsize: number;
  weight: number;
}

/** The output an input spends. */
export interface Prevout {
  /** Satoshis. */
  value: number;
  script: Uint8Array;
}

/** A serialized input's parts (a coinbase: txid all zeros, vout 0xffffffff, its coinbase bytes as scriptSig) and what it spends. */
export interface BtcInput extends RawInput {
  /** Undefined while unknown, and for a coinbase (it spends nothing). */
  prevout?: Prevout | undefined;
}

export type BtcOutput = RawOutput;

export interface BtcTransaction extends Omit<RawTransaction, 'vin' | 'vout'> {
  vin: BtcInput[];
  vout: BtcOutput[];
}

export interface BtcBlock {
  header: BtcHeader;
  txs: BtcTransaction[];
}

/** Finds the output `vout` of transaction `txid` (the follower's stored outputs, or getrawtransaction); undefined when unknown. */
export type PrevoutLookup = (txid: string, vout: number) => Prevout | undefined;

export const ZERO_HASH = '0'.repeat(64);
export const COINBASE_VOUT = 0xffffffff;

/** Core's difficulty of a compact target (GetDifficulty: 0xffff·2^208 / target), printed as Core prints it (16 significant digits). */
export function difficultyOf(bits: number): number {
  let shift = (bits >>> 24) & 0xff;
  let d = 0x0000ffff / (bits & 0x00ffffff);
  while (shift < 29) {
    d *= 256;
    shift++;
  }
  while (shift > 29) {
    d /= 256;
    shift--;
  }
  // UniValue writes doubles with setprecision(16): the JSON carries that rounding, so the record's readers do too.
  return Number(d.toPrecision(16));
}

/** A serialized transaction's parts; its inputs' prevouts from `lookup` where it knows them. */
export function txFromRaw(t: RawTransaction, lookup?: PrevoutLookup): BtcTransaction {
  const { vin, vout, ...fields } = t;
  return { ...fields, vin: vin.map((i) => ({ ...i, prevout: t.isCoinbase ? undefined : lookup?.(i.txid, i.vout) })), vout: vout.map((o) => ({ value: o.value, script: o.script })) };
}

/**
 * A serialized block (raw.ts parseBlock) at `height` (the block does not say it; the
 * follower knows it). Inputs spending an earlier output of the same block are resolved
 * from the block itself, the others through `lookup`.
 */
export function blockFromRaw(raw: RawBlock, height: number, lookup?: PrevoutLookup): BtcBlock {
  const h = raw.header;
  const block: BtcBlock = {
    header: { hash: h.hash, height, time: h.time, previousblockhash: h.previousblockhash, merkleroot: h.merkleroot, bits: h.bits, version: h.version, nonce: h.nonce, nTx: raw.tx.length, size: raw.size, strippedsize: raw.strippedsize, weight: raw.weight },
    txs: raw.tx.map((t) => txFromRaw(t)),
  };
  fillPrevouts(block.txs, lookup ?? (() => undefined));
  return block;
}

/** The non-coinbase inputs whose prevout is not known yet: what the follower must look up. */
export function unresolvedInputs(txs: readonly BtcTransaction[]): Array<{ tx: number; input: number; txid: string; vout: number }> {
  const out: Array<{ tx: number; input: number; txid: string; vout: number }> = [];
  txs.forEach((t, tx) => {
    if (!t.isCoinbase) t.vin.forEach((i, input) => i.prevout === undefined && out.push({ tx, input, txid: i.txid, vout: i.vout }));
  });
  return out;
}

/**
 * Fills in the unknown prevouts of `txs` (in place): first from the outputs of earlier
 * transactions in `txs` (a block may spend its own outputs, which no store holds yet),
 * then through `lookup`. Returns how many stay unknown.
 */
export function fillPrevouts(txs: readonly BtcTransaction[], lookup: PrevoutLookup): number {
  const byTxid = new Map<string, BtcTransaction>();
  let left = 0;
  for (const t of txs) {
    if (!t.isCoinbase) {
      for (const i of t.vin) {
        if (i.prevout !== undefined) continue;
        const own = byTxid.get(i.txid)?.vout[i.vout];
        i.prevout = own !== undefined ? { value: own.value, script: own.script } : lookup(i.txid, i.vout);
        if (i.prevout === undefined) left++;
      }
    }
    byTxid.set(t.txid, t);
  }
  return left;
}
