/**
 * Bitcoin Core's JSON for transactions and blocks (`TxToUniv`, `blockheaderToJSON`, `blockToJSON`, Core 25+),
 * decoded with bitcoinjs-lib. Amounts and doubles go through json.ts so the text is Core's digit for digit.
 */
import { Block, crypto, type Transaction } from 'bitcoinjs-lib';
import { btc, double16 } from './json.js';
import { coreAsm, scriptPubKeyJson } from './script.js';

/** The output an input spends, as Core's undo data has it. */
export interface Prevout {
  generated: boolean;
  height: number;
  value: bigint;
  script: Uint8Array;
}

/** How much of a transaction to show: `prevouts` per input (undefined = not known), `showPrevout` for verbosity 3. */
export interface TxDetail {
  prevouts?: Array<Prevout | undefined>;
  showPrevout: boolean;
}

const hex = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.length).toString('hex');
/** Hashes in Core's display order (byte-reversed). */
export const displayHex = (b: Uint8Array): string => Buffer.from(b).reverse().toString('hex');

function vinJson(tx: Transaction, i: number, prevout: Prevout | undefined, showPrevout: boolean): object {
  const input = tx.ins[i]!;
  const head = tx.isCoinbase()
    ? { coinbase: hex(input.script) }
    : { txid: displayHex(input.hash), vout: input.index, scriptSig: { asm: coreAsm(input.script, true), hex: hex(input.script) } };
  const witness = input.witness.length > 0 ? { txinwitness: input.witness.map(hex) } : {};
  const prev =
    showPrevout && prevout
      ? {
          prevout: {
            generated: prevout.generated,
            height: prevout.height,
            value: btc(prevout.value),
            scriptPubKey: scriptPubKeyJson(prevout.script),
          },
        }
      : {};
  return { ...head, ...witness, ...prev, sequence: input.sequence };
}

/** Core's wtxid; bitcoinjs answers zeros for a coinbase's (as the witness merkle tree wants), Core the real hash. */
const wtxid = (tx: Transaction): string => (tx.hasWitnesses() ? displayHex(crypto.hash256(tx.toBuffer())) : tx.getId());

/** The fee, when every input's prevout is known (Core shows it only with undo data, never for a coinbase). */
function feeOf(tx: Transaction, prevouts: Array<Prevout | undefined> | undefined): bigint | undefined {
  if (tx.isCoinbase() || prevouts === undefined || prevouts.length !== tx.ins.length || prevouts.some((p) => p === undefined))
    return undefined;
  return prevouts.reduce((sum, p) => sum + p!.value, 0n) - tx.outs.reduce((sum, o) => sum + o.value, 0n);
}

/** Core's transaction object as getblock 2/3 and getrawtransaction 1/2 show it, up to and including `hex`. */
export function txJson(tx: Transaction, detail: TxDetail = { showPrevout: false }): Record<string, unknown> {
  const fee = feeOf(tx, detail.prevouts);
  return {
    txid: tx.getId(),
    hash: wtxid(tx),
    version: tx.version,
    size: tx.byteLength(),
    vsize: tx.virtualSize(),
    weight: tx.weight(),
    locktime: tx.locktime,
    vin: tx.ins.map((_, i) => vinJson(tx, i, detail.prevouts?.[i], detail.showPrevout)),
    vout: tx.outs.map((o, n) => ({ value: btc(o.value), n, scriptPubKey: scriptPubKeyJson(o.script) })),
    ...(fee === undefined ? {} : { fee: btc(fee) }),
    hex: tx.toHex(),
  };
}

/** What a block's JSON needs from the chain around it. */
export interface BlockPlace {
  height: number;
  confirmations: number;
  mediantime: number;
  chainwork: bigint;
  previousblockhash?: string;
  nextblockhash?: string;
}

/** Core's `GetDifficulty`: the genesis target over this block's, in doubles as Core computes it. */
export function difficulty(bits: number): number {
  let shift = (bits >>> 24) & 0xff;
  let diff = 0x0000ffff / (bits & 0x00ffffff);
  for (; shift < 29; shift++) diff *= 256;
  for (; shift > 29; shift--) diff /= 256;
  return diff;
}

/** Expected hashes for a block at this target (`GetBlockProof`): 2^256 / (target + 1). */
export function blockWork(bits: number): bigint {
  const exponent = BigInt(bits >>> 24);
  const mantissa = BigInt(bits & 0x007fffff);
  const target = exponent <= 3n ? mantissa >> (8n * (3n - exponent)) : mantissa << (8n * (exponent - 3n));
  return target === 0n ? 0n : (1n << 256n) / (target + 1n);
}

const hex32 = (n: number): string => (n >>> 0).toString(16).padStart(8, '0');

/** What Core's block index holds of a block: its header fields and transaction count. */
export interface IndexEntry {
  hash: string;
  version: number;
  merkleroot: string;
  time: number;
  nonce: number;
  bits: number;
  nTx: number;
}

/** Core's `blockheaderToJSON` (getblockheader true and the head of getblock 1/2/3). */
export function headerJson(block: Block | IndexEntry, place: BlockPlace): Record<string, unknown> {
  const b =
    block instanceof Block
      ? {
          hash: block.getId(),
          version: block.version,
          merkleroot: displayHex(block.merkleRoot!),
          time: block.timestamp,
          nonce: block.nonce,
          bits: block.bits,
          nTx: block.transactions?.length ?? 0,
        }
      : block;
  return {
    hash: b.hash,
    confirmations: place.confirmations,
    height: place.height,
    version: b.version,
    versionHex: hex32(b.version),
    merkleroot: b.merkleroot,
    time: b.time,
    mediantime: place.mediantime,
    nonce: b.nonce,
    bits: hex32(b.bits),
    difficulty: double16(difficulty(b.bits)),
    chainwork: place.chainwork.toString(16).padStart(64, '0'),
    nTx: b.nTx,
    ...(place.previousblockhash === undefined ? {} : { previousblockhash: place.previousblockhash }),
    ...(place.nextblockhash === undefined ? {} : { nextblockhash: place.nextblockhash }),
  };
}

/** Core's `blockToJSON`: the header, sizes, then `tx` (txids for verbosity 1, else the given objects). */
export function blockJson(block: Block, place: BlockPlace, tx: unknown[]): Record<string, unknown> {
  return {
    ...headerJson(block, place),
    strippedsize: block.byteLength(false, false),
    size: block.byteLength(false, true),
    weight: block.weight(),
    tx,
  };
}
