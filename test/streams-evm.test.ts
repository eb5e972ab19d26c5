import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAbi, parseEther, toEventSelector, type Hex } from 'viem';
import { startAnvil, type Anvil } from '../http/clients/anvil.js';
import { DEV_ACCOUNTS, deploy, publicClient, walletClient, write, type Deployed } from './contracts.js';
import { advance, startChainpost, stopAndClean, tempDir, until, type Running } from './helpers.js';
import { startReceiver, startSmtp } from './receiver.js';
import { A0, A1, CONFIRMATIONS, serverEnv, streamsHarness } from './streams-harness.js';

/**
 * EVM streams end to end: contracts on a real anvil, the real server following
 * it, a real receiver. Each test makes its own streams and activity and checks
 * the exact items of the webhooks its streams receive, parsed with the SDK.
 */

const TRANSFER_ABI = parseAbi(['event Transfer(address indexed from, address indexed to, uint256 value)', 'event Approval(address indexed owner, address indexed spender, uint256 value)']);

const randomAddress = (i: number): string => `0x${(0xabc00000 + i).toString(16).padStart(8, '0')}${'5'.repeat(32)}`;

describe('EVM streams on anvil', () => {
  let anvil: Anvil;
  let s: Running;
  let rx: Awaited<ReturnType<typeof startReceiver>>;
  let secret: string;
  let token: Deployed;

  beforeAll(async () => {
    anvil = await startAnvil({ chainId: 1337 });
    rx = await startReceiver();
    s = await startChainpost(serverEnv(anvil));
    secret = (await s.call('/settings')).body.secretKey;
    token = await deploy(anvil.url, 'TestToken', ['Test Token', 'TT', 6, 1_000_000_000n]);
  }, 60_000);
  afterAll(async () => {
    if (process.env['E2E_LOG']) console.log(JSON.stringify((await s.call('/history/logs')).body).slice(0, 3000), JSON.stringify((await s.call('/history')).body).slice(0, 3000));
    if (process.env['E2E_LOG']) console.log(s.output().split('\n').filter((l) => !l.includes('"request"')).slice(-60).join('\n'));
    await stopAndClean(s);
    await rx.close();
    await anvil?.stop();
  });

  const { createStream, mine, of: webhooksOf, deliveries, nothingFor, checkParses } = streamsHarness(() => ({ anvil, s, rx, secret }));

  it('delivers a watched wallet native transactions, unconfirmed then confirmed, and nothing for others', async () => {
    const id = await createStream({ includeNativeTxs: true }, [A1]);
    const wallet = await walletClient(anvil.url);
    const hash = await wallet.sendTransaction({ to: A1, value: parseEther('1.5') });
    const receipt = await publicClient(anvil.url).waitForTransactionReceipt({ hash });
    const got = await deliveries(id, receipt.blockNumber);
    expect(got.map((w) => w.body.confirmed)).toEqual([false, true]);
    for (const w of got) {
      checkParses(w);
      expect(w.body.txs).toHaveLength(1);
      expect(w.body.txs[0]).toMatchObject({ hash, fromAddress: A0, toAddress: A1, value: parseEther('1.5').toString(), receiptStatus: '1', transactionIndex: '0' });
      expect(w.body.logs).toEqual([]);
      expect(w.body.block.hash).toBe(receipt.blockHash);
    }
    // A transfer between two unwatched accounts: nothing for this stream.
    const other = await (await walletClient(anvil.url, DEV_ACCOUNTS[2])).sendTransaction({ to: A0, value: 1n });
    const r2 = await publicClient(anvil.url).waitForTransactionReceipt({ hash: other });
    await nothingFor(id, r2.blockNumber);
  });

  it('decodes ERC-20 transfers and approvals of a watched wallet, with token metadata', async () => {
    const id = await createStream({ includeContractLogs: true, abi: TRANSFER_ABI, topic0: ['Transfer(address,address,uint256)', 'Approval(address,address,uint256)'] }, [A1]);
    const r1 = await write(anvil.url, { ...token, functionName: 'transfer', args: [A1, 2_500_000n] });
    const got = await deliveries(id, r1.blockNumber);
    for (const w of got) {
      checkParses(w);
      expect(w.body.logs).toHaveLength(1);
      expect(w.body.logs[0]).toMatchObject({ address: token.address.toLowerCase(), topic0: toEventSelector('Transfer(address,address,uint256)'), topic3: null });
      expect(w.body.erc20Transfers).toEqual([
        { transactionHash: r1.transactionHash, logIndex: '0', contract: token.address.toLowerCase(), from: A0, to: A1, value: '2500000', tokenName: 'Test Token', tokenSymbol: 'TT', tokenDecimals: '6', valueWithDecimals: '2.5', possibleSpam: false },
      ]);
      const Moralis = createRequire(import.meta.url)('moralis').default;
      const decoded = Moralis.Streams.parsedLogs(w.body);
      expect(decoded[0].from.toLowerCase()).toBe(A0);
      expect(decoded[0].value.toString()).toBe('2500000');
    }
  });

  it('after a reorg delivers only canonical blocks as confirmed; the dropped block got its unconfirmed webhook only', async () => {
    const id = await createStream({ includeNativeTxs: true }, [A1]);
    const hash = await (await walletClient(anvil.url)).sendTransaction({ to: A1, value: 11n });
    const old = await publicClient(anvil.url).waitForTransactionReceipt({ hash });
    const of = (n: bigint) => webhooksOf(id, n);
    expect(await until(() => of(old.blockNumber).length === 1, 10_000)).toBe(true);
    // Replace that block with one holding another transaction to the watched wallet.
    await publicClient(anvil.url).request({ method: 'anvil_reorg' as never, params: [1, [[{ from: A0, to: A1, value: '0x7' }, 0]]] as never });
    const replaced = await publicClient(anvil.url).getBlock({ blockNumber: old.blockNumber });
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
    const id = await createStream({ includeNativeTxs: true });
    for (let part = 0; part < 10; part++) {
      const addresses = Array.from({ length: 10_000 }, (_, i) => randomAddress(part * 10_000 + i));
      const res = await s.call(`/streams/evm/${id}/address`, { method: 'POST', json: { address: addresses } });
      expect(res.status).toBe(200);
    }
    expect((await s.call(`/streams/evm/${id}`)).body.amountOfAddresses).toBe(100_000);
    const last = randomAddress(99_999) as Hex;
    const hash = await (await walletClient(anvil.url)).sendTransaction({ to: last, value: 3n });
    const r = await publicClient(anvil.url).waitForTransactionReceipt({ hash });
    const got = await deliveries(id, r.blockNumber);
    expect(got.map((w) => w.body.txs.map((t: { toAddress: string }) => t.toAddress))).toEqual([[last], [last]]);
  });

  it('resumes after a restart: blocks mined while it was down are delivered once each, confirmed ones included', async () => {
    const id = await createStream({ includeNativeTxs: true }, [A1]);
    const wallet = await walletClient(anvil.url);
    const before = await publicClient(anvil.url).waitForTransactionReceipt({ hash: await wallet.sendTransaction({ to: A1, value: 21n }) });
    const of = (n: bigint) => webhooksOf(id, n);
    expect(await until(() => of(before.blockNumber).length === 1, 10_000)).toBe(true);
    await s.stop('SIGTERM');
    const during = await publicClient(anvil.url).waitForTransactionReceipt({ hash: await wallet.sendTransaction({ to: A1, value: 22n }) });
    s = await startChainpost(serverEnv(anvil), s.dir);
    const got = await deliveries(id, during.blockNumber);
    expect(got.map((w) => w.body.confirmed)).toEqual([false, true]);
    expect(await until(() => of(before.blockNumber).length === 2, 10_000)).toBe(true);
    // Settle, then check nothing came twice.
    await mine(1);
    await new Promise((r) => setTimeout(r, 300));
    expect(of(before.blockNumber).map((w) => w.body.confirmed)).toEqual([false, true]);
    expect(of(during.blockNumber).map((w) => w.body.confirmed)).toEqual([false, true]);
  });
});

