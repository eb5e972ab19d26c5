import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { taggedPartition } from '../../../engine/delivery/records.js';
import { EventKind, eventKey, marksPerEvent, stagedIn, type BlockEvent } from '../../../engine/match/block-events.js';
import { openStore, splitRows, upgradeSchema } from '../../../storage/env.js';
import { tempDir } from '../../helpers.js';

/** The migration of a version-8 store's marks, a row per (chain, partition), to a row per (event, partition) (schema version 9). */

const CHAIN = '0x539';
const SEEN = eventKey(CHAIN, 7, EventKind.Seen);
const CONFIRMED = eventKey(CHAIN, 5, EventKind.Confirmed);
const GONE = eventKey(CHAIN, 6, EventKind.Seen);
const event = (key: string, hash: string): BlockEvent => ({
  key,
  chain: CHAIN,
  number: 0,
  kind: EventKind.Seen,
  hash,
  done: new Set(),
  staged: new Set(),
});

describe('match marks at the upgrade to a row per event', () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it("become one row per event still in the log, in the same partition, read by the matcher as before; the others' go", async () => {
    dir = tempDir();
    const old = openStore(dir);
    old.transact(() => {
      old.put('blockEvents', SEEN, { hash: '0x07' });
      old.put('blockEvents', CONFIRMED, { hash: '0x05', done: [3] });
      // Block 6's seen event left the log (a reorg's, or finished), and block 7's was seen again on another branch.
      old.put('matchMarks', `${CHAIN}/#03`, { [`${SEEN}@0x07`]: ['a', 'b'], [`${CONFIRMED}@0x05`]: 0, [`${GONE}@0x06`]: ['c'] });
      old.put('matchMarks', `${CHAIN}/#41`, { [`${SEEN}@0x07`]: ['x'], [`${SEEN}@0x70`]: ['y'] });
      old.put('meta', 'schemaVersion', 8);
    });
    await old.close();
    const s = openStore(dir, { migrate: true });
    expect(upgradeSchema(s)).toEqual({ from: 8, rewrittenKeys: 2 });
    expect(s.range('matchMarks').map(({ key, value }) => [key, taggedPartition(key), value])).toEqual([
      [`${CONFIRMED}/#03`, 3, ['0x05', 0]],
      [`${SEEN}/#03`, 3, ['0x07', ['a', 'b']]],
      [`${SEEN}/#41`, 41, ['0x07', ['x']]],
    ]);
    const marked = (key: string, hash: string, p: number) => ['a', 'b', 'c', 'x', 'y'].filter(stagedIn(s, event(key, hash), p));
    expect([marked(SEEN, '0x07', 3), marked(CONFIRMED, '0x05', 3), marked(SEEN, '0x07', 41), marked(SEEN, '0x70', 41)]).toEqual([
      ['a', 'b'],
      ['a', 'b', 'c', 'x', 'y'],
      ['x'],
      [],
    ]);
    // Walked again (a migration cut short), in batches of 1: nothing is split twice.
    expect(splitRows(s, 'matchMarks', (key, value) => marksPerEvent(s, key, value), 1)).toBe(0);
    expect(s.keys('matchMarks', {})).toHaveLength(3);
    await s.close();
  });
});
