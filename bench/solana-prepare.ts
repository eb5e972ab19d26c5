/**
 * A scratch measurement of the Solana family's core on one thread (not issue 16's bench:solana, which
 * runs the server end to end): `npm run -s build && node --expose-gc dist/bench/solana-prepare.js`.
 * - A mainnet-size slot built from the fixture transactions: 3,000 transactions, two thirds votes, each copy
 *   with its own signature and fresh keys for every account that is not a program or a sysvar (validators and
 *   users differ from one transaction to the next), as one compact getBlock answer.
 * - prepareSolanaBlock on it (scan, record, probe column), beside JSON.parse of the same answer.
 * - The probe walk of that slot against 1,000,000 watched random addresses (1,000 streams) plus a program and
 *   a mint, in transactions per second.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { FilterSet } from '../engine/match/filter-set.js';
import { compileSolanaFilter, walkSolanaProbe } from '../engine/solana/filter.js';
import { encodeKey } from '../engine/solana/key.js';
import { prepareSolanaBlock, type PreparedSolanaBlock } from '../engine/solana/prepared.js';
import { base58 } from '../engine/encoding/base58.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
type Tx = { transaction: any; meta: any; version?: 'legacy' | 0 };
const dir = new URL('../../test/fixtures/solana/', import.meta.url);
const read = (name: string): any => JSON.parse(readFileSync(new URL(name, dir), 'utf8'));

const block = read('chainstorage/getBlock-slot-100000000-json-trimmed10.json');
delete block.rewards;
const others: Tx[] = [
  'hyperlane/getTransaction-slot-290198208-json.delivery_message_txn.json',
  'hyperlane/getTransaction-slot-297626301-json.dispatch_message_txn.json',
  'hyperlane/getTransaction-slot-322600797-json.dispatch_message_two_instructions_in_one_txn.json',
  'other-svm-NOT-solana-mainnet/eclipse-getTransaction-slot-35792433-json-v0.json',
].map((f) => {
  const { transaction, meta, version } = read(f) as Tx;
  return { transaction, meta, version };
});
const keysOf = (t: Tx): string[] => [...t.transaction.message.accountKeys, ...(t.meta.loadedAddresses?.writable ?? []), ...(t.meta.loadedAddresses?.readonly ?? [])];
const VOTE = 'Vote111111111111111111111111111111111111111';
const all: Tx[] = [...block.transactions, ...others];
const votes = all.filter((t) => t.transaction.message.instructions.every((ix: any) => keysOf(t)[ix.programIdIndex] === VOTE));
const nonVotes = all.filter((t) => !votes.includes(t));
const programs = new Set(all.flatMap((t) => [...t.transaction.message.instructions, ...(t.meta.innerInstructions ?? []).flatMap((g: any) => g.instructions)].map((ix: any) => keysOf(t)[ix.programIdIndex])));

function fresh(t: Tx): Tx {
  const c = structuredClone(t);
  const map = new Map<string, string>();
  const sub = (k: string): string => {
    if (programs.has(k) || k.startsWith('Sysvar')) return k;
    let n = map.get(k);
    if (n === undefined) map.set(k, (n = encodeKey(randomBytes(32))));
    return n;
  };
  c.transaction.signatures = c.transaction.signatures.map(() => base58(randomBytes(64)));
  c.transaction.message.accountKeys = c.transaction.message.accountKeys.map(sub);
  if (c.meta.loadedAddresses) c.meta.loadedAddresses = { writable: c.meta.loadedAddresses.writable.map(sub), readonly: c.meta.loadedAddresses.readonly.map(sub) };
  for (const b of [...(c.meta.preTokenBalances ?? []), ...(c.meta.postTokenBalances ?? [])]) if (b.owner !== undefined) b.owner = sub(b.owner);
  return c;
}

const TXS = 3_000;
// Built in a function so that the transactions' objects are garbage by the time prepare is measured (as in a worker, whose heap holds little).
const slotAnswer = (): Buffer => {
  const txs = Array.from({ length: TXS }, (_, i) => fresh(i % 3 === 2 ? nonVotes[i % nonVotes.length]! : votes[i % votes.length]!));
  return Buffer.from(JSON.stringify({ jsonrpc: '2.0', result: { ...block, transactions: txs }, id: 1 }));
};
const body = slotAnswer();
// With --expose-gc, the building's garbage collected before anything is measured.
(globalThis as { gc?: () => void }).gc?.();

/** Wall and CPU milliseconds (the process's user + system time: what the run took of a core, whatever else the machine ran). */
function time(runs: number, f: () => void): { median: number; min: number; cpu: number } {
  for (let i = 0; i < 5; i++) f();
  const ms: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < runs; i++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    f();
    ms.push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1e3);
  }
  ms.sort((a, b) => a - b);
  cpu.sort((a, b) => a - b);
  return { median: ms[runs >> 1]!, min: ms[0]!, cpu: cpu[runs >> 1]! };
}

const prepared = prepareSolanaBlock({ slot: 1, block: body }) as PreparedSolanaBlock;
const prep = time(30, () => prepareSolanaBlock({ slot: 1, block: body }));
const parse = time(30, () => JSON.parse(body.toString('latin1')));
console.log(`slot: ${TXS} transactions (${Math.round(TXS * (2 / 3))} votes), answer ${(body.length / 1e6).toFixed(2)} MB; record ${(prepared.record.length / 1e3).toFixed(0)} KB, probe ${(prepared.probe.length / 1e3).toFixed(0)} KB`);
console.log(`prepareSolanaBlock: median ${prep.median.toFixed(1)} ms, min ${prep.min.toFixed(1)} ms, median CPU ${prep.cpu.toFixed(1)} ms (JSON.parse of the answer alone: median ${parse.median.toFixed(1)} ms, min ${parse.min.toFixed(1)} ms, median CPU ${parse.cpu.toFixed(1)} ms)`);

const addresses = Array.from({ length: 1_000_000 }, () => encodeKey(randomBytes(32)));
const streams = Array.from({ length: 1_000 }, (_, s) => ({
  index: s,
  addresses: addresses.slice(s * 1_000, (s + 1) * 1_000),
  programIds: s === 0 ? ['TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA'] : [],
  mintAddresses: s === 1 ? ['EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v'] : [],
  allAddresses: false,
}));
const t0 = performance.now();
const set = new FilterSet(compileSolanaFilter(1, streams, 7), walkSolanaProbe);
const compileMs = performance.now() - t0;
const walk = time(300, () => set.match(prepared.probe));
console.log(`compile 1,000,000 addresses: ${compileMs.toFixed(0)} ms; walk: median ${(walk.median * 1e3).toFixed(0)} µs a slot = ${(TXS / walk.median / 1e3).toFixed(2)} M tx/s (best ${(TXS / walk.min / 1e3).toFixed(2)} M tx/s), ${set.match(prepared.probe).size} streams matched`);
