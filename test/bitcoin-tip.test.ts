import { afterEach, describe, expect, it } from 'vitest';
import { coinsOf, mineBlock, owner, payTo, spend } from './kit/bitcoin-core/build.js';
import { PRUNED_HEIGHT, prunedChain } from './kit/bitcoin-core/fixtures.js';
import { startBitcoinCore, type BitcoinCore } from './kit/bitcoin-core/server.js';
import { startChainpost, stopAndClean, tempDir, until, type Running } from './helpers.js';
import { startReceiver, type Received } from './receiver.js';

/**
 * Where a Bitcoin chain new to the store starts, against a node as mainnet has one: the stand-in as a pruned
 * Bitcoin Core whose tip is above block 880,000 (headers for every height, no block data below the prune
 * height). The server starts at the node's best block and delivers what comes after; with
 * CHAINPOST_START_BLOCKS=bitcoin=<height> it first backfills from there, as history: stored and answered by
 * /v1, no webhook.
 */
type Receiver = Awaited<ReturnType<typeof startReceiver>>;

let core: BitcoinCore | undefined;
let rx: Receiver | undefined;
let s: Running | undefined;
afterEach(async () => {
  await stopAndClean(s);
  await rx?.close();
  await core?.close();
  [s, rx, core] = [undefined, undefined, undefined];
});

const env = (more: Record<string, string> = {}): Record<string, string> => ({
  CHAINPOST_BITCOIN_RPC: core!.url,
  CHAINPOST_BITCOIN_POLL_MS: '50',
  CHAINPOST_RATE_LIMIT: '0',
  ...more,
});
const bitcoinHealth = async (): Promise<Record<string, any> | undefined> =>
  ((await s!.call('/health')).body.chains as Array<Record<string, any>>).find((c) => c['chain'] === 'bitcoin');
