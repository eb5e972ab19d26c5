import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseExtendedKey, deriveAddresses } from '../engine/bitcoin/xpub.js';
import { XPUB, withVersion } from './kit/bitcoin-core/keys.js';
import { Block, address as btcAddress, initEccLib } from 'bitcoinjs-lib';
import * as ecc from '@bitcoinerlab/secp256k1';
import { branch, coinsOf, mineBlock, owner, payTo, spend, ADDRESS_KINDS, type Owner } from './kit/bitcoin-core/build.js';
import { bigBlock, prunedChain } from './kit/bitcoin-core/fixtures.js';
import { startBitcoinCore, type BitcoinCore } from './kit/bitcoin-core/server.js';
import { startBinary, startChainpost, stopAndClean, until, type Running } from './helpers.js';
import { startReceiver, type Received } from './receiver.js';

/**
 * Bitcoin streams end to end: the server follows the Bitcoin Core stand-in (a
 * pruned node above block 880,000: the server starts at its best block), and a
 * real receiver gets the webhooks of every phase (mempool, in a block,
 * confirmed 2 blocks deep) for every address format and for xpub, ypub and
 * zpub wallets, across reorgs and a restart.
 */
type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/** BIP-32 vector 1's master key as an xpub, and the same key as a ypub and a zpub (SLIP-132 versions). */
const YPUB = withVersion(XPUB, 0x049d7cb2);
const ZPUB = withVersion(XPUB, 0x04b24746);
/** Address i of the receive branch of a key. */
const receive = (key: string, i: number): string => deriveAddresses(parseExtendedKey(key), 0, i, 1)[0]!;

let core: BitcoinCore;
let rx: Receiver;
let s: Running;
const env = (): Record<string, string> => ({ CHAINPOST_BITCOIN_RPC: core.url, CHAINPOST_BITCOIN_POLL_MS: '50', CHAINPOST_RATE_LIMIT: '0' });

const head = async (): Promise<number> =>
  ((await s.call('/health')).body.chains as Array<{ chain: string; head: number }>).find((c) => c.chain === 'bitcoin')?.head ?? -1;
/** Waits until the server has ingested the stand-in's tip. */
const caughtUp = async (): Promise<void> => {
  expect(await until(async () => (await head()) === core.chain.height, 20_000)).toBe(true);
};

async function createStream(body: Record<string, unknown> = {}): Promise<string> {
  const res = await s.call('/streams/bitcoin', { method: 'PUT', json: { webhookUrl: rx.url, description: 'e2e', tag: 'btc', ...body } });
  expect(res.status).toBe(200);
  return res.body.id as string;
}

const webhooksOf = (streamId: string): Array<Received['body']> =>
  rx
    .webhooks()
    .filter((r) => r.body.streamId === streamId)
    .map((r) => r.body);
const txidsOf = (body: Received['body']): string[] => (body.transactions as Array<{ txid: string }>).map((t) => t.txid);
/** The deliveries of a stream, by phase. */
const phases = (streamId: string) => {
  const all = webhooksOf(streamId);
  return {
    mempool: all.filter((b) => b.block.hash === 'mempool'),
    inBlock: all.filter((b) => b.block.hash !== 'mempool' && b.confirmed === false),
    confirmed: all.filter((b) => b.confirmed === true),
  };
};

/** A coin of `o`'s: a block whose coinbase pays it (3.125 BTC at these heights). */
function fund(o: Owner) {
  const block = mineBlock(core.chain, [], o.output);
  return coinsOf(block.transactions![0]!, [o]);
}

beforeAll(async () => {
  core = await startBitcoinCore({ chain: prunedChain() });
  rx = await startReceiver();
  s = await startChainpost(env());
  await caughtUp();
});

afterAll(async () => {
  await stopAndClean(s);
  await rx.close();
  await core.close();
});

