import { rmSync } from 'node:fs';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ServiceClock } from '../engine/clock.js';
import { ConfigError, parseConfig } from '../engine/config/config.js';
import { blockKey } from '../engine/ingest/chain-store.js';
import type { ChainEvents } from '../engine/ingest/follow.js';
import { systemTicker } from '../app/process.js';
import { SolanaFollower } from '../engine/solana/follower.js';
import { jsonRpcUpstream } from '../http/clients/rpc.js';
import { slotSubscription } from '../http/clients/solana-slots.js';
import { openStore, type Store } from '../storage/env.js';
import { workerPool } from '../app/worker-pool.js';
import { Ledger, addressOf, keypair, solTransfer, type TxEntry } from './kit/solana-rpc/build.js';
import { SolanaChain } from './kit/solana-rpc/chain.js';
import { startSolanaRpc, type SolanaRpc } from './kit/solana-rpc/server.js';
import { startChainpost, stopAndClean, tempDir, until, type Running } from './helpers.js';
import { quietLog } from './kit/quiet-log.js';

// The server's worker pool: getBlock answers are prepared in its threads, as in the server.
const pool = workerPool(tempDir(), 2);
afterAll(() => pool.close());

const CHAIN = 'solana';
const CONFIRMATIONS = 2;

describe('following a Solana node (the stand-in, built slots)', () => {
  let node: SolanaRpc;
  let rpc: ReturnType<typeof jsonRpcUpstream>;
  let slots: ReturnType<typeof slotSubscription> | undefined;
  let store: Store;
  let dir: string;
  let events: string[];
  let followers: SolanaFollower[];
  const recorder: ChainEvents = {
    seen: (_c, n, h) => void events.push(`seen ${n} ${h}`),
    confirmed: (_c, n, h) => void events.push(`confirmed ${n} ${h}`),
    reorged: (_c, from, to) => void events.push(`reorg ${from}-${to}`),
  };
  const log = quietLog(() => Date.now());
  const ledger = new Ledger();
  let txs = 0;
  /** A slot of one SOL transfer (each a new signature). */
  const tx = (): TxEntry[] => [
    solTransfer({ ledger }, { from: keypair('follower', txs++ % 4), to: addressOf(`to/${txs}`), lamports: 1_000 + txs }).entry,
  ];
  const follower = (opts: { clock?: ServiceClock; pollMs?: number; ws?: boolean; retention?: number } = {}): SolanaFollower => {
    const clock = opts.clock ?? new ServiceClock(systemTicker, Date.now());
    if (opts.ws === true) slots = slotSubscription(node.wsUrl!);
    const f = new SolanaFollower(CHAIN, rpc, store, clock, recorder, log, {
      confirmations: CONFIRMATIONS,
      pollMs: opts.pollMs ?? 60_000,
      pool: pool.solana,
      ...(opts.ws === true ? { slots } : {}),
      ...(opts.retention === undefined ? {} : { retention: opts.retention }),
    });
    followers.push(f);
    return f;
  };
  const canon = (n: number): string | undefined => store.get<string>('canon', blockKey(CHAIN, n));
  const hash = (n: number): string => node.chain.at(n)!.blockhash;
  const seen = (): number[] => events.filter((e) => e.startsWith('seen')).map((e) => Number(e.split(' ')[1]));
  const confirmed = (): number[] => events.filter((e) => e.startsWith('confirmed')).map((e) => Number(e.split(' ')[1]));
  const start = async (opts: { ws?: boolean; port?: number; chain?: SolanaChain } = {}): Promise<void> => {
    node = await startSolanaRpc({
      chain: opts.chain ?? new SolanaChain(),
      ws: opts.ws ?? false,
      ...(opts.port === undefined ? {} : { port: opts.port }),
    });
    rpc = jsonRpcUpstream(node.url);
  };
  /** Every slot the stand-in holds a block at, from `from` on, read from its chain (not through the follower). */
  const blockSlots = (from: number): number[] =>
    node.chain
      .slots()
      .filter((b) => b.slot >= from)
      .map((b) => b.slot);

  beforeEach(() => {
    events = [];
    followers = [];
    slots = undefined;
    dir = tempDir();
    store = openStore(dir);
  });
  afterEach(async () => {
    for (const f of followers) f.stop();
    slots?.close();
    await rpc.close();
    await node.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("starts a new chain at the node's confirmed slot, then stores each slot in order with the node's hashes, announced seen then confirmed 2 slots deep", async () => {
    await start();
    node.chain.produce(tx());
    node.chain.produce(tx());
    const f = follower();
    await f.sync();
    // Slot 1 came before the start: not ingested.
    expect(canon(1)).toBeUndefined();
    expect(canon(2)).toBe(hash(2));
    for (let i = 0; i < 5; i++) node.chain.produce(tx());
    await f.sync();
    expect(f.status()).toMatchObject({ chain: CHAIN, head: 7, confirmed: 5, nodeHead: 7, upstream: 'ok', skippedSlots: 0, wake: 'poll' });
    for (let n = 2; n <= 7; n++) expect(canon(n)).toBe(hash(n));
    expect(seen()).toEqual([2, 3, 4, 5, 6, 7]);
    expect(confirmed()).toEqual([2, 3, 4, 5]);
    expect(events).toContain(`confirmed 5 ${hash(5)}`);
    // Each slot seen before it is confirmed (the tip, 7, is past them all as they are stored: they are confirmed as they come).
    for (let n = 2; n <= 5; n++) expect(events.indexOf(`seen ${n} ${hash(n)}`)).toBeLessThan(events.indexOf(`confirmed ${n} ${hash(n)}`));
    // Nothing new: one getSlot, no getBlock.
    const blocks = node.calls['getBlock'];
    await f.sync();
    expect(node.calls['getBlock']).toBe(blocks);
  });

  it('skipped slots (-32007) leave gaps: nothing stored or announced for them, confirmations only for stored slots, in order', async () => {
    await start();
    node.chain.produce(tx());
    const f = follower();
    await f.sync();
    node.chain.produce(tx()); // 2
    node.chain.skip(2); // 3, 4
    node.chain.produce(tx()); // 5
    node.chain.skip(1); // 6
    node.chain.produce(tx()); // 7
    await f.sync();
    expect(blockSlots(1)).toEqual([1, 2, 5, 7]);
    expect(f.status()).toMatchObject({ head: 7, skippedSlots: 3 });
    for (const n of [3, 4, 6]) {
      expect(canon(n)).toBeUndefined();
      expect(store.getRaw('blocks', blockKey(CHAIN, n))).toBeUndefined();
    }
    for (const n of [1, 2, 5, 7]) expect(canon(n)).toBe(hash(n));
    expect(seen()).toEqual([1, 2, 5, 7]);
    // Tip 7: slots up to 5 are 2 deep.
    expect(confirmed()).toEqual([1, 2, 5]);
    node.chain.skip(3); // 8, 9, 10
    await f.sync();
    // No block above 7, and the tip did not move: 7 waits.
    expect(confirmed()).toEqual([1, 2, 5]);
    node.chain.produce(tx()); // 11
    await f.sync();
    expect(confirmed()).toEqual([1, 2, 5, 7]);
    expect(seen()).toEqual([1, 2, 5, 7, 11]);
    expect(f.status()).toMatchObject({ head: 11, confirmed: 9, skippedSlots: 6 });
  });

  it('a slot not yet available (-32004) is asked again at each wake-up and never skipped', async () => {
    await start();
    node.chain.produce(tx());
    const f = follower();
    await f.sync();
    const late = node.chain.produce(tx(), { available: false }).slot; // 2
    node.chain.produce(tx()); // 3
    await f.sync();
    expect(canon(late)).toBeUndefined();
    expect(canon(3)).toBeUndefined();
    expect(f.status()).toMatchObject({ head: 1, nodeHead: 3, skippedSlots: 0 });
    const asked = node.calls['getBlock']!;
    await f.sync();
    expect(node.calls['getBlock']).toBeGreaterThan(asked);
    expect(canon(late)).toBeUndefined();
    node.chain.release(late);
    await f.sync();
    expect(canon(late)).toBe(hash(late));
    expect(canon(3)).toBe(hash(3));
    expect(seen()).toEqual([1, 2, 3]);
    expect(f.status().skippedSlots).toBe(0);
  });

  for (const answer of [-32014, null] as const) {
    it(`a slot answering ${answer === null ? 'a null result' : answer} (not complete on the node yet) is asked again, never skipped`, async () => {
      await start();
      node.chain.produce(tx());
      const f = follower();
      await f.sync();
      const late = node.chain.produce(tx(), { available: false, unavailableAs: answer }).slot; // 2
      node.chain.produce(tx()); // 3
      await f.sync();
      expect(canon(late)).toBeUndefined();
      expect(f.status()).toMatchObject({ head: 1, upstream: 'ok', skippedSlots: 0 });
      node.chain.release(late);
      await f.sync();
      expect(seen()).toEqual([1, 2, 3]);
      expect(canon(late)).toBe(hash(late));
    });
  }

  it('prunes the records and probe columns of confirmed slots below the retention window, skipped slots and all, and keeps their hashes', async () => {
    await start();
    node.chain.produce(tx());
    const f = follower({ retention: 3 });
    await f.sync();
    for (let i = 0; i < 8; i++) {
      if (i === 3) node.chain.skip();
      node.chain.produce(tx());
    }
    await f.sync();
    const stored = blockSlots(1);
    const head = Math.max(...stored);
    const confirmed = f.status().confirmed;
    // Kept: the last 3 slots' records, and everything not yet confirmed; below both, records go and canon stays.
    const floor = Math.min(head - 3 + 1, confirmed + 1);
    for (const n of stored) {
      expect(canon(n)).toBe(hash(n));
      expect(store.getRaw('blocks', blockKey(CHAIN, n)) !== undefined, `slot ${n}`).toBe(n >= floor);
      expect(store.getRaw('probes', blockKey(CHAIN, n)) !== undefined, `slot ${n}`).toBe(n >= floor);
    }
    expect(f.status().oldest).toBe(floor);
  });

  it('a block whose previousBlockhash is 111…1 (the node started from a snapshot above its parent) is taken on its parentSlot', async () => {
    await start();
    node.chain.produce(tx());
    const f = follower();
    await f.sync();
    const next = node.chain.produce(tx()); // 2
    node.chain.put({ ...next, previousBlockhash: '11111111111111111111111111111111' });
    await f.sync();
    expect(canon(2)).toBe(hash(2));
    expect(events.filter((e) => e.startsWith('reorg'))).toEqual([]);
  });

  it('a slot answering -32004 is skipped once a block above it links past it (agave, for a skipped slot above the root)', async () => {
    await start();
    node.chain.produce(tx());
    const f = follower();
    await f.sync();
    const held = node.chain.produce(tx(), { available: false }).slot; // 2: -32004
    const above = node.chain.produce(tx()); // 3, whose parent is made slot 1: slot 2 is off the branch
    node.chain.put({ ...above, parentSlot: 1, previousBlockhash: hash(1) });
    await f.sync();
    expect(canon(held)).toBeUndefined();
    expect(canon(3)).toBe(hash(3));
    expect(seen()).toEqual([1, 3]);
    expect(f.status()).toMatchObject({ head: 3, skippedSlots: 1 });
  });

  it("a fork rolls back our slots above the fork point and takes the node's branch, skipped slots included", async () => {
    await start();
    node.chain.produce(tx());
    const f = follower();
    await f.sync();
    for (let i = 0; i < 5; i++) node.chain.produce(tx()); // 2-6
    await f.sync();
    const old = [4, 5, 6].map(hash);
    events = [];
    // From slot 4: a block, a skipped slot, two blocks (the node's tip moves past ours).
    node.chain.fork(4, [tx(), 'skip', tx(), tx()]);
    await f.sync();
    expect(events[0]).toBe('reorg 4-6');
    expect(seen()).toEqual([4, 6, 7]);
    for (const n of blockSlots(1)) expect(canon(n)).toBe(hash(n));
    expect(canon(5)).toBeUndefined();
    expect(canon(4)).not.toBe(old[0]);
    for (const h of old) expect(store.get('blockHashes', `${CHAIN}/${h.toLowerCase()}`)).toBeUndefined();
    expect(f.reorgs()).toBe(1);
    // A fork whose first new block skips back over ours: its parent is our slot 6, our 7 is gone.
    events = [];
    node.chain.fork(7, ['skip', 'skip', tx()]);
    await f.sync();
    expect(events[0]).toBe('reorg 7-7');
    expect(seen()).toEqual([9]);
    expect(canon(7)).toBeUndefined();
    expect(canon(9)).toBe(hash(9));
    expect(f.status()).toMatchObject({ head: 9 });
    expect(f.reorgs()).toBe(2);
    // Confirmations after the fork are for the slots on the node's branch.
    for (const e of events.filter((x) => x.startsWith('confirmed')))
      expect(e).toBe(`confirmed ${e.split(' ')[1]} ${hash(Number(e.split(' ')[1]))}`);
  });

  it('picks up where it stopped after a restart, without fetching stored slots again', async () => {
    await start();
    node.chain.produce(tx());
    await follower().sync();
    for (let i = 0; i < 3; i++) node.chain.produce(tx()); // 2-4
    await followers[0]!.sync();
    followers[0]!.stop();
    node.chain.skip(1); // 5
    node.chain.produce(tx()); // 6
    node.chain.produce(tx()); // 7
    events = [];
    const asked = node.calls['getBlock']!;
    const again = follower();
    expect(again.status()).toMatchObject({ head: 4, confirmed: 2 });
    await again.sync();
    // 5 (skipped), 6 and 7: nothing below.
    expect(node.calls['getBlock']! - asked).toBe(3);
    expect(seen()).toEqual([6, 7]);
    expect(confirmed()).toEqual([3, 4]);
    expect(again.status()).toMatchObject({ head: 7, confirmed: 5 });
  });

  it('slotSubscribe wakes the follower at once (poll every 60 s); it subscribes again after the socket drops', async () => {
    await start({ ws: true });
    node.chain.produce(tx());
    // The follower's own timers on a clock the test moves: the poll (60 s) and the reconnect (1 s).
    const clock = new ServiceClock({ elapsedMs: () => 0, wake: () => () => {} }, Date.now());
    const f = follower({ clock, ws: true });
    f.start();
    expect(await until(() => f.status().wake === 'websocket' && f.status().head === 1, 2_000)).toBe(true);
    const t0 = Date.now();
    const slot = node.chain.produce(tx()).slot;
    expect(await until(() => canon(slot) === hash(slot), 1_000)).toBe(true);
    expect(Date.now() - t0).toBeLessThan(1_000);
    expect(node.calls['slotSubscribe']).toBe(1);
    // The node goes away and comes back on the same port: the follower polls meanwhile and subscribes again.
    const { port, chain } = node;
    await node.close();
    expect(await until(() => f.status().wake === 'poll', 2_000)).toBe(true);
    // The follower's HTTP client stays: it connects again to the node on the same port.
    node = await startSolanaRpc({ chain, port });
    await clock.advance(1_000);
    expect(await until(() => f.status().wake === 'websocket', 2_000)).toBe(true);
    const next = node.chain.produce(tx()).slot;
    expect(await until(() => canon(next) === hash(next), 1_000)).toBe(true);
  });

  it('a node without a WebSocket is followed by polling', async () => {
    await start({ ws: false });
    node.chain.produce(tx());
    const f = follower({ pollMs: 50, ws: false });
    f.start();
    expect(await until(() => f.status().head === 1, 2_000)).toBe(true);
    for (let i = 0; i < 3; i++) node.chain.produce(tx());
    expect(await until(() => f.status().head === 4, 2_000)).toBe(true);
    expect(f.status().wake).toBe('poll');
    for (let n = 1; n <= 4; n++) expect(canon(n)).toBe(hash(n));
  });
});

describe('Solana configuration', () => {
  it("reads CHAINPOST_SOLANA_RPC, _POLL_MS and _WS (default: the RPC's host and port over ws), and solana= in CHAINPOST_CONFIRMATIONS", () => {
    expect(parseConfig({}).solana).toEqual({ url: undefined, pollMs: 400, wsUrl: undefined });
    expect(parseConfig({ CHAINPOST_SOLANA_RPC: 'https://node.example:8899' }).solana).toEqual({
      url: 'https://node.example:8899',
      pollMs: 400,
      wsUrl: 'wss://node.example:8899',
    });
    expect(
      parseConfig({
        CHAINPOST_SOLANA_RPC: 'http://127.0.0.1:8899',
        CHAINPOST_SOLANA_WS: 'ws://127.0.0.1:8900',
        CHAINPOST_SOLANA_POLL_MS: '250',
      }).solana,
    ).toEqual({ url: 'http://127.0.0.1:8899', pollMs: 250, wsUrl: 'ws://127.0.0.1:8900' });
    const c = parseConfig({ CHAINPOST_CONFIRMATIONS: 'solana=32,bitcoin=3,eth=20' }).confirmations;
    expect([c.get('solana'), c.get('bitcoin'), c.get('0x1')]).toEqual([32, 3, 20]);
    for (const [name, value] of [
      ['CHAINPOST_SOLANA_RPC', 'ws://127.0.0.1:8900'],
      ['CHAINPOST_SOLANA_RPC', 'not a url'],
      ['CHAINPOST_SOLANA_WS', 'http://127.0.0.1:8900'],
      ['CHAINPOST_SOLANA_POLL_MS', 'fast'],
      ['CHAINPOST_SOLANA_POLL_MS', '5'],
      ['CHAINPOST_CONFIRMATIONS', 'solana:devnet=3'],
    ] as const) {
      const err = (() => {
        try {
          parseConfig({ [name]: value });
        } catch (e) {
          return e;
        }
      })();
      expect(err, `${name}=${value}`).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).variable).toBe(name);
    }
  });
});

