import type { KeySetData } from '../../../../engine/match/key-set.js';
import { randomBytes } from 'node:crypto';
import bs58 from 'bs58';
import { describe, expect, it } from 'vitest';
import { solana } from '../../../../engine/solana/index.js';
import { EVERY, FilterSet } from '../../../../engine/match/filter-set.js';
import { compileSolanaFilter, walkSolanaProbe, type WatchedSolanaStream } from '../../../../engine/solana/filter.js';
import { prepareSolanaBlock, type PreparedSolanaBlock } from '../../../../engine/solana/prepared.js';
import { buildSolProbe, readSolProbe, solanaProbeMatch } from '../../../../engine/solana/probe.js';
import { scanSolanaBlock, type SolBlock } from '../../../../engine/solana/scan.js';
import {
  VOTE,
  answerOf,
  expectedEntries,
  fixtureBlock,
  isVote,
  keysOf,
  mintsOf,
  ownersOf,
  probeEntries,
  programsOf,
  type JsonTx,
} from './reader.js';

// The fixtures, one token balance's owner changed to a wallet the transaction names nowhere else (in the
// fixtures every owner is also an account key): a transfer into that wallet's token account, as a real one is.
const json = fixtureBlock();
const RECEIVER = bs58.encode(randomBytes(32));
json.transactions[12]!.meta.postTokenBalances[0].owner = RECEIVER;
const prepared = prepareSolanaBlock({ slot: 100_000_000, block: answerOf(json) }) as PreparedSolanaBlock;
const TOKEN = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA';
const USDC = 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v';

const noise = (n: number): string[] => Array.from({ length: n }, () => bs58.encode(randomBytes(32)));
const stream = (index: number, s: Partial<WatchedSolanaStream>): WatchedSolanaStream => ({
  index,
  addresses: [],
  programIds: [],
  mintAddresses: [],
  allAddresses: false,
  ...s,
});

/** The transactions (indexes) the fixture block gives for `pick`, read from the JSON alone. */
const txsWhere = (pick: (t: JsonTx) => boolean): number[] => json.transactions.flatMap((t, i) => (pick(t) ? [i] : []));

describe('the Solana probe column', () => {
  it('holds each transaction’s account keys and token owners, programs and mints, once per kind, votes their program only', () => {
    const entries = probeEntries(prepared.probe);
    json.transactions.forEach((t, i) => {
      const got = entries.get(i) ?? [];
      expect(new Set(got)).toEqual(expectedEntries(t));
      expect(got.length).toBe(new Set(got).size);
    });
    expect(txsWhere(isVote)).toEqual([0, 1, 2, 5, 8, 9]);
    for (const i of txsWhere(isVote)) expect(entries.get(i)).toEqual([`1:${VOTE}`]);
    // Entries go in transaction order (the walk's refs come out in block order).
    const { count, refsAt } = readSolProbe(prepared.probe);
    const txs = Array.from({ length: count }, (_, k) => Buffer.from(prepared.probe).readUInt32LE(refsAt + k * 4) & 0xffffff);
    expect(txs).toEqual([...txs].sort((a, b) => a - b));
    // Lookup-table keys and token owners are addresses; inner instructions' programs are programs.
    const v0 = json.transactions[13]!;
    expect(
      v0.meta.loadedAddresses.writable.concat(v0.meta.loadedAddresses.readonly).every((k: string) => entries.get(13)!.includes(`0:${k}`)),
    ).toBe(true);
    expect(ownersOf(json.transactions[11]!).every((k) => entries.get(11)!.includes(`0:${k}`))).toBe(true);
    expect(entries.get(12)).toContain(`0:${RECEIVER}`);
    expect(keysOf(json.transactions[12]!)).not.toContain(RECEIVER);
    expect(entries.get(11)).toContain(`1:${TOKEN}`);
    // Built from a whole scanned block (its own key table) rather than as prepare writes it: the same entries.
    const alone = probeEntries(buildSolProbe(scanSolanaBlock(100_000_000, answerOf(json)) as SolBlock));
    expect(alone).toEqual(entries);
  });

  it('walks a compiled filter set: each selector, votes through the Vote program only, allAddresses after its keys', () => {
    const owner = RECEIVER;
    const loaded = json.transactions[13]!.meta.loadedAddresses.readonly[5] as string;
    const voter = keysOf(json.transactions[0]!)[0]!;
    const inner = 'FsJ3A3u2vn5cTVofAjvy6y5kwABJAqYWpe4975bi2epH';
    const streams = [
      stream(0, { addresses: [owner, ...noise(2_000)] }),
      stream(1, { addresses: [loaded] }),
      stream(2, { programIds: [TOKEN] }),
      stream(3, { mintAddresses: [USDC] }),
      stream(4, { programIds: [VOTE] }),
      // A vote account watched as an address: votes carry no address entry.
      stream(5, { addresses: [voter] }),
      stream(6, { allAddresses: true, programIds: [VOTE] }),
      stream(7, { programIds: [inner], mintAddresses: [USDC], addresses: noise(1_000) }),
      stream(8, { programIds: noise(500), mintAddresses: noise(500) }),
    ];
    const data = compileSolanaFilter(3, streams, 42);
    expect([data.family, data.version, data.sets.map((s) => (s as KeySetData).width), data.every]).toEqual([
      'solana',
      3,
      [32, 32, 32],
      [6],
    ]);
    const set = new FilterSet(data, solana.matching.walk);
    const matched = set.match(prepared.probe);
    const owning = (k: string) => (t: JsonTx) => !isVote(t) && (keysOf(t).includes(k) || ownersOf(t).includes(k));
    const expected = new Map<number, number[]>([
      [0, txsWhere(owning(owner))],
      [1, txsWhere(owning(loaded))],
      [2, txsWhere((t) => !isVote(t) && programsOf(t).includes(TOKEN))],
      [3, txsWhere((t) => mintsOf(t).includes(USDC))],
      [4, txsWhere(isVote)],
      [6, [...txsWhere(isVote), EVERY]],
      [7, txsWhere((t) => !isVote(t) && (programsOf(t).includes(inner) || mintsOf(t).includes(USDC)))],
    ]);
    expect(matched).toEqual(expected);
    // Not vacuous: each selector matched something, the token program inside inner instructions only somewhere.
    for (const s of [0, 1, 2, 3, 4, 7]) expect(expected.get(s)!.length).toBeGreaterThan(0);
    expect(
      txsWhere(
        (t) =>
          programsOf(t).includes(TOKEN) &&
          !t.transaction.message.instructions.some((ix: { programIdIndex: number }) => keysOf(t)[ix.programIdIndex] === TOKEN),
      ).length,
    ).toBeGreaterThan(0);
    // The walker alone gives the same refs without EVERY; solanaProbeMatch on the raw sets likewise.
    expect(walkSolanaProbe(set, prepared.probe).get(6)).toEqual(txsWhere(isVote));
    expect(solanaProbeMatch(set.sets, prepared.probe)).toEqual(walkSolanaProbe(set, prepared.probe));
    // Nothing watched: nothing walked.
    expect(compileSolanaFilter(1, [], 1).sets.every((s) => (s as KeySetData).size === 0)).toBe(true);
    expect(new FilterSet(compileSolanaFilter(1, [], 1), walkSolanaProbe).match(prepared.probe).size).toBe(0);
    expect(() => compileSolanaFilter(1, [stream(0, { mintAddresses: ['0x1234'] })])).toThrow(/not base58/);
  });
});
