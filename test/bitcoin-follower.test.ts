import { rmSync } from 'node:fs';
import { afterAll, beforeEach, afterEach, describe, expect, it } from 'vitest';
import { addressTxs, balanceOf, transferCount, txHeight, utxosOf } from '../engine/bitcoin/address-index.js';
import { BitcoinFollower } from '../engine/bitcoin/follower.js';
import type { StartBlock } from '../engine/ingest/chain-start.js';
import { readBtcProbe, scriptKey } from '../engine/bitcoin/probe.js';
import { BtcRecordView } from '../engine/bitcoin/record.js';
import { decodeAddress } from '../engine/bitcoin/address.js';
import { ServiceClock } from '../engine/clock.js';
import { blockKey } from '../engine/ingest/chain-store.js';
import type { ChainEvents } from '../engine/ingest/follow.js';
import { jsonLogger } from '../engine/log.js';
import { systemTicker } from '../app/process.js';
import { jsonRpcUpstream } from '../http/clients/rpc.js';
import { openStore, type Store } from '../storage/env.js';
import { workerPool } from '../app/worker-pool.js';
import { branch, coinsOf, mineBlock, owner, payTo, spend } from './kit/bitcoin-core/build.js';
import { PRUNED_HEIGHT, prunedChain } from './kit/bitcoin-core/fixtures.js';
import { startBitcoinCore, type BitcoinCore } from './kit/bitcoin-core/server.js';
import { tempDir } from './helpers.js';

// The server's worker pool: getblock answers are parsed and encoded in its threads, as in the server.
const pool = workerPool(tempDir(), 2);
afterAll(() => pool.close());

const CHAIN = 'bitcoin';

