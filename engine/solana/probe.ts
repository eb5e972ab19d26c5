import type { ProbeKeys } from '../match/layered.js';
import { KEY_BYTES, KeyTable } from './key.js';
import type { SolBlock, SolTransaction } from './scan.js';

/**
 * The probe column of a Solana slot: the 32-byte keys a stream can watch, each
 * with its kind and the transaction it came from, so a matcher scans it without
 * decoding the slot's record.
 *
 *   u8 version (1) | u32 count | count × 32-byte key | count × u32 ref
 *
 * ref = kind << 24 | transaction index. Per transaction, in block order, its
 * addresses, then its programs, then its mints, each key once per kind:
 * - Address: every account key, static and loaded from lookup tables, and the owner of every pre/post
 *   token balance (so a wallet sees the tokens its token accounts receive);
 * - Program: the program of every instruction and inner instruction;
 * - Mint: the mint of every pre/post token balance.
 * A vote transaction has one entry, the Vote program (see isVoteTransaction).
 */
export const enum SolProbeKind {
  Address = 0,
  Program = 1,
  Mint = 2,
}

export const VOTE_PROGRAM = 'Vote111111111111111111111111111111111111111';
export const COMPUTE_BUDGET_PROGRAM = 'ComputeBudget111111111111111111111111111111';

const PROBE_HEADER = 5;
const VERSION = 1;

/**
 * A vote: every top-level instruction invokes the Vote program, ComputeBudget instructions aside, and one at
 * least does (the validators' own votes, about two thirds of a mainnet slot). Their keys are validator
 * identities and vote accounts no user wants each vote of, so only a stream naming the Vote program in
 * programIds sees them, and allAddresses means every other transaction. A transaction that also calls any
 * other program (say a vote and a transfer) is not a vote and is matched on all its keys.
 */
export function isVoteTransaction(t: SolTransaction): boolean {
  let votes = false;
  for (const ix of t.instructions) {
    const program = t.accountKeys[ix.programIdIndex];
    if (program === VOTE_PROGRAM) votes = true;
    else if (program !== COMPUTE_BUDGET_PROGRAM) return false;
  }
  return votes;
}

const solProbeRef = (kind: SolProbeKind, txIndex: number): number => ((kind << 24) | txIndex) >>> 0;

/** A probe column built a transaction at a time, with the key table the record is written with (its ids and bytes). */
export class SolProbeWriter {
  private readonly ids: number[] = [];
  private readonly refs: number[] = [];
  /** Per kind, the last transaction each key id was listed for: dedupes within a transaction without a Set per transaction. */
  private seen = [new Int32Array(0), new Int32Array(0), new Int32Array(0)];
  /** A transaction's account keys' ids, looked up once: instructions name their programs by index into them. */
  private keyIds = new Int32Array(256);
  private readonly vote: number;

  constructor(readonly keys: KeyTable = new KeyTable()) {
    this.vote = keys.id(VOTE_PROGRAM);
  }

  /** Transaction `tx`'s entries; `ids`, when given, are its account keys' ids in the key table (the record writer's). */
  add(t: SolTransaction, tx: number, ids?: Int32Array): void {
    if (isVoteTransaction(t)) {
      this.entry(SolProbeKind.Program, this.vote, tx);
      return;
    }
    const keys = this.keys;
    const n = t.accountKeys.length;
    let keyIds = ids;
    if (keyIds === undefined) {
      if (n > this.keyIds.length) this.keyIds = new Int32Array(n * 2);
      keyIds = this.keyIds;
      for (let k = 0; k < n; k++) keyIds[k] = keys.id(t.accountKeys[k]!);
    }
    for (let k = 0; k < n; k++) this.entry(SolProbeKind.Address, keyIds[k]!, tx);
    const program = (index: number): number => {
      if (index >= n) throw new RangeError(`transaction ${t.signature}: an instruction's program index ${index} is past its ${n} keys`);
      return keyIds[index]!;
    };
    for (const list of [t.preTokenBalances, t.postTokenBalances])
      for (const b of list ?? []) if (b.owner !== undefined) this.entry(SolProbeKind.Address, keys.id(b.owner), tx);
    for (const ix of t.instructions) this.entry(SolProbeKind.Program, program(ix.programIdIndex), tx);
    for (const g of t.innerInstructions ?? [])
      for (const ix of g.instructions) this.entry(SolProbeKind.Program, program(ix.programIdIndex), tx);
    for (const list of [t.preTokenBalances, t.postTokenBalances])
      for (const b of list ?? []) this.entry(SolProbeKind.Mint, keys.id(b.mint), tx);
  }