const caughtUp = async (): Promise<void> => {
  expect(await until(async () => (await bitcoinHealth())?.['head'] === core!.chain.height, 20_000)).toBe(true);
};
async function watching(address: string): Promise<string> {
  const res = await s!.call('/streams/bitcoin', { method: 'PUT', json: { webhookUrl: rx!.url, tag: 'tip' } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  expect((await s!.call(`/streams/bitcoin/${res.body.id}/address`, { method: 'POST', json: { address } })).status).toBe(200);
  return res.body.id as string;
}
const bodiesOf = (id: string): Array<Received['body']> =>
  rx!
    .webhooks()
    .filter((r) => r.body.streamId === id)
    .map((r) => r.body);

describe('a Bitcoin chain new to the store, on a pruned node above block 880,000', () => {
  it("starts at the node's best block and delivers the mempool, in-block and confirmed phases of the blocks after it; /v1 answers the new block", async () => {
    core = await startBitcoinCore({ chain: prunedChain() });
    const tip = core.chain.height;
    expect(tip).toBeGreaterThan(880_000);
    rx = await startReceiver();
    s = await startChainpost(env());
    await caughtUp();
    expect(await bitcoinHealth()).toMatchObject({
      head: tip,
      oldest: tip,
      nodeHead: tip,
      upstream: 'ok',
      backfill: { from: tip, to: tip, done: true },
    });
    // Only the best block was read: none below it (the node has no data below its prune height anyway).
    expect(core.calls['getblock']).toBe(1);

    const payer = owner('p2wpkh', 'tip-payer');
    const payee = owner('p2tr', 'tip-payee');
    const id = await watching(payee.address);
    const [coin] = coinsOf(mineBlock(core.chain, [], payer.output).transactions![0]!, [payer]);
    await caughtUp();
    const tx = spend([coin!], [payTo(payee.address, 100_000_000)]);
    core.chain.addToMempool(tx.toHex());
    expect(await until(() => bodiesOf(id).length === 1, 10_000)).toBe(true);
    expect(bodiesOf(id)[0]).toMatchObject({
      confirmed: false,
      block: { hash: 'mempool', height: '0' },
      transactions: [{ txid: tx.getId() }],
    });

    const block = mineBlock(core.chain, [tx]);
    const height = core.chain.height;
    expect(await until(() => bodiesOf(id).length === 2, 10_000)).toBe(true);
    expect(bodiesOf(id)[1]).toMatchObject({
      confirmed: false,
      block: { hash: block.getId(), height: String(height) },
      transactions: [{ txid: tx.getId(), blockNumber: height }],
    });
    mineBlock(core.chain);
    mineBlock(core.chain);
    expect(await until(() => bodiesOf(id).length === 3, 10_000)).toBe(true);
    expect(bodiesOf(id)[2]).toMatchObject({ confirmed: true, block: { hash: block.getId(), height: String(height) } });

    const v1 = await s.call(`/v1/chains/bitcoin/blocks/${height}`);
    expect(v1.status, JSON.stringify(v1.body)).toBe(200);
    expect(v1.body).toMatchObject({
      chainFamily: 'Bitcoin',
      hash: block.getId(),
      height,
      previousBlockHash: core.chain.at(height - 1)!.hash,
      txCount: 2,
    });
    expect(v1.body.txs.map((t: { txid: string }) => t.txid)).toEqual([block.transactions![0]!.getId(), tx.getId()]);
    // Below where it started: not held, and said so.
    const before = await s.call(`/v1/chains/bitcoin/blocks/${tip - 1}`);
    expect(before.status).toBe(404);
    expect(before.body.message).toContain(`before the first block it followed, ${tip}`);
  });

  it('with CHAINPOST_START_BLOCKS=bitcoin=<tip − 3>, backfills those blocks as history: /v1 answers them and a balance paid in one, no webhook is sent for them', async () => {
    const chain = prunedChain();
    const payer = owner('p2wpkh', 'backfill-payer');
    const alice = owner('p2pkh', 'backfill-alice');
    const [coin] = coinsOf(mineBlock(chain, [], payer.output).transactions![0]!, [payer]);
    const paid = spend([coin!], [payTo(alice.address, 250_000_000), payTo(payer.address, 60_000_000)]);
    mineBlock(chain, [paid]);
    mineBlock(chain);
    mineBlock(chain);
    const tip = chain.height;
    expect(tip).toBe(PRUNED_HEIGHT + 23);
    core = await startBitcoinCore({ chain });
    rx = await startReceiver();
    // A stream watching Alice exists before the server follows Bitcoin (made while it had no node).
    const dir = tempDir();
    s = await startChainpost({ CHAINPOST_RATE_LIMIT: '0' }, dir);
    const id = await watching(alice.address);
    await s.stop('SIGTERM');
    s = await startChainpost(env({ CHAINPOST_START_BLOCKS: `bitcoin=${tip - 3}` }), dir);
    await caughtUp();
    expect(await bitcoinHealth()).toMatchObject({ head: tip, oldest: tip - 3, backfill: { from: tip - 3, to: tip, done: true } });

    const v1 = await s.call(`/v1/chains/bitcoin/blocks/${tip - 2}`);
    expect(v1.status, JSON.stringify(v1.body)).toBe(200);
    expect(v1.body).toMatchObject({ hash: chain.at(tip - 2)!.hash, height: tip - 2, txCount: 2 });
    expect(v1.body.txs[1]).toMatchObject({ txid: paid.getId(), blockHeight: tip - 2 });
    const balance = await s.call(`/v1/wallets/${alice.address}/tokens?chains=bitcoin`);
    expect(balance.status, JSON.stringify(balance.body)).toBe(200);
    expect(balance.body.result.map((r: { balanceRaw: string }) => r.balanceRaw)).toEqual(['250000000']);
    expect((await s.call(`/v1/chains/bitcoin/blocks/${tip - 4}`)).status).toBe(404);

    // A block after the backfill is delivered: the stream works, and it had nothing for the history.
    mineBlock(chain, [spend(coinsOf(paid, [payer]), [payTo(alice.address, 50_000_000)])]);
    expect(await until(() => bodiesOf(id).length > 0, 10_000)).toBe(true);
    await caughtUp();
    expect(bodiesOf(id).map((b) => b.block.height)).toEqual([String(tip + 1)]);
  });
});