describe('following Bitcoin Core (the stand-in: a pruned node above block 880,000, and built blocks)', () => {
  let core: BitcoinCore;
  let rpc: ReturnType<typeof jsonRpcUpstream>;
  let store: Store;
  let dir: string;
  let events: string[];
  let logged: Array<{ level: string; msg: string } & Record<string, unknown>>;
  const recorder: ChainEvents = {
    seen: (_c, n, h) => void events.push(`seen ${n} ${h.slice(-6)}`),
    confirmed: (_c, n, h) => void events.push(`confirmed ${n} ${h.slice(-6)}`),
    reorged: (_c, from, to) => void events.push(`reorg ${from}-${to}`),
  };
  const clock = new ServiceClock(systemTicker, Date.now());
  const log = jsonLogger(
    (line) => void logged.push(JSON.parse(line)),
    () => clock.now(),
    'info',
  );
  /** A follower as the server makes one: a chain new to the store starts at the node's best block unless given a start block. */
  const follower = (startBlock: StartBlock = 'head', opts: { retention?: number } = {}): BitcoinFollower =>
    new BitcoinFollower(CHAIN, rpc, store, clock, recorder, log, {
      confirmations: 2,
      pollMs: 60_000,
      pool: pool.bitcoin,
      startBlock,
      ...opts,
    });
  const canon = (n: number): string | undefined => store.get<string>('canon', blockKey(CHAIN, n));
  const view = (n: number): BtcRecordView => BtcRecordView.of(store.getRaw('blocks', blockKey(CHAIN, n))!);
  const hash = (n: number): string => core.chain.at(n)!.hash.slice(-6);
  /** The stand-in's tip when it started (the last of its served mainnet blocks). */
  const TIP = PRUNED_HEIGHT + 19;

  const start = async (opts: Parameters<typeof startBitcoinCore>[0] = {}): Promise<void> => {
    core = await startBitcoinCore({ chain: prunedChain(), ...opts });
    rpc = jsonRpcUpstream(core.url);
  };
  beforeEach(() => {
    events = [];
    logged = [];
    dir = tempDir();
    store = openStore(dir);
  });
  afterEach(async () => {
    await rpc.close();
    await core.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("starts a chain new to the store at the node's best block: that block is history (no event), each new one is stored with the node's hash and announced as seen, then confirmed 2 blocks deep, in order", async () => {
    await start();
    const f = follower();
    await f.sync();
    expect(f.status()).toMatchObject({
      chain: CHAIN,
      head: TIP,
      confirmed: TIP - 1,
      nodeHead: TIP,
      oldest: TIP,
      upstream: 'ok',
      backfill: { from: TIP, to: TIP, done: true },
    });
    expect(canon(TIP)).toBe(core.chain.at(TIP)!.hash);
    expect(canon(TIP - 1)).toBeUndefined();
    expect(events).toEqual([]);
    // Only the best block was asked for: nothing below it (a pruned node has no data there).
    expect(core.calls['getblock']).toBe(1);
    expect(logged.find((l) => l.msg === 'following a new chain')).toMatchObject({
      chain: CHAIN,
      from: TIP,
      backfillTo: TIP,
      nodeHead: TIP,
    });

    for (let i = 0; i < 3; i++) mineBlock(core.chain);
    await f.sync();
    expect(f.status()).toMatchObject({ head: TIP + 3, confirmed: TIP + 1, nodeHead: TIP + 3 });
    for (let n = TIP; n <= TIP + 3; n++) {
      expect(canon(n)).toBe(core.chain.at(n)!.hash);
      expect(view(n).header).toMatchObject({ hash: core.chain.at(n)!.hash, height: n });
    }
    expect(events).toEqual([
      `seen ${TIP + 1} ${hash(TIP + 1)}`,
      `seen ${TIP + 2} ${hash(TIP + 2)}`,
      `seen ${TIP + 3} ${hash(TIP + 3)}`,
      `confirmed ${TIP + 1} ${hash(TIP + 1)}`,
    ]);
    // Nothing new: a poll reads the best block hash and stops.
    const calls = core.calls['getblock'];
    await f.sync();
    expect(core.calls['getblock']).toBe(calls);
  });

  it("backfills from a start block to the node's best block as history: stored and indexed, announced to no listener; blocks after it are announced", async () => {
    await start();
    const alice = owner('p2wpkh', 'backfill', 1);
    const payer = owner('p2tr', 'backfill', 2);
    const funded = mineBlock(core.chain, [], payer.output);
    const paid = spend(coinsOf(funded.transactions![0]!, [payer]), [payTo(alice.address, 200_000_000)]);
    mineBlock(core.chain, [paid]);
    mineBlock(core.chain);
    const tip = core.chain.height;
    const f = follower(tip - 3);
    await f.sync();
    expect(f.status()).toMatchObject({ head: tip, oldest: tip - 3, backfill: { from: tip - 3, to: tip, done: true, etaSeconds: 0 } });
    for (let n = tip - 3; n <= tip; n++) expect(canon(n)).toBe(core.chain.at(n)!.hash);
    expect(canon(tip - 4)).toBeUndefined();
    expect(events).toEqual([]);
    // Indexed: the payment in block tip − 1 is Alice's balance.
    expect(balanceOf(store, CHAIN, alice.address)).toBe(200_000_000);
    expect(txHeight(store, CHAIN, paid.getId())).toBe(tip - 1);
    expect(logged.filter((l) => l.msg === 'backfill done')).toEqual([expect.objectContaining({ chain: CHAIN, from: tip - 3, to: tip })]);

    mineBlock(core.chain);
    await f.sync();
    // The next block is announced; the backfilled one it confirms is not (history).
    expect(events).toEqual([`seen ${tip + 1} ${hash(tip + 1)}`]);
    mineBlock(core.chain);
    await f.sync();
    expect(events).toEqual([`seen ${tip + 1} ${hash(tip + 1)}`, `seen ${tip + 2} ${hash(tip + 2)}`]);
  });

  it("takes a store whose chain never stored a block (its state at head −1, as a server before start blocks left it on a pruned node) as new: it starts at the node's best block", async () => {
    await start();
    store.transact(() => store.put('chainState', CHAIN, { head: -1, confirmed: -1, pruned: -1 }));
    const f = follower();
    await f.sync();
    expect(f.status()).toMatchObject({ head: TIP, upstream: 'ok', backfill: { from: TIP, to: TIP } });
    expect(canon(TIP)).toBe(core.chain.at(TIP)!.hash);
  });

  it('keeps a chain already in the store whatever start block it is given, with a warning', async () => {
    await start();
    await follower().sync();
    mineBlock(core.chain);
    const again = follower(TIP - 10);
    await again.sync();
    expect(logged.filter((l) => l.level === 'warn')).toEqual([
      expect.objectContaining({
        msg: 'a start block is set for a chain already in the store: its stored state is kept',
        chain: CHAIN,
        startBlock: TIP - 10,
        followedFrom: TIP,
        head: TIP,
      }),
    ]);
    expect(again.status()).toMatchObject({ head: TIP + 1, oldest: TIP, backfill: { from: TIP, to: TIP } });
    expect(canon(TIP - 10)).toBeUndefined();
  });

  it("rolls back to the fork point on a reorg of depth 1 and of depth 2, and takes the node's branch", async () => {
    await start();
    const f = follower();
    await f.sync();
    mineBlock(core.chain);
    mineBlock(core.chain);
    await f.sync();
    for (const depth of [1, 2]) {
      events = [];
      const tip = core.chain.height;
      const replaced = core.chain.at(tip - depth + 1)!.hash;
      core.chain.reorg(
        depth,
        branch(core.chain, depth, depth + 1, [], owner('p2wpkh', 'reorg', depth).output).map((b) => b.toBuffer()),
      );
      await f.sync();
      expect(f.status().head).toBe(tip + 1);
      for (let n = tip - depth; n <= tip + 1; n++) expect(canon(n)).toBe(core.chain.at(n)!.hash);
      expect(canon(tip - depth + 1)).not.toBe(replaced);
      expect(events[0]).toBe(`reorg ${tip - depth + 1}-${tip}`);
      expect(store.get('blockHashes', `${CHAIN}/${replaced}`)).toBeUndefined();
    }
    expect(f.reorgs()).toBe(2);
  });

  it('ends the walk of a reorg deeper than its start block there: nothing below is asked for, the start block itself is replaced', async () => {
    await start();
    const f = follower(TIP - 1);
    await f.sync();
    const asked = core.calls['getblockhash'] ?? 0;
    // The node's new branch forks 3 blocks below its tip: below the start block.
    core.chain.reorg(
      3,
      branch(core.chain, 3, 5, [], owner('p2wpkh', 'deep-reorg').output).map((b) => b.toBuffer()),
    );
    await f.sync();
    expect(f.status()).toMatchObject({ head: TIP + 2, oldest: TIP - 1, upstream: 'ok' });
    for (let n = TIP - 1; n <= TIP + 2; n++) expect(canon(n)).toBe(core.chain.at(n)!.hash);
    expect(canon(TIP - 2)).toBeUndefined();
    // Both stored blocks rolled back; the new ones from the start block on stored, only those above the backfill announced.
    expect(events).toEqual([`reorg ${TIP - 1}-${TIP}`, `seen ${TIP + 1} ${hash(TIP + 1)}`, `seen ${TIP + 2} ${hash(TIP + 2)}`]);
    // The walk asked for the two stored heights, then fetched the four blocks: not the 880,000 below.
    expect((core.calls['getblockhash'] ?? 0) - asked).toBeLessThan(10);
  });

  it('prunes records out of the retention window from its start block on, far above block 0', async () => {
    await start();
    const f = follower('head', { retention: 2 });
    await f.sync();
    for (let i = 0; i < 5; i++) mineBlock(core.chain);
    await f.sync();
    // Confirmed up to TIP + 3 (2 deep), the last 2 kept: TIP … TIP + 3 pruned, their hashes kept.
    expect(f.status()).toMatchObject({ head: TIP + 5, confirmed: TIP + 3, oldest: TIP + 4 });
    for (let n = TIP; n <= TIP + 3; n++) {
      expect(store.getRaw('blocks', blockKey(CHAIN, n))).toBeUndefined();
      expect(canon(n)).toBe(core.chain.at(n)!.hash);
    }
    expect(view(TIP + 4).header.height).toBe(TIP + 4);
  });

  it('picks up where it stopped after a restart', async () => {
    await start();
    await follower().sync();
    mineBlock(core.chain);
    mineBlock(core.chain);
    events = [];
    const again = follower();
    await again.sync();
    expect(again.status().head).toBe(TIP + 2);
    expect(events.filter((e) => e.startsWith('seen')).map((e) => Number(e.split(' ')[1]))).toEqual([TIP + 1, TIP + 2]);
  });

  /** Alice (P2WPKH) is paid by a coinbase, then pays Bob (Taproot) in the next block: the block's inputs spend Alice's output. */
  const aliceToBob = (): { alice: ReturnType<typeof owner>; bob: ReturnType<typeof owner>; height: number } => {
    const alice = owner('p2wpkh', 'follower', 1);
    const bob = owner('p2tr', 'follower', 2);
    const funded = mineBlock(core.chain, [], alice.output);
    mineBlock(core.chain, [spend(coinsOf(funded.transactions![0]!, [alice]), [payTo(bob.address, 300_000_000)])]);
    return { alice, bob, height: core.chain.height };
  };
  it("indexes each address's transactions and unspent outputs, and a reorg puts back what the block it removes spent", async () => {
    await start();
    const [alice, bob, carol] = [owner('p2wpkh', 'index', 1), owner('p2tr', 'index', 2), owner('p2pkh', 'index', 3)];
    const funded = mineBlock(core.chain, [], alice.output);
    const h1 = core.chain.height;
    const paid = funded.transactions![0]!;
    // Alice pays Bob, who pays Carol in the same block: Bob's output is made and spent in one unit.
    const toBob = spend(coinsOf(paid, [alice]), [payTo(bob.address, 300_000_000)]);
    const toCarol = spend(coinsOf(toBob, [bob]), [payTo(carol.address, 200_000_000)]);
    mineBlock(core.chain, [toBob, toCarol]);
    const h2 = core.chain.height;
    // Backfilled from the funding block: what a start block brings is indexed as what comes after.
    const f = follower(h1);
    await f.sync();
    const utxos = (o: { address: string }) => utxosOf(store, CHAIN, o.address).map((u) => [u.txid, u.vout, u.sats, u.height]);
    const txs = (o: { address: string }) => addressTxs(store, CHAIN, o.address, 10).map((t) => [t.txid, t.height, t.index]);
    expect(utxos(alice)).toEqual([]);
    expect(utxos(bob)).toEqual([]);
    expect(utxos(carol)).toEqual([[toCarol.getId(), 0, 200_000_000, h2]]);
    expect(balanceOf(store, CHAIN, carol.address)).toBe(200_000_000);
    expect(txs(alice)).toEqual([
      [toBob.getId(), h2, 1],
      [paid.getId(), h1, 0],
    ]);
    expect(txs(bob)).toEqual([
      [toCarol.getId(), h2, 2],
      [toBob.getId(), h2, 1],
    ]);
    expect(txs(carol)).toEqual([[toCarol.getId(), h2, 2]]);
    expect(transferCount(store, CHAIN, alice.address)).toBe(2);
    expect(txHeight(store, CHAIN, toBob.getId())).toBe(h2);

    // The block with both payments leaves the chain: Alice's coin is unspent again, at the height it was made.
    core.chain.reorg(
      1,
      branch(core.chain, 1, 2, [], owner('p2wpkh', 'index-miner', 9).output).map((b) => b.toBuffer()),
    );
    await f.sync();
    expect(f.status().head).toBe(h2 + 1);
    expect(utxos(alice)).toEqual([[paid.getId(), 0, 312_500_000, h1]]);
    expect(balanceOf(store, CHAIN, alice.address)).toBe(312_500_000);
    expect(utxos(bob)).toEqual([]);
    expect(utxos(carol)).toEqual([]);
    expect(txs(alice)).toEqual([[paid.getId(), h1, 0]]);
    expect(txs(bob)).toEqual([]);
    expect(txs(carol)).toEqual([]);
    expect(txHeight(store, CHAIN, toBob.getId())).toBeUndefined();

    // Mined again higher up, the payment to Bob alone: indexed at its new height.
    mineBlock(core.chain, [toBob]);
    await f.sync();
    expect(utxos(alice)).toEqual([]);
    expect(utxos(bob)).toEqual([[toBob.getId(), 0, 300_000_000, h2 + 2]]);
    expect(txs(alice)).toEqual([
      [toBob.getId(), h2 + 2, 1],
      [paid.getId(), h1, 0],
    ]);
  });

  /** The (kind, tx) refs of `address` in block n's probe column. */
  const refsOf = (n: number, address: string): Array<[kind: number, tx: number]> => {
    const probe = Buffer.from(store.getRaw('probes', blockKey(CHAIN, n))!);
    const { count, keysAt, refsAt } = readBtcProbe(probe);
    const key = Buffer.from(scriptKey(decodeAddress(address).script));
    const out: Array<[number, number]> = [];
    for (let k = 0; k < count; k++)
      if (key.equals(probe.subarray(keysAt + k * 32, keysAt + k * 32 + 32)))
        out.push([probe.readUInt32LE(refsAt + k * 4) >>> 24, probe.readUInt32LE(refsAt + k * 4) & 0xffffff]);
    return out;
  };

  it("takes the spent outputs getblock 3 gives: a spender's address is in the probe column and its value in the record", async () => {
    await start();
    const { alice, bob, height } = aliceToBob();
    const f = follower(height - 1);
    await f.sync();
    expect(f.status()).toMatchObject({ head: height, inputs: 'getblock', unresolvedInputs: 0 });
    expect(refsOf(height, alice.address)).toEqual([[1, 1]]);
    expect(refsOf(height, bob.address)).toEqual([[0, 1]]);
    expect(view(height).tx(1).vin[0]!.prevout?.value).toBe(312_500_000);
  });

  it('without getblock 3 (Core before v23): finds spent outputs among the outputs it stored, then by getrawtransaction, and says when it cannot', async () => {
    await start({ verbosity3: false });
    const { alice, height } = aliceToBob();
    const f = follower(height - 1);
    await f.sync();
    // The spent output was in a block this server stored: found there.
    expect(f.status()).toMatchObject({ head: height, inputs: 'resolved', unresolvedInputs: 0 });
    // Each block asked for once: the one with inputs was prepared again from its kept answer, not fetched again.
    expect(core.calls['getblock']).toBe(2);
    expect(refsOf(height, alice.address)).toEqual([[1, 1]]);
  });

  it('without getblock 3 and without -txindex, an input spending an output it never stored (started above it) stays without address, and /health says so', async () => {
    await start({ verbosity3: false });
    const { alice } = aliceToBob();
    // Started at the tip: the funding block below it is not stored.
    const f = follower();
    await f.sync();
    expect(f.status()).toMatchObject({ head: core.chain.height, inputs: 'unresolved', unresolvedInputs: 1 });
    expect(refsOf(core.chain.height, alice.address)).toEqual([]);
  });

  it('without -txindex, the node is not asked again for spent outputs for 10 minutes (it would say the same for every block)', async () => {
    await start({ verbosity3: false });
    const alice = owner('p2wpkh', 'follower', 1);
    const bob = owner('p2tr', 'follower', 2);
    // Three coins of Alice's, mined below where the follower starts: it never stored them.
    const coins = [0, 1, 2].map(() => coinsOf(mineBlock(core.chain, [], alice.output).transactions![0]!, [alice]));
    mineBlock(core.chain, []);
    const f = follower();
    await f.sync();
    const spendCoin = (k: number): void => void mineBlock(core.chain, [spend(coins[k]!, [payTo(bob.address, 300_000_000)])]);
    spendCoin(0);
    await f.sync();
    expect(core.calls['getrawtransaction']).toBe(1);
    expect(f.status()).toMatchObject({ head: core.chain.height, inputs: 'unresolved', unresolvedInputs: 1 });
    spendCoin(1);
    await f.sync();
    expect(core.calls['getrawtransaction']).toBe(1);
    expect(f.status()).toMatchObject({ head: core.chain.height, unresolvedInputs: 2 });
    await clock.advance(10 * 60_000);
    spendCoin(2);
    await f.sync();
    expect(core.calls['getrawtransaction']).toBe(2);
    expect(f.status()).toMatchObject({ head: core.chain.height, unresolvedInputs: 3 });
  });

  it('with -txindex, getrawtransaction finds what it never stored', async () => {
    await start({ verbosity3: false, txindex: true });
    const { alice } = aliceToBob();
    const f = follower();
    await f.sync();
    expect(f.status()).toMatchObject({ inputs: 'resolved', unresolvedInputs: 0 });
    expect(refsOf(core.chain.height, alice.address)).toEqual([[1, 1]]);
  });
});
