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
export interface BtcInput {
  /** The spent output's transaction (all zeros for a coinbase). */
  txid: string;
  vout: number;
  scriptSig: Uint8Array;
  sequence: number;
  /** Witness stack items (empty without witness). */
  witness: Uint8Array[];
  /** Undefined while unknown, and for a coinbase (it spends nothing). */
  prevout?: Prevout | undefined;
}

export interface BtcOutput {
  /** Satoshis (up to 21e14: a safe integer). */
  value: number;
  script: Uint8Array;
}

/** A transaction with the ids and sizes Bitcoin Core reports: txid (without witness), hash (wtxid), size, vsize, weight. */
export interface BtcTransaction {
  txid: string;
  /** The wtxid; equal to txid without witness. */
  hash: string;
  version: number;
  locktime: number;
  size: number;
  vsize: number;
  weight: number;
  vin: BtcInput[];
  vout: BtcOutput[];
  isCoinbase: boolean;
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
