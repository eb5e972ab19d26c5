import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEther, type Hex } from 'viem';
import { TRIGGER_GAS } from '../engine/streams/limits.js';
import { startAnvil, type Anvil } from '../http/clients/anvil.js';
import { DEV_ACCOUNTS, deploy, mined, walletClient } from './contracts.js';
import { advance, apiCaller, cliInProcess, startChainpost, stopAndClean, until, type Running } from './helpers.js';
import { nodeProxy, type NodeProxy } from './node-proxy.js';
import { startReceiver } from './receiver.js';
import { A1, serverEnv } from './streams-harness.js';

/**
 * A tenant's stream whose triggers call a view function that never returns, beside another tenant's plain
 * stream on the same address: a real anvil behind a proxy that counts (and can hold) the calls reaching it, the
 * real server on the test clock, a receiver per tenant. The other tenant's webhooks must not wait for the
 * hostile stream's calls, and the hostile stream's webhook must come once its budget for the block ran out.
 */
const TRIGGERS = 20;
/** Ten minutes of service time: real time never ends it during the test, the test clock does. */
const BUDGET_MS = 600_000;
const SPIN_ABI = { type: 'function', name: 'spin', stateMutability: 'view', inputs: [], outputs: [{ name: 'n', type: 'uint256' }] };

/**
 * The rig of each describe: a real anvil behind a proxy that counts (and can hold) the calls reaching it, the real
 * server following it on the test clock with `env`, and a receiver per tenant; filled in beforeAll, closed in afterAll.
 */
