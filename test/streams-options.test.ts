import { describe, expect, it } from 'vitest';
import { formatUnits, parseAbi, parseEther, toEventSelector, type Hex, type TransactionReceipt } from 'viem';
import { DEV_ACCOUNTS, deploy, mined, walletClient, write, type Deployed, type Write } from './contracts.js';
import { A0, A1, A2, ERC20_ABI, Moralis, streamsSuite } from './streams-harness.js';
import { until } from './helpers.js';

/**
 * Every EVM stream option end to end: contracts on a real anvil, the real
 * server following it, a real receiver. Each test makes its own streams and
 * activity (several transactions in one block where a contrast needs it) and
 * checks the whole body of each webhook: every array the option does not
 * fill is empty, and what it fills is exactly the expected items. Every body
 * parses with the SDK, and its logs decode with Moralis.Streams.parsedLogs
 * when the stream has an abi.
 */

const [K0, K1, K2] = DEV_ACCOUNTS;
const ZERO = '0x0000000000000000000000000000000000000000';

const TRANSFER = 'Transfer(address,address,uint256)';
const APPROVAL = 'Approval(address,address,uint256)';
const APPROVAL_FOR_ALL = 'ApprovalForAll(address,address,bool)';
const ERC721_ABI = parseAbi([
  'event Transfer(address indexed from, address indexed to, uint256 indexed tokenId)',
  'event Approval(address indexed owner, address indexed approved, uint256 indexed tokenId)',
  'event ApprovalForAll(address indexed owner, address indexed operator, bool approved)',
]);
const ERC1155_ABI = parseAbi([
  'event TransferSingle(address indexed operator, address indexed from, address indexed to, uint256 id, uint256 value)',
  'event TransferBatch(address indexed operator, address indexed from, address indexed to, uint256[] ids, uint256[] values)',
  'event ApprovalForAll(address indexed account, address indexed operator, bool approved)',
]);
const FORWARDED_ABI = parseAbi(['event Forwarded(address indexed from, address indexed to, uint256 value)']);
const FORWARDED = 'Forwarded(address,address,uint256)';
const balanceOfNamed = (output: string) => ({
  type: 'function',
  name: 'balanceOf',
  stateMutability: 'view',
  inputs: [{ name: 'owner', type: 'address' }],
  outputs: [{ name: output, type: 'uint256' }],
});

/** What a body holds when nothing of a kind matched. */
const EMPTY = {
  logs: [],
  txs: [],
  txsInternal: [],
  erc20Transfers: [],
  erc20Approvals: [],
  nftTransfers: [],
  nftTokenApprovals: [],
  nftApprovals: { ERC721: [], ERC1155: [] },
  nativeBalances: [],
};