describe('EVM stream deliveries failing on real blocks', () => {
  it('puts the stream in error on the 31st failed delivery in a row and e-mails the alert through SMTP', async () => {
    const anvil = await startAnvil({ chainId: 1337 });
    const rx = await startReceiver();
    const smtp = await startSmtp();
    const s = await startChainpost(serverEnv(anvil, { CHAINPOST_SMTP_URL: smtp.url, CHAINPOST_ALERT_EMAIL: 'ops@example.org' }), tempDir());
    try {
      rx.state.answer = () => 500;
      const res = await s.call('/streams/evm', { method: 'PUT', json: { webhookUrl: rx.url, description: 'failing', tag: 'failing', chainIds: ['0x539'], includeNativeTxs: true } });
      const id = res.body.id as string;
      await s.call(`/streams/evm/${id}/address`, { method: 'POST', json: { address: [A1] } });
      const wallet = await walletClient(anvil.url);
      // 16 blocks with a watched transaction, each delivered unconfirmed and confirmed: 32 first attempts.
      for (let i = 0; i < 16; i++) await publicClient(anvil.url).waitForTransactionReceipt({ hash: await wallet.sendTransaction({ to: A1, value: BigInt(i + 1) }) });
      await publicClient(anvil.url).request({ method: 'anvil_mine' as never, params: ['0x3'] as never });
      expect(await until(async () => (await s.call(`/streams/evm/${id}`)).body.status === 'error', 15_000)).toBe(true);
      const stream = (await s.call(`/streams/evm/${id}`)).body;
      expect(stream.statusMessage).toMatch(/success rate of .* fell to 69%, below 70%/);
      // Exactly 31 attempts went out; what came after waits in history.
      expect(rx.webhooks().length).toBe(31);
      expect(await until(() => smtp.mails.length === 1, 5_000)).toBe(true);
      expect(smtp.mails[0]!.to).toEqual(['ops@example.org']);
      expect(smtp.mails[0]!.data).toMatch(new RegExp(`stream ${id} is in error`));
    } finally {
      await stopAndClean(s);
      await smtp.close();
      await rx.close();
      await anvil.stop();
    }
  });
});