describe('the server with CHAINPOST_SOLANA_RPC', () => {
  let s: Running | undefined;
  let node: SolanaRpc | undefined;
  afterEach(async () => {
    await stopAndClean(s);
    await node?.close();
  });

  it('follows the node and lists chain solana in /health and /metrics', async () => {
    node = await startSolanaRpc({ chain: new SolanaChain() });
    node.chain.produce([]);
    s = await startChainpost({ CHAINPOST_SOLANA_RPC: node.url, CHAINPOST_SOLANA_POLL_MS: '60000', CHAINPOST_CONFIRMATIONS: 'solana=1' });
    const health = async (): Promise<Record<string, unknown> | undefined> =>
      ((await s!.call('/health')).body as { chains?: Array<Record<string, unknown>> }).chains?.find((c) => c.chain === 'solana');
    expect(await until(async () => (await health())?.head === 1, 5_000, 50)).toBe(true);
    // The WebSocket wakes it: the poll is a minute.
    node.chain.skip(1);
    node.chain.produce([]);
    node.chain.produce([]);
    expect(await until(async () => (await health())?.head === 4, 5_000, 50)).toBe(true);
    expect(await health()).toMatchObject({
      chain: 'solana',
      head: 4,
      confirmed: 3,
      nodeHead: 4,
      upstream: 'ok',
      skippedSlots: 1,
      wake: 'websocket',
    });
    const metrics = String((await s.call('/metrics')).body);
    expect(metrics).toContain('chainpost_chain_head{chain="solana"} 4');
    expect(metrics).toContain('chainpost_chain_skipped_slots_total{chain="solana"} 1');
  });
});