function triggersRig(env: Record<string, string>) {
  const rig = {} as { anvil: Anvil; proxy: NodeProxy; s: Running; hostileRx: Receiver; otherRx: Receiver };
  beforeAll(async () => {
    rig.anvil = await startAnvil({ chainId: 1337 });
    rig.proxy = await nodeProxy(rig.anvil.url);
    rig.hostileRx = await startReceiver();
    rig.otherRx = await startReceiver();
    rig.s = await startChainpost(serverEnv(rig.anvil, { CHAINPOST_CHAINS: `0x539=${rig.proxy.url}`, CHAINPOST_TEST_CLOCK: '1', ...env }));
  }, 60_000);
  afterAll(async () => {
    await stopAndClean(rig.s);
    await rig.hostileRx?.close();
    await rig.otherRx?.close();
    await rig.proxy?.close();
    await rig.anvil?.stop();
  });
  return rig;
}
type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/** A tenant's stream on the devnet watching A1's native transactions, with `def`'s fields besides: its id. */
async function createStream(call: Running['call'], webhookUrl: string, def: Record<string, unknown>): Promise<string> {
  const res = await call('/streams/evm', { method: 'PUT', json: { webhookUrl, chainIds: ['0x539'], includeNativeTxs: true, ...def } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  expect((await call(`/streams/evm/${res.body.id}/address`, { method: 'POST', json: { address: A1 } })).status).toBe(200);
  return res.body.id as string;
}

/** A transfer to A1, mined: its hash and block number. */
async function transfer(anvil: Anvil): Promise<{ hash: Hex; block: string }> {
  const hash = await (await walletClient(anvil.url, DEV_ACCOUNTS[0])).sendTransaction({ to: A1, value: parseEther('0.01') });
  return { hash, block: String((await mined(anvil.url, hash)).blockNumber) };
}

/** The eth_calls to `to` that reached the node (their params). */
const callsTo = (proxy: NodeProxy, to: string): unknown[][] =>
  proxy.params('eth_call').filter(([call]) => (call as { to?: string }).to?.toLowerCase() === to.toLowerCase());

describe('a stream whose triggers call a function that never returns', () => {
  const rig = triggersRig({ CHAINPOST_TRIGGER_BUDGET_MS: String(BUDGET_MS) });

  const send = (): Promise<{ hash: Hex; block: string }> => transfer(rig.anvil);
  const of = (rx: Receiver, id: string, block: string) =>
    rx.webhooks().filter((w) => w.body.streamId === id && w.body.block.number === block);

  it("holds no other tenant's webhooks, of that block or the next; its own leaves once its budget ran out, with the calls not answered marked over budget", async () => {
    const spin = await deploy(rig.anvil.url, 'TestSpin');
    const triggers = Array.from({ length: TRIGGERS }, () => ({ type: 'tx', contractAddress: spin.address, functionAbi: SPIN_ABI }));
    const hostile = await createStream(rig.s.call, rig.hostileRx.url, { triggers });
    const otherKey = (await cliInProcess(['keys', 'create', '--name', 'other-tenant'], rig.s.dir)).stdout.trim().split('\n').at(-1)!;
    const plain = await createStream(apiCaller(rig.s.url, otherKey), rig.otherRx.url, {});
    const spins = (): unknown[][] => callsTo(rig.proxy, spin.address);

    // The first two calls reach anvil (each spins until its gas is gone); the third is held at the proxy: under way.
    const release = rig.proxy.hold('eth_call', 2);
    try {
      const first = await send();
      expect(await until(() => spins().length === 3, 10_000), 'the hostile stream on its third call').toBe(true);
      expect(await until(() => of(rig.otherRx, plain, first.block).length >= 1, 10_000), "the other tenant's webhook of the block").toBe(
        true,
      );
      expect(spins().length).toBe(3);
      expect(of(rig.hostileRx, hostile, first.block)).toEqual([]);

      // The next block goes by it too.
      const second = await send();
      expect(
        await until(() => of(rig.otherRx, plain, second.block).length >= 1, 10_000),
        "the other tenant's webhook of the next block",
      ).toBe(true);
      expect(spins().length).toBe(3);
      expect(rig.hostileRx.webhooks()).toEqual([]);

      // The budget runs out on the service clock: the webhook leaves with what was answered.
      await advance(rig.s, BUDGET_MS / 1000);
      expect(
        await until(() => of(rig.hostileRx, hostile, first.block).length >= 1, 10_000),
        "the hostile stream's webhook of the block",
      ).toBe(true);
      const [hook] = of(rig.hostileRx, hostile, first.block);
      expect(hook!.body.txs.map((t: { hash: string }) => t.hash)).toEqual([first.hash]);
      const over = {
        name: 'n',
        value: null,
        error: `over budget: not answered within the ${BUDGET_MS} ms this stream's trigger calls have per block (CHAINPOST_TRIGGER_BUDGET_MS)`,
      };
      // The two answered ran out of gas (a revert: null), the one under way and the rest are over budget.
      expect(hook!.body.txs[0].triggers).toEqual([
        { name: 'n', value: null },
        { name: 'n', value: null },
        ...Array.from({ length: TRIGGERS - 2 }, () => over),
      ]);
      // Each call was given CHAINPOST_TRIGGER_GAS, not the chain's block gas limit (the next block's first call may be held by now).
      expect(new Set(spins().map(([call]) => (call as { gas?: string }).gas))).toEqual(new Set([`0x${TRIGGER_GAS.toString(16)}`]));
    } finally {
      release();
    }
  });
});

/**
 * The same hostile stream with a small share of the node's time (CHAINPOST_TRIGGER_SHARE_MS): once its calls have
 * taken what the share holds, none reaches the node until the share is refilled on the service clock, whatever
 * the per-block budget would let a block have.
 */
describe("a tenant whose trigger calls took its share of the node's time", () => {
  const SHARE_BUDGET_MS = 10_000;
  /** A tenth of the node's time: a call that ran 100 s is paid back in 900 s. */
  const SHARE_MS = 100;
  // No block is confirmed during the test: each block runs its calls once, for its unconfirmed webhook.
  const rig = triggersRig({
    CHAINPOST_TRIGGER_BUDGET_MS: String(SHARE_BUDGET_MS),
    CHAINPOST_TRIGGER_SHARE_MS: String(SHARE_MS),
    CHAINPOST_CONFIRMATIONS: '0x539=1000',
  });

  it('starts no call until the share is refilled: the next block gets its webhook with every call over budget, a block after the refill gets its calls answered', async () => {
    const spin = await deploy(rig.anvil.url, 'TestSpin');
    await createStream(rig.s.call, rig.hostileRx.url, {
      triggers: [0, 1, 2].map(() => ({ type: 'tx', contractAddress: spin.address, functionAbi: SPIN_ABI })),
    });
    const spins = (): number => callsTo(rig.proxy, spin.address).length;
    const send = async (): Promise<string> => (await transfer(rig.anvil)).block;
    const hookOf = (block: string) => rig.hostileRx.webhooks().find((w) => w.body.block.number === block && w.body.confirmed === false);
    const triggersOf = async (block: string): Promise<unknown[]> => {
      expect(await until(() => hookOf(block) !== undefined, 10_000), `the webhook of block ${block}`).toBe(true);
      return hookOf(block)!.body.txs[0].triggers as unknown[];
    };
    const over = {
      name: 'n',
      value: null,
      error: `over budget: not answered within the ${SHARE_BUDGET_MS} ms this stream's trigger calls have per block (CHAINPOST_TRIGGER_BUDGET_MS)`,
    };
    const answered = { name: 'n', value: null };

    // The first call is held at the node for 100 s of service time: the block's budget runs out meanwhile.
    const release = rig.proxy.hold('eth_call');
    let first: string;
    try {
      first = await send();
      expect(await until(() => spins() === 1, 10_000), 'the first call under way').toBe(true);
      await advance(rig.s, 100);
      expect(await triggersOf(first)).toEqual([over, over, over]);
    } finally {
      release();
    }
    // That call ran some 100 s of a 10 s burst refilled at a tenth: nothing more starts for about 900 s.
    const second = await send();
    // Its calls wait for the share until the block's budget ran out: the clock moves a second at a time until the webhook came.
    expect(
      await until(async () => (await advance(rig.s, 1)) !== '' && hookOf(second) !== undefined, 30_000, 50),
      'the webhook of the next block',
    ).toBe(true);
    expect(await triggersOf(second)).toEqual([over, over, over]);
    expect(spins()).toBe(1);

    await advance(rig.s, 900);
    const third = await send();
    expect(await triggersOf(third)).toEqual([answered, answered, answered]);
    expect(spins()).toBe(4);
  });
});

/**
 * Many hostile streams at once, each with a call hanging at the node: a node connection stays taken while its call
 * runs, and the follower must still read the next blocks.
 */
describe('streams whose trigger calls all hang at the node', () => {
  const STREAMS = 8;
  const rig = triggersRig({ CHAINPOST_TRIGGER_BUDGET_MS: String(BUDGET_MS), CHAINPOST_CONFIRMATIONS: '0x539=1000' });

  it("take none of the follower's connections: another tenant's webhooks of the next blocks come while every call hangs", async () => {
    const spin = await deploy(rig.anvil.url, 'TestSpin');
    for (let i = 0; i < STREAMS; i++)
      await createStream(rig.s.call, rig.hostileRx.url, {
        triggers: [{ type: 'tx', contractAddress: spin.address, functionAbi: SPIN_ABI }],
      });
    const otherKey = (await cliInProcess(['keys', 'create', '--name', 'other-tenant'], rig.s.dir)).stdout.trim().split('\n').at(-1)!;
    const plain = await createStream(apiCaller(rig.s.url, otherKey), rig.otherRx.url, {});
    const spins = (): number => callsTo(rig.proxy, spin.address).length;
    const send = async (): Promise<string> => (await transfer(rig.anvil)).block;
    const otherOf = (block: string) => rig.otherRx.webhooks().filter((w) => w.body.streamId === plain && w.body.block.number === block);

    const release = rig.proxy.hold('eth_call');
    try {
      await send();
      expect(await until(() => spins() === STREAMS, 10_000), 'a call of every hostile stream hanging at the node').toBe(true);
      for (const block of [await send(), await send()])
        expect(await until(() => otherOf(block).length >= 1, 10_000), `the other tenant's webhook of block ${block}`).toBe(true);
      expect(spins()).toBe(STREAMS);
      expect(rig.hostileRx.webhooks()).toEqual([]);
    } finally {
      release();
    }
  });
});
