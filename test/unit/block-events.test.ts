import { rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { blockEventLog, pendingEvents } from '../../engine/match/block-events.js';
import { openStore } from '../../storage/env.js';
import { tempDir } from '../helpers.js';

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
});
