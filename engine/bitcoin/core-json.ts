import { COINBASE_VOUT, ZERO_HASH, type BtcInput, type BtcTransaction, type Prevout } from './block.js';

/**
 * Bitcoin Core's JSON for blocks and transactions (`getblock <hash> 2|3`,
 * `getrawtransaction <txid> true|2`), and a transaction's reading into a
 * BtcTransaction (the mempool's; blocks are scanned from their bytes:
 * core-scan.ts).
 * Core changed scriptPubKey across versions: before v22 `addresses[]` (+
 * `reqSigs`), since v22 one `address`; both are typed, neither is read (the
 * address is derived from the script's bytes).
 */
export interface CoreScriptPubKey {
  asm?: string;
  desc?: string;
  hex: string;
  /** Core ≥ 22. */
  address?: string;
  /** Core < 22. */
  addresses?: string[] | null;
  reqSigs?: number;
  type: string;
}

/** Verbosity 3 (Core ≥ 25): the output an input spends. */
export interface CorePrevout {
  generated: boolean;
  height: number;
  /** BTC. */
  value: number;
  scriptPubKey: CoreScriptPubKey;
}

export interface CoreVin {
  /** Absent on a coinbase input. */
  txid?: string;
  vout?: number;
  /** A coinbase input's scriptSig, hex. */
  coinbase?: string;
  scriptSig?: { asm: string; hex: string };
  txinwitness?: string[];
  prevout?: CorePrevout;
  sequence: number;
}

export interface CoreVout {
  /** BTC, 8 decimals at most. */
  value: number;
  n: number;
  scriptPubKey: CoreScriptPubKey;
}

export interface CoreTransaction {
  txid: string;
  hash: string;
  version: number;
  size: number;
  vsize: number;
  weight: number;
  locktime: number;
  vin: CoreVin[];
  vout: CoreVout[];
  /** BTC; verbosity 2 and 3 when every prevout is known. */
  fee?: number;
  hex?: string;
  /** getrawtransaction only, once mined. */
  blockhash?: string;
  confirmations?: number;
  time?: number;
  blocktime?: number;
}

export interface CoreBlock {
  hash: string;
  confirmations?: number;
  height: number;
  version: number;
  versionHex?: string;
  merkleroot: string;
  time: number;
  mediantime?: number;
  nonce: number;
  /** The compact target as 8 hex digits. */
  bits: string;
  difficulty: number;
  chainwork?: string;
  nTx: number;
  /** Absent on the genesis block. */
  previousblockhash?: string;
  nextblockhash?: string;
  strippedsize: number;
  size: number;
  weight: number;
  tx: CoreTransaction[];
}

/**
 * BTC as Core writes it (a JSON number of at most 8 decimals) to satoshis, exactly.
 * For k satoshis (0 ≤ k ≤ 21e14 < 2^53) the parsed double x is within k·1e-8·2^-53 of
 * k·1e-8, and the product x·1e8 rounds once more: |x·1e8 − k| ≤ k·2^-52 < 0.47, so the
 * nearest integer is k (test/unit/engine/bitcoin/core-json.test.ts checks the range's ends and samples).
 */
export const btcToSats = (btc: number): number => Math.round(btc * 1e8);

const bytesOf = (hex: string | undefined): Uint8Array => Buffer.from(hex ?? '', 'hex');

/** A `prevout` (verbosity 3) or a getrawtransaction output as a Prevout. */
export const prevoutOf = (o: { value: number; scriptPubKey: CoreScriptPubKey }): Prevout => ({
  value: btcToSats(o.value),
  script: bytesOf(o.scriptPubKey.hex),
});

function inputOf(i: CoreVin): BtcInput {
  const witness = (i.txinwitness ?? []).map(bytesOf);
  if (i.coinbase !== undefined)
    return { txid: ZERO_HASH, vout: COINBASE_VOUT, scriptSig: bytesOf(i.coinbase), sequence: i.sequence, witness, prevout: undefined };
  return {
    txid: i.txid!,
    vout: i.vout!,
    scriptSig: bytesOf(i.scriptSig?.hex),
    sequence: i.sequence,
    witness,
    prevout: i.prevout === undefined ? undefined : prevoutOf(i.prevout),
  };
}

/** One transaction of getblock 2/3 or getrawtransaction; inputs without `prevout` stay unresolved (block.ts fillPrevouts). */
export function txFromCore(t: CoreTransaction): BtcTransaction {
  return {
    txid: t.txid,
    hash: t.hash,
    version: t.version,
    locktime: t.locktime,
    size: t.size,
    vsize: t.vsize,
    weight: t.weight,
    isCoinbase: t.vin.length === 1 && t.vin[0]!.coinbase !== undefined,
    vin: t.vin.map(inputOf),
    vout: t.vout.map((o) => ({ value: btcToSats(o.value), script: bytesOf(o.scriptPubKey.hex) })),
  };
}