describe('EVM streams and the removal dates', () => {
  it('a stream on moonbeam (0x504) is delivered until 2026-08-01 and emits nothing after', async () => {
    const anvil = await startAnvil({ chainId: 1337 });
    const rx = await startReceiver();
    const s = await startChainpost({ ...serverEnv(anvil), CHAINPOST_CHAINS: `0x504=${anvil.url}`, CHAINPOST_CONFIRMATIONS: '0x504=0', CHAINPOST_TEST_CLOCK: '1', CHAINPOST_NOW: '2026-07-31T23:59:00Z' }, tempDir());
    try {
      const res = await s.call('/streams/evm', { method: 'PUT', json: { webhookUrl: rx.url, description: 'd', tag: 't', chainIds: ['0x504'], includeNativeTxs: true } });
      expect(res.status).toBe(200);
      await s.call(`/streams/evm/${res.body.id}/address`, { method: 'POST', json: { address: [A1] } });
      const wallet = await walletClient(anvil.url);
      const send = async (value: bigint) => (await publicClient(anvil.url).waitForTransactionReceipt({ hash: await wallet.sendTransaction({ to: A1, value }) })).blockNumber;
      const before = await send(1n);
      expect(await until(() => rx.webhooks().filter((w) => w.body.block.number === String(before)).length === 2, 10_000)).toBe(true);
      expect(rx.webhooks()[0]!.body.chainId).toBe('0x504');
      await advance(s, 120);
      const after = await send(2n);
      // Nothing for the block after the date; the server still follows nothing on that chain.
      await new Promise((r) => setTimeout(r, 500));
      expect(rx.webhooks().map((w) => w.body.block.number)).toEqual([String(before), String(before)]);
      expect(BigInt(after)).toBeGreaterThan(before);
    } finally {
      await stopAndClean(s);
      await rx.close();
      await anvil.stop();
    }
  });
});
