import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { addressTxReads, repeatsTx, txPosition } from '../../../engine/data-api/transactions/index/writer.js';
import { dropRows, openStore, upgradeSchema } from '../../../storage/env.js';
import { tempDir } from '../../helpers.js';

/** The upgrade of a version-10 store's wallet history rows: a `hist/` row repeating its address's `tx/` row goes (schema version 11). */

const CHAIN = '0x1';
const [ALICE, BOB] = ['a1', 'b0'].map((b) => `0x${b.repeat(20)}`) as [string, string];
const row = (list: 'tx' | 'hist', wallet: string, block: number, index: number) => `${list}/${CHAIN}/${wallet}/${txPosition(block, index)}`;

describe('wallet history rows at the upgrade to schema version 11', () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it("drop the `hist/` rows of an address's `tx/` list and keep the rest of its history; walked again, nothing more goes", async () => {
    dir = tempDir();
    const old = openStore(dir);
    // As version 10 wrote them: every transaction of a history under hist/, those of the tx/ list under both.
    const tx = [row('tx', ALICE, 3, 0), row('tx', ALICE, 7, 2), row('tx', BOB, 7, 2)];
    const rest = [row('hist', ALICE, 5, 1), row('hist', BOB, 9, 0)];
    old.transact(() => {
      for (const k of tx) {
        old.put('addressTxs', k, 1);
        old.put('addressTxs', `hist/${k.slice('tx/'.length)}`, 1);
      }
      for (const k of rest) old.put('addressTxs', k, 1);
      old.put('meta', 'schemaVersion', 10);
    });
    await old.close();
    const s = openStore(dir, { migrate: true });
    // 3 `hist/` rows dropped, then the 3 `tx/` rows grouped a row per (address, block) (schema version 13).
    expect(upgradeSchema(s)).toEqual({ from: 10, rewrittenKeys: 6 });
    expect(s.keys('addressTxs', { start: 'hist/', end: 'hist/\uffff' })).toEqual(rest);
    for (const w of [ALICE, BOB]) {
      const prefix = `tx/${CHAIN}/${w}/`;
      // A row per block, read as an entry per transaction.
      expect(s.keys('addressTxs', { start: prefix, end: `${prefix}\uffff` })).toEqual([
        ...new Set(tx.filter((k) => k.startsWith(prefix)).map((k) => k.slice(0, prefix.length + 12))),
      ]);
      expect(
        addressTxReads(s)
          .range('addressTxs', { start: prefix, end: `${prefix}\uffff` })
          .map((e) => e.key),
      ).toEqual(tx.filter((k) => k.startsWith(prefix)));
    }
    // Walked again (a migration cut short), in batches of one: nothing is left to drop, every row is seen once.
    const seen: string[] = [];
    expect(dropRows(s, 'addressTxs', 'hist/', (key) => (seen.push(key), repeatsTx(s, key)), 1)).toBe(0);
    expect(seen).toEqual(rest);
    await s.close();
  });
});
