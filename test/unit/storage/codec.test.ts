import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { pack, unpack } from '../../../storage/codec.js';
import { IN_PLACE_TABLES, SCHEMA_VERSION, openStore, upgradeSchema } from '../../../storage/env.js';
import { tempDir } from '../../helpers.js';

/** The value codec (lower-case hex strings stored as bytes) and the schema version it came with. */

describe('the value codec', () => {
  const strings = [
    '',
    '0x',
    '0x0',
    '0x1c9c380',
    '0x00000000',
    '0x000000000',
    '0x0000000000',
    '0x00000000001',
    `0x${'ab'.repeat(20)}`,
    `0x${'0'.repeat(63)}1`,
    `0x${'f'.repeat(200_001)}`,
    '0xDeadBeef00112233',
    '0X00112233445566',
    '0x0011223344556g',
    'hello',
    'Transfer(address,address,uint256)',
  ];

  it('reads back every string as it was, alone and inside arrays and maps, map keys included', () => {
    for (const s of strings) expect(unpack(pack(s))).toBe(s);
    const nested = { list: strings, [`0x${'12'.repeat(20)}`]: { a: strings.slice(2, 6), n: 7, none: null } };
    expect(unpack(pack(nested))).toEqual(nested);
  });

  it('stores a lower-case hex string of 10 characters or more as its bytes, other strings as text', () => {
    // An address: 20 bytes and a 3-byte header (fixext would need 1/2/4/8/16 bytes: ext 8), not 42 characters.
    expect(pack(`0x${'ab'.repeat(20)}`).length).toBe(23);
    expect(pack(`0x${'AB'.repeat(20)}`).length).toBe(44);
    expect(pack('0x1c9c380').length).toBe(10);
  });
});

describe('range reads', () => {
  let dir: string;
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("answer byte arrays in values (indexUndo's bytes before) each as written, not as the shared buffer's last bytes", async () => {
    dir = tempDir();
    const store = openStore(dir);
    expect(IN_PLACE_TABLES.has('indexUndo')).toBe(false);
    expect(IN_PLACE_TABLES.has('contractLogs')).toBe(true);
    const rows = Array.from({ length: 5 }, (_, i) => ({
      hash: `0x${String(i).repeat(64)}`,
      parent: null,
      undo: [['erc20Balances', `0x1/k${i}`, new Uint8Array(40).fill(i + 1)]],
    }));
    store.transact(() => rows.forEach((row, i) => store.put('indexUndo', `0x1/00000000000${i}`, row)));
    const read = store.range<(typeof rows)[number]>('indexUndo');
    expect(read.map((r) => [...(r.value.undo[0]![2] as Uint8Array)][0])).toEqual([1, 2, 3, 4, 5]);
    expect(read.map((r) => [r.value.hash, [...(r.value.undo[0]![2] as Uint8Array)]])).toEqual(
      rows.map((r) => [r.hash, [...(r.undo[0]![2] as Uint8Array)]]),
    );
    await store.close();
  });
});

describe('the schema version', () => {
  let dir: string;
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const reopen = async (version: number): Promise<string | number> => {
    const first = openStore(dir);
    first.transact(() => first.put('meta', 'schemaVersion', version));
    await first.close();
    try {
      const s = openStore(dir);
      const found = s.get<number>('meta', 'schemaVersion')!;
      await s.close();
      return found;
    } catch (err) {
      return (err as Error).message;
    }
  };

  for (const version of [3, 4, 5, 6, 7, 8, 9, 10, 11, 12]) {
    it(`refuses a version-${version} store to an open that would not migrate it, naming the command; its migrating writer marks it 13`, async () => {
      dir = tempDir();
      expect(SCHEMA_VERSION).toBe(13);
      expect(await reopen(version)).toMatch(
        new RegExp(
          `holds schema version ${version}, which this chainpost migrates to version 13 when it starts on it: run \`chainpost serve\``,
        ),
      );
      const s = openStore(dir, { migrate: true });
      expect(s.get('meta', 'schemaVersion')).toBe(version);
      upgradeSchema(s);
      expect(s.get('meta', 'schemaVersion')).toBe(13);
      expect(s.get('meta', 'migratingFrom')).toBeUndefined();
      await s.close();
      expect(await reopen(13)).toBe(13);
    });
  }

  for (const version of [2, 14]) {
    it(`refuses version ${version}, naming it`, async () => {
      dir = tempDir();
      expect(await reopen(version)).toMatch(new RegExp(`holds schema version ${version}; this chainpost reads version 13`));
    });
  }
});

describe('the hex strings written into the encoder', () => {
  it('are the bytes the extension path writes, for every length, case and stray character', async () => {
    const { packByExtData } = await import('../../../storage/codec.js');
    const digits = '0123456789abcdef';
    let seed = 7;
    const rand = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const values: unknown[] = [];
    for (let len = 0; len < 600; len++) {
      const hex = Array.from({ length: len }, () => digits[rand(16)]).join('');
      values.push(`0x${hex}`, hex, `0X${hex}`, `0x${hex.toUpperCase()}`);
      // A stray character anywhere: text, whatever came before it.
      if (len > 0) {
        const at = rand(len);
        values.push(`0x${hex.slice(0, at)}${'gG/ é'[rand(5)]}${hex.slice(at + 1)}`);
      }
    }
    values.push(`0x${'a'.repeat(2 * 0x10000)}`, `0x${'b'.repeat(2 * 0x10000 + 1)}`, { nested: [values.slice(0, 50)], n: 2 ** 60 });
    for (const v of values) expect(Buffer.from(pack(v))).toEqual(Buffer.from(packByExtData(v)));
  });
});
