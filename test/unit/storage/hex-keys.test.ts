import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { pack } from '../../../storage/codec.js';
import { HEX_KEYED_TABLES, SCHEMA_VERSION, migrateHexKeys, openStore, upgradeSchema } from '../../../storage/env.js';
import { hexKeyBytes, readHexKey } from '../../../storage/hex-keys.js';
import { tempDir } from '../../helpers.js';

/** The key encoding of the Data API's index tables (storage/hex-keys.ts) and the migration of text keys to it. */

const back = (key: string): string => {
  const b = hexKeyBytes(key);
  return readHexKey(b, 0, b.length);
};

/** A seeded PRNG (mulberry32), so a failure repeats. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('hex keys', () => {
  it('reads back every key as it was written', () => {
    const keys = [
      '',
      '/',
      '//',
      '0x1',
      '0x1/',
      '0x1\u0000',
      '0x1/\uffff',
      'a/b/c',
      'tx/0x1/',
      'héllo/wörld/0x00112233',
      '日本/0xab',
      `0x1/a/0x${'ab'.repeat(20)}/00000000002a/000007`,
      `0x1/t/0x${'ab'.repeat(20)}/0x${'cd'.repeat(32)}/00000000002a/000007`,
      `0x${'AB'.repeat(20)}`,
      `0x${'abc'.repeat(3)}`,
      '0xabcdef',
      'abcd',
      'abcdef',
      'abcdefg',
      'deadbeef',
      '0000',
      '000000',
      `token/0x539/0x${'01'.repeat(20)}/${'f'.repeat(64)}/0x${'02'.repeat(20)}`,
      `s/0x1/${'0'.repeat(12)}/${'0'.repeat(6)}`,
    ];
    for (const k of keys) expect(back(k)).toBe(k);
  });

  it('stores hex segments as bytes: an address posting takes about half its text', () => {
    const key = `hist/0x1/0x${'ab'.repeat(20)}/00000000002a/000007`;
    expect(key.length).toBe(71);
    expect(hexKeyBytes(key).length).toBe(5 + 3 + 1 + 22 + 1 + 8 + 1 + 5);
    // Short hex and anything not lower-case hex stay text.
    expect(hexKeyBytes('0x1/0xabcd/abcd').toString()).toBe('0x1/0xabcd/abcd');
    expect(hexKeyBytes(`0x${'AB'.repeat(20)}`).length).toBe(42);
  });

  it('keeps the order and the prefixes of the index keys: a range read gets the same keys as with text keys', () => {
    const rand = prng(7);
    const hex = (n: number): string => Array.from({ length: n }, () => '0123456789abcdef'[Math.floor(rand() * 16)]).join('');
    // Few addresses and blocks, so keys share prefixes at every segment.
    const addresses = Array.from({ length: 4 }, () => `0x${hex(40)}`);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
    const keys = new Set<string>();
    for (let i = 0; i < 2_000; i++) {
      const block = Math.floor(rand() * 300)
        .toString(16)
        .padStart(12, '0');
      const log = Math.floor(rand() * 70_000)
        .toString(16)
        .padStart(6, '0');
      const chain = pick(['0x1', '0x539', '0xaa36a7']);
      keys.add(
        pick([
          `${chain}/a/${pick(addresses)}/${block}/${log}`,
          `${chain}/t/${pick(addresses)}/0x${hex(64)}/${block}/${log}`,
          `hist/${chain}/${pick(addresses)}/${block}/${log}`,
          `tx/${chain}/${pick(addresses)}/${block}/${log}`,
          `walletContract/${chain}/${pick(addresses)}/${pick(addresses)}/${block}/${log}/${hex(4)}`,
          `${chain}/${pick(addresses)}/${hex(64)}/${pick(addresses)}`,
          `${chain}/${pick(addresses)}`,
        ]),
      );
    }
    const all = [...keys];
    const byText = [...all].sort();
    const bytes = new Map(all.map((k) => [k, hexKeyBytes(k)]));
    const byBytes = [...all].sort((a, b) => Buffer.compare(bytes.get(a)!, bytes.get(b)!));
    expect(byBytes).toEqual(byText);
    // Every prefix the reads use (ending at a segment), bounded by itself and `\uffff`, holds the same keys either way.
    const prefixes = new Set<string>();
    for (const k of all.slice(0, 60)) {
      const parts = k.split('/');
      for (let n = 1; n < parts.length; n++) prefixes.add(`${parts.slice(0, n).join('/')}/`);
    }
    for (const p of prefixes) {
      const [lo, hi] = [hexKeyBytes(p), hexKeyBytes(`${p}\uffff`)];
      const inRange = all.filter((k) => Buffer.compare(bytes.get(k)!, lo) >= 0 && Buffer.compare(bytes.get(k)!, hi) < 0);
      expect(inRange.sort()).toEqual(all.filter((k) => k.startsWith(p)).sort());
    }
  });

  it('refuses a key holding a tag byte (a stored key must read back one way)', () => {
    expect(() => hexKeyBytes('a\u0001b')).toThrow(/control character 1/);
  });
});

describe('version 4 stores: text keys of the index tables', () => {
  let dir: string;
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const addr = (i: number): string => `0x${i.toString(16).padStart(40, '0')}`;
  const textKeys = Array.from({ length: 25 }, (_, i) => `hist/0x1/${addr(i % 5)}/${i.toString(16).padStart(12, '0')}/000000`);

  /** A store as version 4 wrote it: these keys as their UTF-8 in `addressTxs`. */
  async function version4(): Promise<void> {
    const s = openStore(dir);
    s.transact(() => {
      for (const k of textKeys) s.rawKeys('addressTxs').putSync(Buffer.from(k), Buffer.from(pack(1)));
      s.put('meta', 'schemaVersion', 4);
    });
    await s.close();
  }

  it('migrates them at the upgrade: every key then reads, in order, once, and the store is marked this version', async () => {
    dir = tempDir();
    expect(SCHEMA_VERSION).toBe(13);
    expect(HEX_KEYED_TABLES.has('addressTxs')).toBe(true);
    await version4();
    expect(() => openStore(dir)).toThrow(/holds schema version 4, which this chainpost migrates/);
    const s = openStore(dir, { migrate: true });
    // Opened for its migration, not yet upgraded: the mark stays.
    expect(s.get('meta', 'schemaVersion')).toBe(4);
    const started: number[] = [];
    expect(upgradeSchema(s, (from) => started.push(from))).toEqual({ from: 4, rewrittenKeys: textKeys.length });
    expect(started).toEqual([4]);
    // Nothing left to do: nothing said, nothing done.
    expect(upgradeSchema(s, () => started.push(0))).toBeUndefined();
    expect(started).toEqual([4]);
    expect(s.get('meta', 'schemaVersion')).toBe(SCHEMA_VERSION);
    for (const k of textKeys) expect(s.get('addressTxs', k)).toBe(1);
    const prefix = `hist/0x1/${addr(3)}/`;
    expect(s.range('addressTxs', { start: prefix, end: `${prefix}\uffff` }).map((e) => e.key)).toEqual(
      textKeys.filter((k) => k.startsWith(prefix)).sort(),
    );
    expect(s.db('addressTxs').getKeysCount()).toBe(textKeys.length);
    // Stored as the new form alone: no text key left beside it.
    expect([...s.rawKeys('addressTxs').getKeys()]).toEqual(textKeys.map(hexKeyBytes).sort(Buffer.compare));
    await s.close();
  });

  it('marks the store this version before the first key moves, and finishes a migration cut short at the next upgrade', async () => {
    dir = tempDir();
    await version4();
    // Cut short right after its first step: marked this version (an older chainpost refuses it), the keys still text.
    const first = openStore(dir, { migrate: true });
    first.transact(() => {
      first.put('meta', 'migratingFrom', 4);
      first.put('meta', 'schemaVersion', SCHEMA_VERSION);
    });
    await first.close();
    expect(() => openStore(dir)).toThrow(/holds schema version 4, which this chainpost migrates/);
    const again = openStore(dir, { migrate: true });
    // Cut short after the mark: it goes on from the version it first started from.
    expect(upgradeSchema(again)).toEqual({ from: 4, rewrittenKeys: textKeys.length });
    expect(again.get('meta', 'migratingFrom')).toBeUndefined();
    expect(again.range('addressTxs').map((e) => e.key)).toEqual([...textKeys].sort());
    await again.close();
    await openStore(dir).close();
  });

  it('upgrades a version-5 store (its keys already encoded) by its mark alone: no table is walked', async () => {
    dir = tempDir();
    await version4();
    const s = openStore(dir, { migrate: true });
    // The text keys stand for what a walk would rewrite: marked 5, they stay as they are.
    s.transact(() => s.put('meta', 'schemaVersion', 5));
    expect(upgradeSchema(s)).toEqual({ from: 5, rewrittenKeys: 0 });
    expect(s.get('meta', 'schemaVersion')).toBe(SCHEMA_VERSION);
    expect(s.get('meta', 'migratingFrom')).toBeUndefined();
    expect([...s.rawKeys('addressTxs').getKeys()].map((k) => k.toString())).toEqual([...textKeys].sort());
    await s.close();
  });

  it('moves nothing twice when a table is walked again', async () => {
    dir = tempDir();
    await version4();
    const s = openStore(dir, { migrate: true });
    // Batches of 4, as if each were the last before a crash: the next run goes on from the first text key.
    expect(migrateHexKeys(s, 'addressTxs', 4)).toBe(textKeys.length);
    expect(migrateHexKeys(s, 'addressTxs', 4)).toBe(0);
    expect(s.range('addressTxs').map((e) => e.key)).toEqual([...textKeys].sort());
    await s.close();
  });
});