describe('Bitcoin streams, delivered', () => {
  it('every address format matches as receiver and spender, through the mempool, in-block and confirmed phases, each once', async () => {
    const payer = owner('p2wpkh', 'e2e-payer');
    const payees = ADDRESS_KINDS.map((k, i) => owner(k, 'e2e-payee', i));
    const watching = await createStream();
    expect(
      (await s.call(`/streams/bitcoin/${watching}/address`, { method: 'POST', json: { address: payees.map((p) => p.address) } })).status,
    ).toBe(200);
    const spender = await createStream({ includeOutputs: false });
    await s.call(`/streams/bitcoin/${spender}/address`, { method: 'POST', json: { address: payer.address } });
    const coins = fund(payer);
    const tx = spend(
      coins,
      payees.map((p) => payTo(p.address, 100_000)),
    );
    await caughtUp();

    core.chain.addToMempool(tx.toHex());
    expect(await until(() => phases(watching).mempool.length === 1 && phases(spender).mempool.length === 1, 10_000)).toBe(true);
    const m = phases(watching).mempool[0]!;
    expect(m).toMatchObject({
      confirmed: false,
      chainId: 'btc-mainnet',
      network: 'mainnet',
      tag: 'btc',
      block: { hash: 'mempool', height: '0' },
    });
    expect(txidsOf(m)).toEqual([tx.getId()]);
    // Both sides populated in the mempool phase: the spender's address and value, every payee.
    expect(m.transactions[0].vin[0]).toMatchObject({ addresses: [payer.address], value: '3.12500000' });
    expect(m.transactions[0].vout.map((o: { scriptPubKeyAddress: string }) => o.scriptPubKeyAddress)).toEqual(payees.map((p) => p.address));
    expect(m.transactions[0].vout.map((o: { value: number }) => o.value)).toEqual(payees.map(() => 0.001));
    expect(phases(spender).mempool[0]!.transactions[0].vout).toEqual([]);

    const block = mineBlock(core.chain, [tx]);
    // The payer's stream had the coinbase paying it (funding) in a block already, as receiver.
    expect(await until(() => phases(watching).inBlock.length === 1 && phases(spender).inBlock.length === 2, 10_000)).toBe(true);
    expect(phases(spender).inBlock[0]!.transactions[0]).toMatchObject({ isCoinbase: true, txid: coins[0]!.txid });
    expect(txidsOf(phases(spender).inBlock[1]!)).toEqual([tx.getId()]);
    const b = phases(watching).inBlock[0]!;
    expect(b.block).toMatchObject({
      hash: block.getId(),
      height: String(core.chain.height),
      nTx: '2',
      previousblockhash: core.chain.at(core.chain.height - 1)!.hash,
    });
    expect(txidsOf(b)).toEqual([tx.getId()]);
    expect(b.transactions[0]).toMatchObject({
      blockHash: block.getId(),
      blockNumber: core.chain.height,
      isCoinbase: false,
      inputCount: 1,
      outputCount: 5,
    });

    mineBlock(core.chain);
    expect(await until(() => phases(watching).confirmed.length === 0, 1_000)).toBe(true);
    mineBlock(core.chain);
    expect(await until(() => phases(watching).confirmed.length === 1 && phases(spender).confirmed.length === 2, 10_000)).toBe(true);
    expect(phases(watching).confirmed[0]!.block.hash).toBe(block.getId());
    // No second mempool delivery of the same transaction.
    expect(phases(watching).mempool.length).toBe(1);
  });

  it("xpub, ypub and zpub wallets: each key's addresses, named in xpubs[], and the gap window moving on within a block", async () => {
    const id = await createStream();
    for (const xpub of [XPUB, YPUB, ZPUB])
      expect((await s.call(`/streams/bitcoin/${id}/xpub`, { method: 'POST', json: { xpub } })).status).toBe(200);
    const payer = owner('p2wpkh', 'e2e-wallets');
    const [coin] = fund(payer);
    await caughtUp();
    // One transaction to index 0 of each key; then index 19 of the zpub (the window's last) and, in the same
    // block, index 35 (watched only once 19 is used: 19 + 20 ≥ 35); then index 80 (beyond 35 + 20: not watched).
    const first = spend(
      [coin!],
      [payTo(receive(XPUB, 0), 1000), payTo(receive(YPUB, 0), 1000), payTo(receive(ZPUB, 0), 1000), payTo(payer.address, 300_000_000)],
    );
    const second = spend(coinsOf(first, [payer]), [payTo(receive(ZPUB, 19), 1000), payTo(payer.address, 290_000_000)]);
    const third = spend(coinsOf(second, [payer]), [payTo(receive(ZPUB, 35), 1000), payTo(payer.address, 280_000_000)]);
    const fourth = spend(coinsOf(third, [payer]), [payTo(receive(ZPUB, 80), 1000), payTo(payer.address, 270_000_000)]);
    mineBlock(core.chain, [first, second, third, fourth]);
    expect(await until(() => phases(id).inBlock.length === 1, 10_000)).toBe(true);
    const body = phases(id).inBlock[0]!;
    expect(txidsOf(body)).toEqual([first.getId(), second.getId(), third.getId()]);
    expect(body.transactions[0].xpubs).toEqual([
      { xpub: XPUB, address: receive(XPUB, 0) },
      { xpub: YPUB, address: receive(YPUB, 0) },
      { xpub: ZPUB, address: receive(ZPUB, 0) },
    ]);
    expect(receive(XPUB, 0)).toMatch(/^1/);
    expect(receive(YPUB, 0)).toMatch(/^3/);
    expect(receive(ZPUB, 0)).toMatch(/^bc1q/);
    expect(body.transactions[2].xpubs).toEqual([{ xpub: ZPUB, address: receive(ZPUB, 35) }]);
    // The window moved on for later blocks too: 55 (its last now) and, by it, 75 in the same transaction.
    const fifth = spend(coinsOf(fourth, [payer]), [
      payTo(receive(ZPUB, 55), 1000),
      payTo(receive(ZPUB, 75), 1000),
      payTo(payer.address, 260_000_000),
    ]);
    mineBlock(core.chain, [fifth]);
    expect(await until(() => phases(id).inBlock.length === 2, 10_000)).toBe(true);
    expect(phases(id).inBlock[1]!.transactions[0].xpubs).toEqual([
      { xpub: ZPUB, address: receive(ZPUB, 55) },
      { xpub: ZPUB, address: receive(ZPUB, 75) },
    ]);
    // The mempool phase matches xpub addresses too.
    const sixth = spend(coinsOf(fifth, [payer]), [payTo(receive(XPUB, 1), 1000), payTo(payer.address, 250_000_000)]);
    core.chain.addToMempool(sixth.toHex());
    expect(await until(() => phases(id).mempool.length === 1, 10_000)).toBe(true);
    expect(phases(id).mempool[0]!.transactions[0]).toMatchObject({
      txid: sixth.getId(),
      xpubs: [{ xpub: XPUB, address: receive(XPUB, 1) }],
    });
    mineBlock(core.chain, [sixth]);
  });

  /** Pays `to` from a freshly funded coin; the transaction, not mined. */
  const payment = (to: Owner, seed: string) => {
    const payer = owner('p2wpkh', seed);
    return spend(fund(payer), [payTo(to.address, 1_000_000)]);
  };

  it.each([1, 2])(
    'a reorg of depth %i: the block that left gets no confirmed webhook, the block replacing it (with the same transaction) gets both',
    async (depth) => {
      const watched = owner('p2pkh', 'e2e-reorg', depth);
      const id = await createStream();
      await s.call(`/streams/bitcoin/${id}/address`, { method: 'POST', json: { address: watched.address } });
      const tx = payment(watched, `e2e-reorg-payer-${depth}`);
      const left = mineBlock(core.chain, [tx]);
      for (let i = 1; i < depth; i++) mineBlock(core.chain);
      expect(await until(() => phases(id).inBlock.length === 1, 10_000)).toBe(true);
      expect(phases(id).inBlock[0]!.block.hash).toBe(left.getId());
      // The node moves to a longer branch holding the same transaction, in a block of another hash.
      const replacing = branch(core.chain, depth, depth + 2, [tx], owner('p2wpkh', 'e2e-reorg-miner', depth).output);
      core.chain.reorg(
        depth,
        replacing.map((b) => b.toBuffer()),
      );
      expect(await until(() => phases(id).confirmed.length === 1, 10_000)).toBe(true);
      await caughtUp();
      expect(phases(id).confirmed.map((b) => b.block.hash)).toEqual([replacing[0]!.getId()]);
      expect(phases(id).inBlock.map((b) => b.block.hash)).toEqual([left.getId(), replacing[0]!.getId()]);
      expect(txidsOf(phases(id).confirmed[0]!)).toEqual([tx.getId()]);
    },
  );

  it('a restart between the in-block and the confirmed webhook: each arrives once', async () => {
    // A kill -9 of the server's process is what is checked: the built binary's, on the same data.
    await s.stop();
    s = await startBinary(env(), s.dir);
    await caughtUp();
    const watched = owner('p2tr', 'e2e-restart');
    const id = await createStream();
    await s.call(`/streams/bitcoin/${id}/address`, { method: 'POST', json: { address: watched.address } });
    const block = mineBlock(core.chain, [payment(watched, 'e2e-restart-payer')]);
    expect(await until(() => phases(id).inBlock.length === 1, 10_000)).toBe(true);
    // Its outcome committed (a kill while it is in flight may send it again: at least once).
    expect(await until(async () => (await s.call(`/stats/${id}`)).body.totalWebhooksDelivered === 1, 10_000)).toBe(true);
    await s.stop('SIGKILL');
    mineBlock(core.chain);
    mineBlock(core.chain);
    // What the killed process left is read by the next start: in this process.
    s = await startChainpost(env(), s.dir);
    expect(await until(() => phases(id).confirmed.length === 1, 15_000)).toBe(true);
    await caughtUp();
    expect(phases(id).confirmed[0]!.block.hash).toBe(block.getId());
    expect(phases(id).inBlock.length).toBe(1);
    expect(await until(async () => (await s.call(`/stats/${id}`)).body.totalWebhooksDelivered === 2, 10_000)).toBe(true);
    expect((await s.call(`/stats/${id}`)).body).toMatchObject({ totalTxsProcessed: 2 });
  });

  describe("mainnet block 574200 (3,315 transactions), relinked onto the stand-in's chain", () => {
    initEccLib(ecc);
    const raw = bigBlock(574200);
    /** bitcoinjs-lib's own decoding: each transaction's id, and each output's value and address ('' without one). */
    const reference = Block.fromBuffer(raw).transactions!.map((t) => ({
      txid: t.getId(),
      vout: t.outs.map((o) => {
        let a = '';
        try {
          a = btcAddress.fromOutputScript(o.script);
        } catch {
          // no address form (OP_RETURN, pay-to-pubkey, bare multisig)
        }
        return { value: Number(o.value), address: a };
      }),
    }));
    const watched = [...new Set(reference.flatMap((t) => t.vout.map((o) => o.address)).filter((a) => a !== ''))].filter(
      (_, i) => i % 97 === 0,
    );
    let all: string;
    let some: string;
    let height: number;

    beforeAll(async () => {
      all = await createStream({ allAddresses: true });
      some = await createStream();
      expect((await s.call(`/streams/bitcoin/${some}/address`, { method: 'POST', json: { address: watched } })).status).toBe(200);
      core.chain.append(core.chain.relink(raw, core.chain.tip!.hash));
      height = core.chain.height;
      await caughtUp();
    });

    /** The stream's in-block webhook for the block. */
    const delivered = async (id: string) => {
      expect(await until(() => phases(id).inBlock.some((b) => b.block.height === String(height)), 30_000)).toBe(true);
      return phases(id).inBlock.find((b) => b.block.height === String(height))!;
    };

    it('an allAddresses stream gets every transaction, each txid, output value and address as bitcoinjs-lib decodes them', async () => {
      const body = await delivered(all);
      expect(body.block.nTx).toBe('3315');
      expect(txidsOf(body)).toEqual(reference.map((t) => t.txid));
      body.transactions.forEach((t: { vout: Array<{ value: number; scriptPubKeyAddress: string }> }, i: number) => {
        expect(t.vout.map((o) => ({ value: Math.round(o.value * 1e8), address: o.scriptPubKeyAddress }))).toEqual(reference[i]!.vout);
      });
      expect(body.transactions[0].isCoinbase).toBe(true);
      expect(body.transactions.filter((t: { isCoinbase: boolean }) => t.isCoinbase).length).toBe(1);
      await s.call(`/streams/bitcoin/${all}`, { method: 'DELETE' });
    });

    it('a stream of addresses taken from it gets exactly the transactions paying them, in block order; the block endpoint answers the same body', async () => {
      const body = await delivered(some);
      const w = new Set(watched);
      expect(txidsOf(body)).toEqual(reference.filter((t) => t.vout.some((o) => w.has(o.address))).map((t) => t.txid));
      const asked = await s.call(`/streams/bitcoin/mainnet/block/${height}`, { method: 'POST', json: { tag: 'btc', addresses: watched } });
      expect(asked.status).toBe(200);
      expect({ ...asked.body, streamId: some }).toEqual({ ...body, confirmed: asked.body.confirmed });
      expect((await s.call(`/streams/bitcoin/testnet/block/${height}`, { method: 'POST', json: {} })).body).toMatchObject({
        details: { field: 'chainId' },
      });
      expect((await s.call('/streams/bitcoin/mainnet/block/12x', { method: 'POST', json: {} })).body).toMatchObject({
        details: { field: 'blockNumber' },
      });
      expect((await s.call(`/streams/bitcoin/mainnet/block/${height + 1000}`, { method: 'POST', json: {} })).status).toBe(404);
      expect(
        (
          await s.call(`/streams/bitcoin/mainnet/block/${height}`, {
            method: 'POST',
            json: { addresses: ['tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx'] },
          })
        ).body,
      ).toMatchObject({ details: { field: 'addresses.0' } });
    });

    it('block-to-webhook sends a stream its body for a stored block again', async () => {
      const before = phases(some).inBlock.length + phases(some).confirmed.length;
      const res = await s.call(`/streams/bitcoin/mainnet/block-to-webhook/${height}/${some}`, { method: 'POST' });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ streamId: some, blockNumber: height, result: 'queued' });
      expect(await until(() => phases(some).inBlock.length + phases(some).confirmed.length === before + 1, 10_000)).toBe(true);
    });
  });
});
