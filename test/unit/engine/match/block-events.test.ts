import { rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { blockEventLog, markStaged, pendingEvents, removeEvents } from '../../../../engine/match/block-events.js';
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

  it('keeps the streams a chunk staged in their event, for a round after a crash to skip', () => {
    const log = blockEventLog(store, () => {});
    store.transact(() => {
      log.seen('0x2', 1, '0x01');
      log.confirmed('0x2', 1, '0x01');
    });
    const [seen, confirmed] = pendingEvents(store, '0x2', 10);
    expect([seen!.staged, confirmed!.staged]).toEqual([new Set(), new Set()]);
    store.transact(() =>
      markStaged(store, [
        { streamId: 'a', event: seen! },
        { streamId: 'b', event: seen! },
        { streamId: 'a', event: confirmed! },
      ]),
    );
    store.transact(() => markStaged(store, [{ streamId: 'c', event: seen! }]));
    expect(pendingEvents(store, '0x2', 10).map((e) => [...e.staged])).toEqual([['a', 'b', 'c'], ['a']]);
    // Block 1 is seen again on another branch: the new block's event has nothing staged, and a mark for the old one is not kept.
    store.transact(() => log.seen('0x2', 1, '0x0b'));
    store.transact(() => markStaged(store, [{ streamId: 'd', event: seen! }]));
    const [again] = pendingEvents(store, '0x2', 10);
    expect([again!.hash, again!.staged]).toEqual(['0x0b', new Set()]);
    // Nor is a mark for an event a reorg removed written back.
    store.transact(() => log.reorged!('0x2', 1, 1));
    store.transact(() => markStaged(store, [{ streamId: 'e', event: again! }]));
    expect(pendingEvents(store, '0x2', 10).map((e) => e.key)).toEqual([confirmed!.key]);
    // The last chunk removes the events it was given, unless another block's replaced one.
    store.transact(() => log.seen('0x2', 2, '0x02'));
    const [, two] = pendingEvents(store, '0x2', 10);
    store.transact(() => log.seen('0x2', 2, '0x0c'));
    store.transact(() => removeEvents(store, [confirmed!, two!]));
    expect(pendingEvents(store, '0x2', 10).map((e) => e.hash)).toEqual(['0x0c']);
  });
});