  finish(): Uint8Array {
    const { ids, refs } = this;
    const table = this.keys.bytes;
    const out = Buffer.allocUnsafeSlow(PROBE_HEADER + ids.length * (KEY_BYTES + 4));
    out.writeUInt8(VERSION, 0);
    out.writeUInt32LE(ids.length, 1);
    // 32 bytes a key, copied by a loop: a view per key to set() from cost more than the copy.
    for (let k = 0, to = PROBE_HEADER; k < ids.length; k++)
      for (let from = ids[k]! * KEY_BYTES, end = from + KEY_BYTES; from < end; ) out[to++] = table[from++]!;
    const refsAt = PROBE_HEADER + ids.length * KEY_BYTES;
    for (let k = 0; k < refs.length; k++) out.writeUInt32LE(refs[k]!, refsAt + k * 4);
    return out;
  }

  private entry(kind: SolProbeKind, id: number, tx: number): void {
    let s = this.seen[kind]!;
    if (id >= s.length) {
      this.seen = this.seen.map((old) => {
        const grown = new Int32Array(Math.max(1024, this.keys.count * 2)).fill(-1);
        grown.set(old);
        return grown;
      });
      s = this.seen[kind]!;
    }
    if (s[id] === tx) return;
    s[id] = tx;
    this.ids.push(id);
    this.refs.push(solProbeRef(kind, tx));
  }
}

/** The probe column of `block`; `keys` the table the record was written with, or a new one. */
export function buildSolProbe(block: SolBlock, keys: KeyTable = new KeyTable()): Uint8Array {
  const writer = new SolProbeWriter(keys);
  block.transactions.forEach((t, tx) => writer.add(t, tx));
  return writer.finish();
}

/** A probe column's count and where its keys and refs start. */
export function readSolProbe(bytes: Uint8Array): { count: number; keysAt: number; refsAt: number } {
  if (bytes[0] !== VERSION) throw new Error(`Solana probe column version ${bytes[0]} is not ${VERSION}`);
  const count = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(1, true);
  return { count, keysAt: PROBE_HEADER, refsAt: PROBE_HEADER + count * KEY_BYTES };
}

/**
 * Per stream index, the indexes of the transactions whose probe entries a stream's key sets hold, in block
 * order, each once per stream. `sets` are 32-byte key sets by SolProbeKind: watched addresses, programs, mints.
 */
export function solanaProbeMatch(sets: readonly ProbeKeys[], probe: Uint8Array): Map<number, number[]> {
  const out = new Map<number, number[]>();
  if (sets.every((s) => s.size === 0)) return out;
  for (const s of sets)
    if (s.width !== KEY_BYTES) throw new RangeError(`a Solana probe needs key sets of ${KEY_BYTES}-byte keys, not ${s.width}`);
  const { count, keysAt, refsAt } = readSolProbe(probe);
  const dv = new DataView(probe.buffer, probe.byteOffset, probe.byteLength);
  // An empty set is not probed: most streams name addresses only.
  const bySet = [0, 1, 2].map((k) => (sets[k] !== undefined && sets[k].size > 0 ? sets[k] : undefined));
  for (let k = 0; k < count; k++) {
    const ref = dv.getUint32(refsAt + k * 4, true);
    const set = bySet[ref >>> 24];
    if (set === undefined) continue;
    // find() allocates nothing on a miss, which nearly every key is.
    const hit = set.find(dv, keysAt + k * KEY_BYTES);
    if (hit === 0) continue;
    const tx = ref & 0xffffff;
    const postings = set.postings;
    for (let p = hit, end = hit + postings[hit - 1]!; p < end; p++) {
      const stream = postings[p]!;
      const txs = out.get(stream);
      if (txs === undefined) out.set(stream, [tx]);
      // A transaction's entries are adjacent: a repeat is the last one listed.
      else if (txs[txs.length - 1] !== tx) txs.push(tx);
    }
  }
  return out;
}
