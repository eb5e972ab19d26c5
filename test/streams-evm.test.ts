import { describe, expect, it, onTestFinished } from 'vitest';
import { parseEther, toEventSelector, type Hex } from 'viem';
import { DEV_ACCOUNTS, deploy, mined, publicClient, walletClient, write, type Deployed } from './contracts.js';
import { advance, startChainpost, until } from './helpers.js';
import { startSmtp } from './receiver.js';
import { A0, A1, CONFIRMATIONS, ERC20_ABI, Moralis, serverEnv, streamsSuite, withStreamsEnv } from './streams-harness.js';

/**
 * EVM streams end to end: contracts on a real anvil, the real server following
 * it, a real receiver. Each test makes its own streams and activity and checks
 * the exact items of the webhooks its streams receive, parsed with the SDK.
 */

const randomAddress = (i: number): string => `0x${(0xabc00000 + i).toString(16).padStart(8, '0')}${'5'.repeat(32)}`;

describe('EVM streams on anvil', () => {
  let token: Deployed;
  const {
    env,
    createStream,
    mine,
    of: webhooksOf,
    deliveries,
    nothingFor,
    checkParses,
  } = streamsSuite(async ({ anvil }) => {
    token = await deploy(anvil.url, 'TestToken', ['Test Token', 'TT', 6, 1_000_000_000n]);
  });
  const url = () => env().anvil.url;

  it('delivers a watched wallet native transactions, unconfirmed then confirmed, and nothing for others', async () => {
    const id = await createStream({ includeNativeTxs: true }, [A1]);
    const wallet = await walletClient(url());
    const hash = await wallet.sendTransaction({ to: A1, value: parseEther('1.5') });
    const receipt = await mined(url(), hash);
    const got = await deliveries(id, receipt.blockNumber);
    expect(got.map((w) => w.body.confirmed)).toEqual([false, true]);
    for (const w of got) {
      checkParses(w);
      expect(w.body.txs).toHaveLength(1);
      expect(w.body.txs[0]).toMatchObject({
        hash,
        fromAddress: A0,
        toAddress: A1,
        value: parseEther('1.5').toString(),
        receiptStatus: '1',
        transactionIndex: '0',
      });
      expect(w.body.logs).toEqual([]);
      expect(w.body.block.hash).toBe(receipt.blockHash);
    }
    // A transfer between two unwatched accounts: nothing for this stream (then one to the watched wallet, which comes).
    const other = await (await walletClient(url(), DEV_ACCOUNTS[2])).sendTransaction({ to: A0, value: 1n });
    const r2 = await mined(url(), other);
    const r3 = await mined(url(), await wallet.sendTransaction({ to: A1, value: 2n }));
    await nothingFor(id, r2.blockNumber, r3.blockNumber);
  });

  it('decodes ERC-20 transfers and approvals of a watched wallet, with token metadata', async () => {
    const id = await createStream(
      { includeContractLogs: true, abi: ERC20_ABI, topic0: ['Transfer(address,address,uint256)', 'Approval(address,address,uint256)'] },
      [A1],
    );
    const r1 = await write(url(), { ...token, functionName: 'transfer', args: [A1, 2_500_000n] });
    const got = await deliveries(id, r1.blockNumber);
    for (const w of got) {
      checkParses(w);
      expect(w.body.logs).toHaveLength(1);
      expect(w.body.logs[0]).toMatchObject({
        address: token.address.toLowerCase(),
        topic0: toEventSelector('Transfer(address,address,uint256)'),
        topic3: null,
      });
      expect(w.body.erc20Transfers).toEqual([
        {
          transactionHash: r1.transactionHash,
          logIndex: '0',
          contract: token.address.toLowerCase(),
          from: A0,
          to: A1,
          value: '2500000',
          tokenName: 'Test Token',
          tokenSymbol: 'TT',
          tokenDecimals: '6',
          valueWithDecimals: '2.5',
          possibleSpam: false,
        },
      ]);
      const decoded = Moralis.Streams.parsedLogs(w.body);
      expect(decoded[0].from.toLowerCase()).toBe(A0);
      expect(decoded[0].value.toString()).toBe('2500000');
    }
  });

  it('after a reorg delivers only canonical blocks as confirmed; the dropped block got its unconfirmed webhook only', async () => {
    const id = await createStream({ includeNativeTxs: true }, [A1]);
    const hash = await (await walletClient(url())).sendTransaction({ to: A1, value: 11n });
    const old = await mined(url(), hash);
    const of = (n: bigint) => webhooksOf(id, n);
    expect(await until(() => of(old.blockNumber).length === 1, 10_000)).toBe(true);
    // Replace that block with one holding another transaction to the watched wallet.
    await publicClient(url()).request({ method: 'anvil_reorg' as never, params: [1, [[{ from: A0, to: A1, value: '0x7' }, 0]]] as never });
    const replaced = await publicClient(url()).getBlock({ blockNumber: old.blockNumber });
    expect(replaced.hash).not.toBe(old.blockHash);
    await mine(CONFIRMATIONS + 1);
    expect(await until(() => of(old.blockNumber).length === 3, 10_000)).toBe(true);
    const got = of(old.blockNumber);
    const summary = got.map((w) => [w.body.block.hash, w.body.confirmed, w.body.txs.map((t: { value: string }) => t.value)]);
    expect(summary).toEqual([
      [old.blockHash, false, ['11']],
      [replaced.hash, false, ['7']],
      [replaced.hash, true, ['7']],
    ]);
  });

  it('takes 100,000 addresses added in ten requests (10,000 each, the most one call takes) into account from the next block', async () => {
    const { s } = env();
    const id = await createStream({ includeNativeTxs: true });
    for (let part = 0; part < 10; part++) {
      const addresses = Array.from({ length: 10_000 }, (_, i) => randomAddress(part * 10_000 + i));
      const res = await s.call(`/streams/evm/${id}/address`, { method: 'POST', json: { address: addresses } });
      expect(res.status).toBe(200);
    }
    expect((await s.call(`/streams/evm/${id}`)).body.amountOfAddresses).toBe(100_000);
    const last = randomAddress(99_999) as Hex;
    const hash = await (await walletClient(url())).sendTransaction({ to: last, value: 3n });
    const r = await mined(url(), hash);
    const got = await deliveries(id, r.blockNumber);
    expect(got.map((w) => w.body.txs.map((t: { toAddress: string }) => t.toAddress))).toEqual([[last], [last]]);
  });

  it('resumes after a restart: blocks mined while it was down are delivered once each, confirmed ones included', async () => {
    const e = env();
    const id = await createStream({ includeNativeTxs: true }, [A1]);
    const wallet = await walletClient(url());
    const send = async (value: bigint) => (await mined(url(), await wallet.sendTransaction({ to: A1, value }))).blockNumber;
    const before = await send(21n);
    const of = (n: bigint) => webhooksOf(id, n).map((w) => w.body.confirmed);
    expect(await until(() => of(before).length === 1, 10_000)).toBe(true);
    await e.s.stop('SIGTERM');
    const during = await send(22n);
    e.s = await startChainpost(serverEnv(e.anvil), e.s.dir);
    // A block after the restart: the stream's queue is sent in order, so any webhook sent twice came before this one's.
    const after = await send(23n);
    await deliveries(id, after);
    expect([of(before), of(during), of(after)]).toEqual([
      [false, true],
      [false, true],
      [false, true],
    ]);
  });
});

