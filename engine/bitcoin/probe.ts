import { hash } from 'node:crypto';
import { eachHit, type ProbeKeys } from '../match/layered.js';
import type { BtcTransaction } from './block.js';
import { hasAddress, scriptType } from './script.js';

/**
 * The probe column of a Bitcoin block: the scripts a watched address can be,
 * each as a fixed-width key with the transaction it came from, so a matcher
 * scans it without decoding the block record.
 *
 *   u8 version (1) | u32 count | count × 32-byte key | count × u32 ref
 *
 * key = scriptKey(script) of every output with an address form, and of every
 * input's spent output when known and with an address form (outputs to no
 * address, OP_RETURN, bare multisig, pay-to-pubkey, cannot be watched);
 * ref = kind << 24 | transaction index. Per transaction, outputs then inputs.
 */
export const enum BtcProbeKind {
  /** The transaction pays the script (an output). */
  Receiver = 0,
  /** The transaction spends from the script (an input's prevout). */
  Spender = 1,
}

const BTC_PROBE_HEADER = 5;
const VERSION = 1;
const KEY = 32;

/**
 * A script's key: sha256 of the scriptPubKey (Electrum's script hash, here in hash
 * order). Uniform bytes, so the KeySet indexes them without hashing again; and P2PKH,
 * P2WPKH and P2SH-P2WPKH of one public key stay distinct, as their addresses are.
 * node:crypto's one-shot hash: about 1 µs a script here against 5 µs for @noble/hashes.
 */
export const scriptKey = (script: Uint8Array): Uint8Array => hash('sha256', script, 'buffer');

export const btcProbeRef = (kind: BtcProbeKind, txIndex: number): number => ((kind << 24) | txIndex) >>> 0;

/** The probe column of `txs` (a block's, or one mempool transaction). */
export function buildBtcProbe(txs: readonly BtcTransaction[]): Uint8Array {
  const scripts: Uint8Array[] = [];
  const refs: number[] = [];
  txs.forEach((t, index) => {
    for (const o of t.vout) {
      if (hasAddress(scriptType(o.script))) {
        scripts.push(o.script);
        refs.push(btcProbeRef(BtcProbeKind.Receiver, index));
      }
    }
    for (const i of t.vin) {
      if (i.prevout !== undefined && hasAddress(scriptType(i.prevout.script))) {
        scripts.push(i.prevout.script);
        refs.push(btcProbeRef(BtcProbeKind.Spender, index));
      }
    }
  });
  const out = Buffer.allocUnsafe(BTC_PROBE_HEADER + scripts.length * (KEY + 4));
  out.writeUInt8(VERSION, 0);
  out.writeUInt32LE(scripts.length, 1);
  scripts.forEach((s, k) => out.set(scriptKey(s), BTC_PROBE_HEADER + k * KEY));
  const refsAt = BTC_PROBE_HEADER + scripts.length * KEY;
  refs.forEach((ref, k) => out.writeUInt32LE(ref, refsAt + k * 4));
  return out;
}

/** A probe column's count and where its keys and refs start. */
export function readBtcProbe(bytes: Uint8Array): { count: number; keysAt: number; refsAt: number } {
  if (bytes[0] !== VERSION) throw new Error(`Bitcoin probe column version ${bytes[0]} is not ${VERSION}`);
  const count = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(1, true);
  return { count, keysAt: BTC_PROBE_HEADER, refsAt: BTC_PROBE_HEADER + count * KEY };
}

/**
 * Per stream index, the refs of the probe entries whose key `keys` (32-byte keys, each
 * a watched script's scriptKey) holds, in probe order; a ref is listed once per
 * stream even when several of its scripts are watched (a transaction paying two
 * watched addresses, or one twice).
 */
export function bitcoinProbeMatch(keys: ProbeKeys, probe: Uint8Array): Map<number, number[]> {
  const out = new Map<number, number[]>();
  if (keys.size === 0) return out;
  if (keys.width !== KEY) throw new RangeError(`a Bitcoin probe needs a key set of ${KEY}-byte keys, not ${keys.width}`);
  const { count, keysAt, refsAt } = readBtcProbe(probe);
  const dv = new DataView(probe.buffer, probe.byteOffset, probe.byteLength);
  // eachHit: a plain key set takes the column together (hashed there: this column has no lanes); nothing is
  // allocated for a miss, which nearly every key is.
  eachHit(keys, dv, keysAt, count, -1, (k, hit, postings) => {
    const ref = dv.getUint32(refsAt + k * 4, true);
    for (let p = hit, end = hit + postings[hit - 1]!; p < end; p++) {
      const stream = postings[p]!;
      const refs = out.get(stream);
      if (refs === undefined) out.set(stream, [ref]);
      // A transaction's entries of one kind are adjacent: a repeat is the last ref.
      else if (refs[refs.length - 1] !== ref) refs.push(ref);
    }
  });
  return out;
}