describe('EVM stream options on anvil', () => {
  let token: Deployed;
  let token2: Deployed;
  let spamToken: Deployed;
  let nft: Deployed;
  let multi: Deployed;
  let forwarder: Deployed;
  const { env, rpc, createStream, unconfirmed, deliveries, nothingFor, checkParses } = streamsSuite(async ({ anvil }) => {
    token = await deploy(anvil.url, 'TestToken', ['Test Token', 'TT', 6, 1_000_000_000n]);
    token2 = await deploy(anvil.url, 'TestToken', ['Other Token', 'OT', 18, 10n ** 24n], K1);
    spamToken = await deploy(anvil.url, 'TestToken', ['Visit claim-now.com', 'CLAIM', 18, 10n ** 24n], K2);
    nft = await deploy(anvil.url, 'TestNFT', ['Test NFT', 'TNFT']);
    multi = await deploy(anvil.url, 'TestMulti');
    forwarder = await deploy(anvil.url, 'Forwarder');
    // Before any stream: the other accounts hold tokens to send.
    await write(anvil.url, { ...token, functionName: 'transfer', args: [A1, 100_000_000n] });
    await write(anvil.url, { ...token, functionName: 'transfer', args: [A2, 100_000_000n] });
    await write(anvil.url, { ...spamToken, functionName: 'transfer', args: [A0, 10n ** 21n], account: K2 });
  });
  const url = () => env().anvil.url;

  // ---- activity and expected items ---------------------------------------------

  /** Sends a contract write without waiting for it to be mined. */
  const submit = async (w: Write): Promise<Hex> =>
    (await walletClient(url(), w.account)).writeContract({
      address: w.address,
      abi: w.abi,
      functionName: w.functionName,
      args: w.args ?? [],
      value: w.value,
    });
  /** Sends the transactions (from different accounts) into one block; their receipts in block order. */
  const oneBlock = async (sends: Array<() => Promise<Hex>>): Promise<TransactionReceipt[]> => {
    await rpc().request({ method: 'evm_setAutomine' as never, params: [false] as never });
    const hashes: Hex[] = [];
    try {
      for (const send of sends) hashes.push(await send());
      await rpc().request({ method: 'evm_mine' as never, params: [] as never });
    } finally {
      await rpc().request({ method: 'evm_setAutomine' as never, params: [true] as never });
    }
    const receipts = await Promise.all(hashes.map((h) => mined(url(), h)));
    expect(new Set(receipts.map((r) => r.blockNumber)).size, 'one block').toBe(1);
    return receipts.sort((a, b) => a.transactionIndex - b.transactionIndex);
  };

  const hex = (v: Hex | null | undefined): string | null => (v == null ? null : BigInt(v).toString());
  /** The webhook log item of a receipt's log (the node's values). */
  const logItem = (r: TransactionReceipt, i = 0) => {
    const l = r.logs[i]!;
    return {
      logIndex: String(l.logIndex),
      transactionHash: r.transactionHash,
      address: l.address.toLowerCase(),
      data: l.data,
      topic0: l.topics[0] ?? null,
      topic1: l.topics[1] ?? null,
      topic2: l.topics[2] ?? null,
      topic3: l.topics[3] ?? null,
    };
  };
  /** The webhook tx item of a transaction, from the node's own JSON. */
  const txItem = async (hash: Hex) => {
    const r = (await rpc().request({ method: 'eth_getTransactionReceipt', params: [hash] })) as unknown as Record<string, Hex | null>;
    // Anvil may answer the transaction as pending just after its receipt (CI saw it: no index, the max fee as its
    // gas price): read until it answers the mined one.
    let t: Record<string, Hex | null> = {};
    const minedView = await until(async () => {
      t = (await rpc().request({ method: 'eth_getTransactionByHash', params: [hash] })) as unknown as Record<string, Hex | null>;
      return t['blockNumber'] !== null;
    }, 5_000);
    expect(minedView, `anvil answers ${hash} as mined`).toBe(true);
    return {
      hash,
      gas: hex(t['gas']),
      gasPrice: hex(t['gasPrice']),
      nonce: hex(t['nonce']),
      input: t['input'],
      transactionIndex: hex(t['transactionIndex']),
      fromAddress: t['from']!.toLowerCase(),
      toAddress: t['to']?.toLowerCase() ?? null,
      value: hex(t['value']),
      type: hex(t['type']),
      v: hex(t['v'] ?? t['yParity']),
      r: hex(t['r']),
      s: hex(t['s']),
      receiptCumulativeGasUsed: hex(r['cumulativeGasUsed']),
      receiptGasUsed: hex(r['gasUsed']),
      receiptContractAddress: null,
      receiptRoot: null,
      receiptStatus: '1',
    };
  };
  const erc20 = { tokenName: 'Test Token', tokenSymbol: 'TT', tokenDecimals: '6', possibleSpam: false };
  /** An erc20Transfers item of TestToken (6 decimals). */
  const tt = (r: TransactionReceipt, from: Hex, to: Hex, value: bigint, i = 0) => ({
    transactionHash: r.transactionHash,
    logIndex: String(r.logs[i]!.logIndex),
    contract: token.address.toLowerCase(),
    from,
    to,
    value: value.toString(),
    valueWithDecimals: formatUnits(value, 6),
    ...erc20,
  });
  const balanceOf = async (t: Deployed, who: Hex, blockNumber: bigint): Promise<string> =>
    String(await rpc().readContract({ address: t.address, abi: t.abi, functionName: 'balanceOf', args: [who], blockNumber }));

  /**
   * The stream's two webhooks of the block: unconfirmed then confirmed, signed,
   * parsed by the SDK, saying the same thing, each exactly `parts` over an
   * empty body. Answers the body and its logs as parsedLogs decodes them.
   */
  const expectHooks = async (
    id: string,
    blockNumber: bigint,
    abi: readonly unknown[] | null,
    parts: Record<string, unknown>,
  ): Promise<{ body: any; decoded: any[] }> => {
    const got = await deliveries(id, blockNumber);
    expect(got.map((w) => w.body.confirmed)).toEqual([false, true]);
    for (const w of got) checkParses(w);
    const block = await rpc().getBlock({ blockNumber });
    const expected = {
      confirmed: false,
      chainId: '0x539',
      abi: abi ?? [],
      retries: 0,
      streamId: id,
      tag: 'e2e',
      block: { number: String(blockNumber), hash: block.hash, timestamp: String(block.timestamp) },
      ...EMPTY,
      ...parts,
    };
    expect(got[0]!.body).toEqual(expected);
    expect(got[1]!.body).toEqual({ ...expected, confirmed: true });
    const body = got[0]!.body;
    const decoded = abi !== null && body.logs.length > 0 ? Moralis.Streams.parsedLogs(body) : [];
    expect(decoded).toHaveLength(abi !== null ? body.logs.length : 0);
    return { body, decoded };
  };
  /** parsedLogs values made comparable: addresses lowercase, numbers as decimal strings. */
  const plain = (v: any): unknown => {
    if (Array.isArray(v)) return v.map(plain);
    if (typeof v === 'string') return v.toLowerCase();
    if (v !== null && typeof v === 'object' && typeof v.toString === 'function' && ('_hex' in v || '_isBigNumber' in v))
      return v.toString();
    if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
    return v;
  };

  // ---- 1. ERC-721 ------------------------------------------------------------------

  it('ERC-721: mint, transfer to a watched wallet, approve and setApprovalForAll as nftTransfers and approvals; nothing for others', async () => {
    const id = await createStream({ includeContractLogs: true, abi: ERC721_ABI, topic0: [TRANSFER, APPROVAL, APPROVAL_FOR_ALL] }, [A1]);
    const contract = nft.address.toLowerCase();
    const meta = { contract, tokenContractType: 'ERC721', tokenName: 'Test NFT', tokenSymbol: 'TNFT', possibleSpam: false };

    const minted = await write(url(), { ...nft, functionName: 'mint', args: [A1, 7n] });
    const m = await expectHooks(id, minted.blockNumber, ERC721_ABI, {
      logs: [logItem(minted)],
      nftTransfers: [
        { transactionHash: minted.transactionHash, logIndex: '0', ...meta, operator: null, from: ZERO, to: A1, tokenId: '7', amount: '1' },
      ],
    });
    expect(m.body.logs[0].topic0).toBe(toEventSelector(TRANSFER));
    expect(plain(m.decoded)).toEqual([{ from: ZERO, to: A1, tokenId: '7' }]);

    // Neither sender, recipient nor emitter is watched: nothing (checked once the next block's transfer came).
    const other = await write(url(), { ...nft, functionName: 'mint', args: [A0, 1_000_000_000_000n] });
    const moved = await write(url(), { ...nft, functionName: 'transferFrom', args: [A0, A1, 1_000_000_000_000n] });
    const t = await expectHooks(id, moved.blockNumber, ERC721_ABI, {
      logs: [logItem(moved)],
      nftTransfers: [
        {
          transactionHash: moved.transactionHash,
          logIndex: '0',
          ...meta,
          operator: null,
          from: A0,
          to: A1,
          tokenId: '1000000000000',
          amount: '1',
        },
      ],
    });
    expect(plain(t.decoded)).toEqual([{ from: A0, to: A1, tokenId: '1000000000000' }]);
    await nothingFor(id, other.blockNumber, moved.blockNumber);

    const approved = await write(url(), { ...nft, functionName: 'approve', args: [A2, 7n], account: K1 });
    const a = await expectHooks(id, approved.blockNumber, ERC721_ABI, {
      logs: [logItem(approved)],
      nftTokenApprovals: [
        { transactionHash: approved.transactionHash, logIndex: '0', ...meta, account: A1, operator: A2, approvedAll: false, tokenId: '7' },
      ],
      nftApprovals: {
        ERC721: [{ transactionHash: approved.transactionHash, logIndex: '0', ...meta, owner: A1, approved: A2, tokenId: '7' }],
        ERC1155: [],
      },
    });
    expect(plain(a.decoded)).toEqual([{ owner: A1, approved: A2, tokenId: '7' }]);

    const all = await write(url(), { ...nft, functionName: 'setApprovalForAll', args: [A2, true], account: K1 });
    const f = await expectHooks(id, all.blockNumber, ERC721_ABI, {
      logs: [logItem(all)],
      nftTokenApprovals: [
        { transactionHash: all.transactionHash, logIndex: '0', ...meta, account: A1, operator: A2, approvedAll: true, tokenId: null },
      ],
    });
    expect(plain(f.decoded)).toEqual([{ owner: A1, operator: A2, approved: true }]);
  });

  // ---- 2. ERC-1155 -----------------------------------------------------------------

  it('ERC-1155: TransferSingle, TransferBatch (one item per id, same logIndex) and ApprovalForAll', async () => {
    const id = await createStream(
      {
        includeContractLogs: true,
        abi: ERC1155_ABI,
        topic0: [
          'TransferSingle(address,address,address,uint256,uint256)',
          'TransferBatch(address,address,address,uint256[],uint256[])',
          APPROVAL_FOR_ALL,
        ],
      },
      [A1],
    );
    // TestMulti has no name() or symbol().
    const meta = {
      contract: multi.address.toLowerCase(),
      tokenContractType: 'ERC1155',
      tokenName: '',
      tokenSymbol: '',
      possibleSpam: false,
    };

    const single = await write(url(), { ...multi, functionName: 'mint', args: [A1, 5n, 10n] });
    const one = await expectHooks(id, single.blockNumber, ERC1155_ABI, {
      logs: [logItem(single)],
      nftTransfers: [
        { transactionHash: single.transactionHash, logIndex: '0', ...meta, operator: A0, from: ZERO, to: A1, tokenId: '5', amount: '10' },
      ],
    });
    expect(plain(one.decoded)).toEqual([{ operator: A0, from: ZERO, to: A1, id: '5', value: '10' }]);

    const batch = await write(url(), { ...multi, functionName: 'mintBatch', args: [A1, [1n, 2n, 3n], [4n, 5n, 6n]], account: K2 });
    const item = (tokenId: string, amount: string) => ({
      transactionHash: batch.transactionHash,
      logIndex: '0',
      ...meta,
      operator: A2,
      from: ZERO,
      to: A1,
      tokenId,
      amount,
    });
    const b = await expectHooks(id, batch.blockNumber, ERC1155_ABI, {
      logs: [logItem(batch)],
      nftTransfers: [item('1', '4'), item('2', '5'), item('3', '6')],
    });
    expect(plain(b.decoded)).toEqual([{ operator: A2, from: ZERO, to: A1, ids: ['1', '2', '3'], values: ['4', '5', '6'] }]);

    const all = await write(url(), { ...multi, functionName: 'setApprovalForAll', args: [A2, true], account: K1 });
    const base = { transactionHash: all.transactionHash, logIndex: '0', ...meta, account: A1, operator: A2 };
    const f = await expectHooks(id, all.blockNumber, ERC1155_ABI, {
      logs: [logItem(all)],
      nftTokenApprovals: [{ ...base, approvedAll: true, tokenId: null }],
      nftApprovals: { ERC721: [], ERC1155: [{ ...base, approved: true }] },
    });
    expect(plain(f.decoded)).toEqual([{ account: A1, operator: A2, approved: true }]);
  });

  // ---- 3. includeInternalTxs -------------------------------------------------------

  it('includeInternalTxs: value moved by a contract to watched addresses as txsInternal; none without the option', async () => {
    const id = await createStream({ includeInternalTxs: true }, [A1, A2]);
    const without = await createStream({ includeNativeTxs: true, includeInternalTxs: false }, [A1, A2]);
    /** Each value-moving call of the transaction's trace, as txsInternal says it. */
    const internal = async (r: TransactionReceipt) => {
      const trace = (await rpc().request({
        method: 'debug_traceTransaction' as never,
        params: [r.transactionHash, { tracer: 'callTracer' }] as never,
      })) as { calls: Array<{ from: Hex; to: Hex; value: Hex; gas: Hex }> };
      return trace.calls.map((c) => ({
        from: c.from.toLowerCase(),
        to: c.to.toLowerCase(),
        value: BigInt(c.value).toString(),
        transactionHash: r.transactionHash,
        gas: BigInt(c.gas).toString(),
      }));
    };
    const fwd = forwarder.address.toLowerCase();

    const forward = await write(url(), { ...forwarder, functionName: 'forward', args: [A1], value: 1000n });
    const calls = await internal(forward);
    expect(calls).toMatchObject([{ from: fwd, to: A1, value: '1000' }]);
    await expectHooks(id, forward.blockNumber, null, { txsInternal: calls });

    const split = await write(url(), { ...forwarder, functionName: 'split', args: [A1, A2], value: 1001n });
    const both = await internal(split);
    expect(both).toMatchObject([
      { from: fwd, to: A1, value: '500' },
      { from: fwd, to: A2, value: '501' },
    ]);
    await expectHooks(id, split.blockNumber, null, { txsInternal: both });

    // Sent by the watched A1 through the forwarder to A2: without the option the transaction comes, not its internal one.
    const own = await write(url(), { ...forwarder, functionName: 'forward', args: [A2], value: 9n, account: K1 });
    const ownCalls = await internal(own);
    expect(ownCalls).toMatchObject([{ from: fwd, to: A2, value: '9' }]);
    await expectHooks(id, own.blockNumber, null, { txsInternal: ownCalls });
    await expectHooks(without, own.blockNumber, null, { txs: [await txItem(own.transactionHash)] });
    // Only internal value reached the watched wallets in the blocks before: nothing for it there.
    await nothingFor(without, forward.blockNumber, own.blockNumber);
    await nothingFor(without, split.blockNumber, own.blockNumber);
  });

  // ---- 4. allAddresses -------------------------------------------------------------

  it('allAddresses with an ERC-20 Transfer abi: every token transfer between unwatched accounts, not ERC-721 Transfers', async () => {
    const id = await createStream({ allAddresses: true, includeContractLogs: true, abi: ERC20_ABI.slice(0, 1), topic0: [TRANSFER] });
    const withTxs = await createStream({
      allAddresses: true,
      includeContractLogs: true,
      includeNativeTxs: true,
      abi: ERC20_ABI.slice(0, 1),
      topic0: [TRANSFER],
    });
    const [r1, r2, r3] = await oneBlock([
      () => submit({ ...token, functionName: 'transfer', args: [A1, 100n], account: K2 }),
      () => submit({ ...token2, functionName: 'transfer', args: [A0, 2n * 10n ** 17n], account: K1 }),
      () => submit({ ...nft, functionName: 'mint', args: [A2, 99n], account: K0 }),
    ]);
    const byEmitter = new Map([r1!, r2!, r3!].map((r) => [r.logs[0]!.address.toLowerCase(), r]));
    const tokenTx = byEmitter.get(token.address.toLowerCase())!;
    const token2Tx = byEmitter.get(token2.address.toLowerCase())!;
    // The NFT's Transfer, in the same block, has the same topic0 but four topics.
    expect(byEmitter.get(nft.address.toLowerCase())!.logs[0]!.topics).toMatchObject({ 0: toEventSelector(TRANSFER), length: 4 });
    const ordered = [tokenTx, token2Tx].sort((a, b) => a.transactionIndex - b.transactionIndex);
    const items = ordered.map((r) =>
      r === tokenTx
        ? tt(r, A2, A1, 100n)
        : {
            transactionHash: r.transactionHash,
            logIndex: String(r.logs[0]!.logIndex),
            contract: token2.address.toLowerCase(),
            from: A1,
            to: A0,
            value: (2n * 10n ** 17n).toString(),
            tokenName: 'Other Token',
            tokenSymbol: 'OT',
            tokenDecimals: '18',
            valueWithDecimals: '0.2',
            possibleSpam: false,
          },
    );
    const parts = { logs: ordered.map((r) => logItem(r)), erc20Transfers: items };
    const got = await expectHooks(id, tokenTx.blockNumber, ERC20_ABI.slice(0, 1), parts);
    expect(plain(got.decoded)).toEqual(
      ordered.map((r) => (r === tokenTx ? { from: A2, to: A1, value: '100' } : { from: A1, to: A0, value: '200000000000000000' })),
    );
    // With includeNativeTxs, the transactions of the logs kept (not the NFT mint's).
    await expectHooks(withTxs, tokenTx.blockNumber, ERC20_ABI.slice(0, 1), {
      ...parts,
      txs: await Promise.all(ordered.map((r) => txItem(r.transactionHash))),
    });
  });

  // ---- 5. includeAllTxLogs ---------------------------------------------------------

  it('includeAllTxLogs: every log of a transaction with a matching log, or a matching transaction', async () => {
    const all = await createStream({ includeContractLogs: true, includeAllTxLogs: true, abi: FORWARDED_ABI, topic0: [FORWARDED] }, [A1]);
    const one = await createStream({ includeContractLogs: true, abi: FORWARDED_ABI, topic0: [FORWARDED] }, [A1]);
    const byTx = await createStream({ includeNativeTxs: true, includeAllTxLogs: true, abi: FORWARDED_ABI }, [A2]);
    const txOnly = await createStream({ includeNativeTxs: true, abi: FORWARDED_ABI }, [A2]);

    // Forwarded(A0, A1, 500) names A1; Forwarded(A0, A2, 501) does not.
    const split = await write(url(), { ...forwarder, functionName: 'split', args: [A1, A2], value: 1001n });
    expect(split.logs).toHaveLength(2);
    const a = await expectHooks(all, split.blockNumber, FORWARDED_ABI, { logs: [logItem(split, 0), logItem(split, 1)] });
    expect(plain(a.decoded)).toEqual([
      { from: A0, to: A1, value: '500' },
      { from: A0, to: A2, value: '501' },
    ]);
    await expectHooks(one, split.blockNumber, FORWARDED_ABI, { logs: [logItem(split, 0)] });

    // A transaction sent by the watched A2: with includeAllTxLogs its logs come along.
    const forward = await write(url(), { ...forwarder, functionName: 'forward', args: [A0], value: 7n, account: K2 });
    const tx = await txItem(forward.transactionHash);
    const b = await expectHooks(byTx, forward.blockNumber, FORWARDED_ABI, { txs: [tx], logs: [logItem(forward)] });
    expect(plain(b.decoded)).toEqual([{ from: A2, to: A0, value: '7' }]);
    await expectHooks(txOnly, forward.blockNumber, FORWARDED_ABI, { txs: [tx] });
    // In the split, A2 only received internal value and was named by a log: no match for a stream of transactions.
    await nothingFor(byTx, split.blockNumber, forward.blockNumber);

    // The forward names A0 and A2, not A1: nothing for `all`; a Forwarded naming A1 after it comes.
    const again = await write(url(), { ...forwarder, functionName: 'forward', args: [A1], value: 3n });
    await expectHooks(all, again.blockNumber, FORWARDED_ABI, { logs: [logItem(again)] });
    await nothingFor(all, forward.blockNumber, again.blockNumber);
  });

  // ---- 6. includeNativeTxs ---------------------------------------------------------

  it('includeNativeTxs false vs true on the same activity', async () => {
    const withTxs = await createStream({ includeNativeTxs: true, includeContractLogs: true, abi: ERC20_ABI }, [A1]);
    const noTxs = await createStream({ includeNativeTxs: false, includeContractLogs: true, abi: ERC20_ABI }, [A1]);

    const hash = await (await walletClient(url(), K0)).sendTransaction({ to: A1, value: parseEther('1.5') });
    const native = await mined(url(), hash);
    const tx = await txItem(hash);
    expect(tx).toMatchObject({
      fromAddress: A0,
      toAddress: A1,
      value: parseEther('1.5').toString(),
      input: '0x',
      type: '2',
      transactionIndex: '0',
    });
    await expectHooks(withTxs, native.blockNumber, ERC20_ABI, { txs: [tx] });

    const sent = await write(url(), { ...token, functionName: 'transfer', args: [A2, 4321n], account: K1 });
    const parts = { logs: [logItem(sent)], erc20Transfers: [tt(sent, A1, A2, 4321n)] };
    const w = await expectHooks(withTxs, sent.blockNumber, ERC20_ABI, { ...parts, txs: [await txItem(sent.transactionHash)] });
    expect(w.body.txs[0]).toMatchObject({ fromAddress: A1, toAddress: token.address.toLowerCase(), value: '0' });
    expect(plain(w.decoded)).toEqual([{ from: A1, to: A2, value: '4321' }]);
    await expectHooks(noTxs, sent.blockNumber, ERC20_ABI, parts);
    // The native transfer before it: nothing without includeNativeTxs.
    await nothingFor(noTxs, native.blockNumber, sent.blockNumber);
  });

  // ---- 7. topic0 -------------------------------------------------------------------

  it('topic0: a stream of Approval gets the approval, not the Transfer naming the same wallet in the same block', async () => {
    const id = await createStream({ includeContractLogs: true, abi: ERC20_ABI, topic0: [APPROVAL] }, [A1]);
    const receipts = await oneBlock([
      () => submit({ ...token, functionName: 'transfer', args: [A1, 5n], account: K2 }),
      () => submit({ ...token, functionName: 'approve', args: [A1, 77n], account: K0 }),
    ]);
    const approval = receipts.find((r) => r.from.toLowerCase() === A0)!;
    const { decoded } = await expectHooks(id, approval.blockNumber, ERC20_ABI, {
      logs: [logItem(approval)],
      erc20Approvals: [
        {
          transactionHash: approval.transactionHash,
          logIndex: String(approval.logs[0]!.logIndex),
          contract: token.address.toLowerCase(),
          owner: A0,
          spender: A1,
          value: '77',
          valueWithDecimals: '0.000077',
          ...erc20,
        },
      ],
    });
    expect(plain(decoded)).toEqual([{ owner: A0, spender: A1, value: '77' }]);

    // A block with only the Transfer: nothing (checked once the next approval came).
    const transfer = await write(url(), { ...token, functionName: 'transfer', args: [A1, 6n], account: K2 });
    const next = await write(url(), { ...token, functionName: 'approve', args: [A1, 78n], account: K0 });
    await nothingFor(id, transfer.blockNumber, next.blockNumber);
  });

  // ---- 8. advancedOptions ----------------------------------------------------------

  it('advancedOptions: a filter keeps only the big transfer; includeNativeTxs in the entry adds its transaction', async () => {
    const filter = { gt: ['value', '1000'] };
    const withTx = await createStream(
      {
        includeContractLogs: true,
        abi: ERC20_ABI,
        topic0: [TRANSFER],
        advancedOptions: [{ topic0: TRANSFER, filter, includeNativeTxs: true }],
      },
      [A1],
    );
    const noTx = await createStream(
      { includeContractLogs: true, abi: ERC20_ABI, topic0: [TRANSFER], advancedOptions: [{ topic0: TRANSFER, filter }] },
      [A1],
    );
    const receipts = await oneBlock([
      () => submit({ ...token, functionName: 'transfer', args: [A1, 1000n], account: K0 }),
      () => submit({ ...token, functionName: 'transfer', args: [A1, 5000n], account: K2 }),
    ]);
    const big = receipts.find((r) => r.from.toLowerCase() === A2)!;
    const parts = { logs: [logItem(big)], erc20Transfers: [tt(big, A2, A1, 5000n)] };
    const w = await expectHooks(withTx, big.blockNumber, ERC20_ABI, { ...parts, txs: [await txItem(big.transactionHash)] });
    expect(plain(w.decoded)).toEqual([{ from: A2, to: A1, value: '5000' }]);
    await expectHooks(noTx, big.blockNumber, ERC20_ABI, parts);

    // Only a small one (999 is not > 1000): nothing; then 1001 is.
    const small = await write(url(), { ...token, functionName: 'transfer', args: [A1, 999n], account: K2 });
    const next = await write(url(), { ...token, functionName: 'transfer', args: [A1, 1001n], account: K2 });
    await nothingFor(withTx, small.blockNumber, next.blockNumber);
  });

  it('advancedOptions: an invalid entry is refused with 400 naming the field, on create and on update', async () => {
    const { s, rx } = env();
    const base = { webhookUrl: rx.url, chainIds: ['0x539'], includeContractLogs: true, abi: ERC20_ABI, topic0: [TRANSFER] };
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ topic0: 'Swap(address,uint256)' }, 'advancedOptions.0.topic0'],
      [{ topic0: TRANSFER, filter: { gt: ['amount', '1000'] } }, 'advancedOptions.0.filter.gt.0'],
      [{ topic0: TRANSFER, filter: { gt: ['from', '1000'] } }, 'advancedOptions.0.filter.gt.0'],
      [{ topic0: TRANSFER, filter: { gt: ['value', 'lots'] } }, 'advancedOptions.0.filter.gt.1'],
      [{ topic0: TRANSFER, filter: { eq: ['to', '0x1234'] } }, 'advancedOptions.0.filter.eq.1'],
      [{ topic0: TRANSFER, filter: { or: [{ eq: ['to', A1] }] } }, 'advancedOptions.0.filter.or'],
      [{ topic0: TRANSFER, filter: { like: ['value', '1'] } }, 'advancedOptions.0.filter.like'],
      [{ topic0: TRANSFER, filter: { in: ['to', A1] } }, 'advancedOptions.0.filter.in.1'],
    ];
    for (const [option, field] of cases) {
      const res = await s.call('/streams/evm', { method: 'PUT', json: { ...base, advancedOptions: [option] } });
      expect([res.status, res.body.details?.field], JSON.stringify(option)).toEqual([400, field]);
      expect(res.body.message).toMatch(new RegExp(`^${field.replace(/\./g, '\\.')}: `));
    }
    const id = await createStream({
      includeContractLogs: true,
      abi: ERC20_ABI,
      topic0: [TRANSFER],
      advancedOptions: [{ topic0: TRANSFER, filter: { gt: ['value', '1000'] } }],
    });
    const res = await s.call(`/streams/evm/${id}`, {
      method: 'POST',
      json: { advancedOptions: [{ topic0: TRANSFER, filter: { gte: ['to', '1'] } }] },
    });
    expect([res.status, res.body.details?.field]).toEqual([400, 'advancedOptions.0.filter.gte.0']);
    expect((await s.call(`/streams/evm/${id}`)).body.advancedOptions).toEqual([{ topic0: TRANSFER, filter: { gt: ['value', '1000'] } }]);
  });

  // ---- 9. getNativeBalances --------------------------------------------------------

  it('getNativeBalances: the balances of the selected addresses at the block', async () => {
    const id = await createStream(
      { includeNativeTxs: true, getNativeBalances: [{ selectors: ['$fromAddress', '$toAddress'], type: 'tx' }] },
      [A1],
    );
    const plainStream = await createStream({ includeNativeTxs: true }, [A1]);
    const hash = await (await walletClient(url(), K0)).sendTransaction({ to: A1, value: parseEther('0.25') });
    const r = await mined(url(), hash);
    await unconfirmed(id, r.blockNumber);
    // Both balances change again in the next block: the webhooks must say the balances at theirs.
    await mined(url(), await (await walletClient(url(), K1)).sendTransaction({ to: A0, value: parseEther('0.1') }));
    const at = async (a: Hex) => ({ address: a, balance: String(await rpc().getBalance({ address: a, blockNumber: r.blockNumber })) });
    const tx = await txItem(hash);
    await expectHooks(id, r.blockNumber, null, { txs: [tx], nativeBalances: [await at(A0), await at(A1)] });
    await expectHooks(plainStream, r.blockNumber, null, { txs: [tx] });
  });

  // ---- 10. triggers ----------------------------------------------------------------

  it('triggers: balanceOf of each erc20Transfers item, read at its block', async () => {
    const triggers = [
      { type: 'erc20transfer', contractAddress: '$contract', functionAbi: balanceOfNamed('toBalance'), inputs: ['$to'] },
      { type: 'erc20transfer', contractAddress: '$contract', functionAbi: balanceOfNamed('fromBalance'), inputs: ['$from'] },
    ];
    const id = await createStream({ includeContractLogs: true, abi: ERC20_ABI, topic0: [TRANSFER], triggers }, [A1]);
    const r = await write(url(), { ...token, functionName: 'transfer', args: [A1, 3000n], account: K0 });
    await unconfirmed(id, r.blockNumber);
    // Both balances change again in the next block.
    await write(url(), { ...token, functionName: 'transfer', args: [A1, 7n], account: K0 });
    const toBalance = await balanceOf(token, A1, r.blockNumber);
    const fromBalance = await balanceOf(token, A0, r.blockNumber);
    expect(toBalance).not.toBe(await balanceOf(token, A1, r.blockNumber + 1n));
    const { decoded } = await expectHooks(id, r.blockNumber, ERC20_ABI, {
      logs: [logItem(r)],
      erc20Transfers: [
        {
          ...tt(r, A0, A1, 3000n),
          triggers: [
            { name: 'toBalance', value: toBalance },
            { name: 'fromBalance', value: fromBalance },
          ],
        },
      ],
    });
    expect(plain(decoded)).toEqual([{ from: A0, to: A1, value: '3000' }]);
  });

  // ---- 11. filterPossibleSpamAddresses ---------------------------------------------

  it('filterPossibleSpamAddresses: a spam-looking token is dropped with the flag, marked possibleSpam without it', async () => {
    const def = { includeContractLogs: true, abi: ERC20_ABI, topic0: [TRANSFER] };
    const flagged = await createStream({ ...def, filterPossibleSpamAddresses: true }, [A1]);
    const plainStream = await createStream(def, [A1]);
    const bySpamVariable = await createStream(
      { ...def, advancedOptions: [{ topic0: TRANSFER, filter: { eq: ['moralis_streams_possibleSpam', 'false'] } }] },
      [A1],
    );
    const receipts = await oneBlock([
      () => submit({ ...spamToken, functionName: 'transfer', args: [A1, 10n], account: K0 }),
      () => submit({ ...token, functionName: 'transfer', args: [A1, 11n], account: K2 }),
    ]);
    const spam = receipts.find((r) => r.from.toLowerCase() === A0)!;
    const ok = receipts.find((r) => r.from.toLowerCase() === A2)!;
    const spamItem = (r: TransactionReceipt, value: bigint) => ({
      transactionHash: r.transactionHash,
      logIndex: String(r.logs[0]!.logIndex),
      contract: spamToken.address.toLowerCase(),
      from: A0,
      to: A1,
      value: value.toString(),
      tokenName: 'Visit claim-now.com',
      tokenSymbol: 'CLAIM',
      tokenDecimals: '18',
      valueWithDecimals: formatUnits(value, 18),
      possibleSpam: true,
    });
    const clean = { logs: [logItem(ok)], erc20Transfers: [tt(ok, A2, A1, 11n)] };
    await expectHooks(flagged, ok.blockNumber, ERC20_ABI, clean);
    await expectHooks(bySpamVariable, ok.blockNumber, ERC20_ABI, clean);
    const both = [spam, ok].sort((a, b) => a.transactionIndex - b.transactionIndex);
    await expectHooks(plainStream, ok.blockNumber, ERC20_ABI, {
      logs: both.map((r) => logItem(r)),
      erc20Transfers: both.map((r) => (r === spam ? spamItem(r, 10n) : tt(r, A2, A1, 11n))),
    });

    // A block with only the spam token's transfer: no webhook with the flag (checked once a clean transfer after it came).
    const only = await write(url(), { ...spamToken, functionName: 'transfer', args: [A1, 12n], account: K0 });
    await expectHooks(plainStream, only.blockNumber, ERC20_ABI, { logs: [logItem(only)], erc20Transfers: [spamItem(only, 12n)] });
    const next = await write(url(), { ...token, functionName: 'transfer', args: [A1, 13n], account: K2 });
    await expectHooks(flagged, next.blockNumber, ERC20_ABI, { logs: [logItem(next)], erc20Transfers: [tt(next, A2, A1, 13n)] });
    await nothingFor(flagged, only.blockNumber, next.blockNumber);
  });
});