describe('EVM stream deliveries failing on real blocks', () => {
  it('puts the stream in error on the 31st failed delivery in a row and e-mails the alert through SMTP', async () => {
    const smtp = await startSmtp();
    onTestFinished(() => smtp.close());
    await withStreamsEnv(
      () => ({ CHAINPOST_SMTP_URL: smtp.url, CHAINPOST_ALERT_EMAIL: 'ops@example.org' }),
      async ({ anvil, s, rx }, { createStream, mine }) => {
        rx.state.answer = () => 500;
        const id = await createStream({ includeNativeTxs: true }, [A1]);
        const wallet = await walletClient(anvil.url);
        // 16 blocks with a watched transaction, each delivered unconfirmed and confirmed: 32 first attempts.
        for (let i = 0; i < 16; i++) await mined(anvil.url, await wallet.sendTransaction({ to: A1, value: BigInt(i + 1) }));
        await mine(CONFIRMATIONS + 1);
        expect(await until(async () => (await s.call(`/streams/evm/${id}`)).body.status === 'error', 15_000)).toBe(true);
        const stream = (await s.call(`/streams/evm/${id}`)).body;
        expect(stream.statusMessage).toMatch(/success rate of .* fell to 69%, below 70%/);
        // Exactly 31 attempts went out; what came after waits in history.
        expect(rx.webhooks().length).toBe(31);
        expect(await until(() => smtp.mails.length === 1, 5_000)).toBe(true);
        expect(smtp.mails[0]!.to).toEqual(['ops@example.org']);
        expect(smtp.mails[0]!.data).toMatch(new RegExp(`stream ${id} is in error`));
      },
    );
  });
});

describe('EVM streams and the removal dates', () => {
  const STOPPED = 'the chain no longer produces blocks: stopped following it';
  /** The server's JSON log lines. */
  const logLines = (output: string): Array<Record<string, unknown>> =>
    output
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l));

  it('a stream on moonbeam (0x504) is delivered until 2026-08-01 and emits nothing after', async () => {
    // 0x539 follows the same node: its stream's webhooks show the server took in the blocks 0x504 no longer follows.
    const more = (anvil: { url: string }) => ({
      CHAINPOST_CHAINS: `0x504=${anvil.url},0x539=${anvil.url}`,
      CHAINPOST_CONFIRMATIONS: `0x504=0,0x539=${CONFIRMATIONS}`,
      CHAINPOST_TEST_CLOCK: '1',
      CHAINPOST_NOW: '2026-07-31T23:59:00Z',
    });
    await withStreamsEnv(more, async ({ anvil, s, rx }, { createStream, deliveries }) => {
      const moonbeam = await createStream({ chainIds: ['0x504'], includeNativeTxs: true }, [A1]);
      const wallet = await walletClient(anvil.url);
      const send = async (value: bigint) => (await mined(anvil.url, await wallet.sendTransaction({ to: A1, value }))).blockNumber;
      const before = await send(1n);
      expect((await deliveries(moonbeam, before)).map((w) => [w.body.chainId, w.body.confirmed])).toEqual([
        ['0x504', false],
        ['0x504', true],
      ]);

      await advance(s, 120);
      expect(
        await until(() => logLines(s.output()).some((l) => l['msg'] === STOPPED && l['chain'] === '0x504'), 10_000),
        'the follower of 0x504 says it stopped',
      ).toBe(true);
      const anchor = await createStream({ includeNativeTxs: true }, [A1]);
      const after = await send(2n);
      await deliveries(anchor, after);
      expect(
        rx
          .webhooks()
          .filter((w) => w.body.streamId === moonbeam || w.body.chainId === '0x504')
          .map((w) => [w.body.streamId, w.body.block.number]),
      ).toEqual([
        [moonbeam, String(before)],
        [moonbeam, String(before)],
      ]);
      const head = (await s.call('/health')).body.chains.find((c: { chain: string }) => c.chain === '0x504').head;
      expect(head).toBeLessThan(Number(after));
    });
  });
});
