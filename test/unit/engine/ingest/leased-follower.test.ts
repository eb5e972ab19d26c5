import { rmSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { StoredListener } from '../../../../engine/ingest/commit.js';
import type { ChainFollower, FollowerStatus } from '../../../../engine/ingest/follow.js';
import { FOLLOW_AT_ONCE, Following, LeasedFollower } from '../../../../engine/ingest/following.js';
import { openStore, type Store } from '../../../../storage/env.js';
import { tempDir } from '../../../helpers.js';

/** A follower that records what is done to it; its status is the store's state when it was made, as a real one's. */
class Recorded implements ChainFollower {
  readonly calls: string[] = [];
  private readonly head: number;
  constructor(
    store: Store,
    readonly stored: StoredListener | undefined,
  ) {
    this.head = store.get<{ head: number }>('chainState', CHAIN)?.head ?? -1;
  }
  start(): void {
    this.calls.push('start');
  }
  stop(): void {
    this.calls.push('stop');
  }
  status(): FollowerStatus {
    return { chain: CHAIN, head: this.head, confirmed: this.head, nodeHead: 77, oldest: 0, upstream: 'ok', upstreamErrors: 0 };
  }
  reorgs(): number {
    return 0;
  }
}

const CHAIN = '0x1';
const LISTENER: StoredListener = { blocks: () => {}, reorg: () => {} };
/** A store in a temp directory of this case's, removed after it. */
let store: Store;
const stores: Array<{ dir: string; store: Store }> = [];
beforeEach(() => {
  const dir = tempDir();
  store = openStore(dir);
  stores.push({ dir, store });
});
afterEach(async () => {
  for (const opened of stores.splice(0)) {
    await opened.store.close();
    rmSync(opened.dir, { recursive: true, force: true });
  }
});

describe("a chain's follower on a cluster node (LeasedFollower)", () => {
  it('follows from the state the store holds when it is told to, with a follower made then, and stops it when told', async () => {
    const made: Recorded[] = [];
    const leased = new LeasedFollower(CHAIN, store, (stored) => {
      const f = new Recorded(store, stored);
      made.push(f);
      return f;
    });
    // Made for its status, never started.
    expect(made).toHaveLength(1);
    expect(made[0]!.calls).toEqual([]);
    expect(leased.active).toBe(false);
    // Blocks another node published, applied meanwhile.
    await store.transactAsync(() => store.put('chainState', CHAIN, { head: 41, confirmed: 40, pruned: -1 }));
    leased.follow(LISTENER);
    expect(made).toHaveLength(2);
    expect(made[1]!.stored).toBe(LISTENER);
    expect(made[1]!.calls).toEqual(['start']);
    expect(leased.status().head).toBe(41);
    leased.unfollow();
    leased.unfollow();
    expect(made[1]!.calls).toEqual(['start', 'stop']);
    expect(leased.active).toBe(false);
  });

  it("reports the store's head while it does not follow, the rest from its last follower", async () => {
    const leased = new LeasedFollower(CHAIN, store, (stored) => new Recorded(store, stored));
    expect(leased.status()).toMatchObject({ head: -1, nodeHead: 77 });
    await store.transactAsync(() => store.put('chainState', CHAIN, { head: 9, confirmed: 7, pruned: 2 }));
    expect(leased.status()).toMatchObject({ chain: CHAIN, head: 9, confirmed: 7, oldest: 3, nodeHead: 77 });
  });

  it('is started at once by a single process, with no listener, and by the gate a cluster node sets', () => {
    const following = new Following();
    expect(following.gate).toBe(FOLLOW_AT_ONCE);
    let one: Recorded | undefined;
    following.add(
      CHAIN,
      'http://127.0.0.1:8545',
      { call: async () => null, close: async () => {} } as never,
      (stored) => (one = new Recorded(store, stored)),
    );
    expect(one!.calls).toEqual(['start']);
    expect(one!.stored).toBeUndefined();
    expect(following.follower(CHAIN)).toBe(one);
    const gated: string[] = [];
    following.gate = {
      follower: (chain, make) => {
        gated.push(chain);
        return make(undefined);
      },
    };
    following.add(
      'bitcoin',
      'http://127.0.0.1:8332',
      { call: async () => null, close: async () => {} } as never,
      (stored) => new Recorded(store, stored),
    );
    expect(gated).toEqual(['bitcoin']);
    expect(following.chains()).toEqual([CHAIN, 'bitcoin']);
  });
});
