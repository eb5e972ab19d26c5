import { rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { PARTITIONS } from '../../../../engine/cluster/partitions.js';
import { taggedPartition } from '../../../../engine/delivery/records.js';
import {
  blockEventLog,
  finishEvents,
  markStaged,
  pendingEvents,
  stagedIn,
  type BlockEvent,
} from '../../../../engine/match/block-events.js';
import { openStore } from '../../../../storage/env.js';
import { tempDir } from '../../../helpers.js';

describe('the block-event log', () => {
  const store = openStore(tempDir());
  afterAll(async () => {
    await store.close();
    rmSync(store.path, { recursive: true, force: true });
  });

  it('tells the follower the oldest block the matcher has yet to read, per chain', () => {
    const log = blockEventLog(store, () => {});
    expect(log.oldestUnread!('0x539')).toBeUndefined();
    store.transact(() => {
      log.seen('0x539', 7, '0x07');
      log.confirmed('0x539', 5, '0x05');
      log.seen('0x1', 3, '0x03');
    });
    expect([log.oldestUnread!('0x539'), log.oldestUnread!('0x1')]).toEqual([5, 3]);
    store.transact(() => {
      for (const e of pendingEvents(store, '0x539', 10)) store.remove('blockEvents', e.key);
    });
    expect([log.oldestUnread!('0x539'), log.oldestUnread!('0x1')]).toEqual([undefined, 3]);
  });

  it("keeps the streams a chunk staged in their partition's marks, for a round after a crash (or the partition's next owner) to skip", () => {
    const log = blockEventLog(store, () => {});
    store.transact(() => {
      log.seen('0x2', 1, '0x01');
      log.confirmed('0x2', 1, '0x01');
    });
    const [seen, confirmed] = pendingEvents(store, '0x2', 10);
    const marks = (e: BlockEvent, p: number) => ['a', 'b', 'c', 'd', 'e', 'x'].filter(stagedIn(store, e, p));
    expect([marks(seen!, 3), marks(confirmed!, 3)]).toEqual([[], []]);
    store.transact(() =>
      markStaged(store, [
        { streamId: 'a', event: seen!, partition: 3 },
        { streamId: 'b', event: seen!, partition: 3 },
        { streamId: 'a', event: confirmed!, partition: 3 },
        { streamId: 'x', event: seen!, partition: 9 },
      ]),
    );
    store.transact(() => markStaged(store, [{ streamId: 'c', event: seen!, partition: 3 }]));
    expect([marks(seen!, 3), marks(confirmed!, 3), marks(seen!, 9)]).toEqual([['a', 'b', 'c'], ['a'], ['x']]);
    // The marks are a row per event of their partition: captured and published with the webhooks they mark.
    const rows = () => store.keys('matchMarks', { start: '0x2/', end: '0x2/\uffff' });
    expect(rows().map((k) => [k, taggedPartition(k)])).toEqual([
      [`${seen!.key}/#03`, 3],
      [`${seen!.key}/#09`, 9],
      [`${confirmed!.key}/#03`, 3],
    ]);
    // Block 1 is seen again on another branch: the new block's event has nothing staged, and the old one's row is
    // marked no further (another block's hash: read as no marks, overwritten by the new block's first mark).
    store.transact(() => log.seen('0x2', 1, '0x0b'));
    store.transact(() => markStaged(store, [{ streamId: 'd', event: seen!, partition: 3 }]));
    const [again] = pendingEvents(store, '0x2', 10);
    expect([again!.hash, marks(again!, 3)]).toEqual(['0x0b', []]);
    expect(store.get('matchMarks', `${seen!.key}/#03`)).toEqual(['0x01', ['a', 'b', 'c']]);
    store.transact(() => markStaged(store, [{ streamId: 'e', event: again!, partition: 3 }]));
    expect([marks(again!, 3), store.get('matchMarks', `${seen!.key}/#03`)]).toEqual([['e'], ['0x0b', ['e']]]);
    // A reorg removes the event, and no mark is written for it; its marks stay, naming their block: the same block
    // seen again (taken back and applied again) is passed over for the streams staged.
    store.transact(() => log.reorged!('0x2', 1, 1));
    store.transact(() => markStaged(store, [{ streamId: 'f', event: again!, partition: 3 }]));
    expect(pendingEvents(store, '0x2', 10).map((e) => e.key)).toEqual([confirmed!.key]);
    expect(store.get('matchMarks', `${seen!.key}/#03`)).toEqual(['0x0b', ['e']]);
    store.transact(() => log.seen('0x2', 1, '0x0b'));
    expect(marks(pendingEvents(store, '0x2', 10)[0]!, 3)).toEqual(['e']);
    store.transact(() => log.reorged!('0x2', 1, 1));
    // The last chunk finishes its partitions in the events it was given, unless another block's replaced one; an
    // event goes once every partition finished it.
    store.transact(() => log.seen('0x2', 2, '0x02'));
    const [, two] = pendingEvents(store, '0x2', 10);
    store.transact(() => log.seen('0x2', 2, '0x0c'));
    const all = [...Array(PARTITIONS).keys()];
    store.transact(() =>
      finishEvents(store, [
        { event: confirmed!, partitions: all.slice(0, 32) },
        { event: two!, partitions: all },
      ]),
    );
    const owns = (half: number) => (p: number) => Math.floor(p / 32) === half;
    expect(pendingEvents(store, '0x2', 10, owns(0)).map((e) => e.hash)).toEqual(['0x0c']);
    expect(pendingEvents(store, '0x2', 10, owns(1)).map((e) => e.hash)).toEqual(['0x01', '0x0c']);
    store.transact(() => finishEvents(store, [{ event: confirmed!, partitions: all.slice(32) }]));
    expect(pendingEvents(store, '0x2', 10).map((e) => e.hash)).toEqual(['0x0c']);
    // Its marks went with it (the reorged block's stay until an event of that key goes, or the cluster log's cut).
    expect(rows()).toEqual([`${seen!.key}/#03`, `${seen!.key}/#09`]);
  });

  it("passes over the events the partitions it owns finished, a page at a time, and keeps a cluster's for its retention only", () => {
    const log = blockEventLog(store, () => {}, 4);
    store.transact(() => {
      for (let n = 1; n <= 6; n++) log.seen('0x3', n, `0x0${n}`);
    });
    // Blocks 1 to 6 seen: those more than 4 behind the newest are gone, finished or not.
    expect(pendingEvents(store, '0x3', 10).map((e) => e.number)).toEqual([2, 3, 4, 5, 6]);
    const all = [...Array(PARTITIONS).keys()];
    store.transact(() =>
      finishEvents(
        store,
        pendingEvents(store, '0x3', 3).map((event) => ({ event, partitions: all.slice(0, 10) })),
        true,
      ),
    );
    const first = (p: number) => p < 10;
    // Kept though every partition this node owns finished them: another may come to own the others.
    expect(pendingEvents(store, '0x3', 2, first).map((e) => e.number)).toEqual([5, 6]);
    expect(pendingEvents(store, '0x3', 2, (p) => p === 10).map((e) => e.number)).toEqual([2, 3]);
    // Their marks (0: finished) are kept as long, each staging writing the rows of its events alone.
    const [two, three] = pendingEvents(store, '0x3', 2);
    store.transact(() => markStaged(store, [{ streamId: 'a', event: three!, partition: 10 }], [{ event: two!, partitions: [0, 10] }]));
    const rows = () => store.range('matchMarks', { start: '0x3/', end: '0x3/\uffff' }).map(({ key, value }) => [key, value]);
    expect(rows()).toEqual([
      [`${two!.key}/#00`, ['0x02', 0]],
      [`${two!.key}/#10`, ['0x02', 0]],
      [`${three!.key}/#10`, ['0x03', ['a']]],
    ]);
    store.transact(() => log.seen('0x3', 7, '0x07'));
    expect(rows()).toEqual([[`${three!.key}/#10`, ['0x03', ['a']]]]);
  });
});
