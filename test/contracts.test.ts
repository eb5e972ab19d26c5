import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEther, parseEventLogs, zeroAddress, type Abi, type Hex, type TransactionReceipt } from 'viem';
import { startAnvil, type Anvil } from '../http/clients/anvil.js';
import {
  compileContracts,
  CONTRACT_NAMES,
  deploy,
  DEV_ACCOUNTS,
  mined,
  publicClient,
  walletClient,
  write,
  type Deployed,
  type Write,
} from './contracts.js';
import { startReceiver } from './receiver.js';

/** The test contracts themselves, on a real anvil: each function, its events on the wire, and its effects. */
const [A0, A1, A2] = DEV_ACCOUNTS.map((a) => a.address) as [Hex, Hex, Hex];
const [, K1, K2] = DEV_ACCOUNTS;

let anvil: Anvil;
beforeAll(async () => {
  anvil = await startAnvil();
});
afterAll(async () => {
  await anvil?.stop();
});

const send = (c: Deployed, functionName: string, args: readonly unknown[] = [], extra: Partial<Write> = {}): Promise<TransactionReceipt> =>
  write(anvil.url, { address: c.address, abi: c.abi, functionName, args, ...extra });
const read = (c: Deployed, functionName: string, args: readonly unknown[] = []): Promise<unknown> =>
  publicClient(anvil.url).readContract({ address: c.address, abi: c.abi, functionName, args });
const events = (receipt: TransactionReceipt, abi: Abi) =>
  parseEventLogs({ abi, logs: receipt.logs }).map(({ eventName, args }) => ({ eventName, args }));
const balance = (address: Hex): Promise<bigint> => publicClient(anvil.url).getBalance({ address });
/**
 * How viem reports a write of `functionName` that reverted with no reason: the
 * token called a receiver hook the recipient (Forwarder) lacks, and with no
 * fallback that call reverted with empty data, which the token passed on.
 */
const revertedWithoutReason = (functionName: string) => ({
  shortMessage: `The contract function "${functionName}" reverted.`,
  details: 'execution reverted',
});

interface CallFrame {
  type: string;
  from: string;
  to: string;
  value?: Hex;
  calls?: CallFrame[];
}
async function callTrace(hash: Hex): Promise<CallFrame> {
  const res = await fetch(anvil.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'debug_traceTransaction', params: [hash, { tracer: 'callTracer' }] }),
  });
  const { result, error } = (await res.json()) as { result?: CallFrame; error?: unknown };
  if (result === undefined) throw new Error(`debug_traceTransaction: ${JSON.stringify(error)}`);
  return result;
}

describe('compileContracts', () => {
  it('compiles every contract once per process', () => {
    const all = compileContracts();
    expect(Object.keys(all).sort()).toEqual([...CONTRACT_NAMES].sort());
    for (const c of Object.values(all)) expect(c.bytecode).toMatch(/^0x[0-9a-f]{100,}$/);
    expect(compileContracts()).toBe(all);
  });
});

describe('TestToken (ERC-20)', () => {
  const SUPPLY = parseEther('1000');
  let token: Deployed;
  beforeAll(async () => {
    token = await deploy(anvil.url, 'TestToken', ['Test Token', 'TST', 18, SUPPLY]);
  });

  it('mints the initial supply to the deployer', async () => {
    expect(events(token.receipt, token.abi)).toEqual([{ eventName: 'Transfer', args: { from: zeroAddress, to: A0, value: SUPPLY } }]);
    expect(await read(token, 'name')).toBe('Test Token');
    expect(await read(token, 'symbol')).toBe('TST');
    expect(await read(token, 'decimals')).toBe(18);
    expect(await read(token, 'totalSupply')).toBe(SUPPLY);
    expect(await read(token, 'balanceOf', [A0])).toBe(SUPPLY);
  });

  it('transfer moves the balance and emits Transfer with three topics', async () => {
    const receipt = await send(token, 'transfer', [A1, 100n]);
    expect(events(receipt, token.abi)).toEqual([{ eventName: 'Transfer', args: { from: A0, to: A1, value: 100n } }]);
    expect(receipt.logs[0]!.topics).toHaveLength(3);
    expect(await read(token, 'balanceOf', [A0])).toBe(SUPPLY - 100n);
    expect(await read(token, 'balanceOf', [A1])).toBe(100n);
  });

  it('approve and transferFrom spend the allowance', async () => {
    const approval = await send(token, 'approve', [A1, 50n]);
    expect(events(approval, token.abi)).toEqual([{ eventName: 'Approval', args: { owner: A0, spender: A1, value: 50n } }]);
    expect(await read(token, 'allowance', [A0, A1])).toBe(50n);

    const moved = await send(token, 'transferFrom', [A0, A2, 30n], { account: K1 });
    expect(events(moved, token.abi)).toEqual([{ eventName: 'Transfer', args: { from: A0, to: A2, value: 30n } }]);
    expect(await read(token, 'allowance', [A0, A1])).toBe(20n);
    expect(await read(token, 'balanceOf', [A2])).toBe(30n);
    await expect(send(token, 'transferFrom', [A0, A2, 21n], { account: K1 })).rejects.toThrow(/insufficient allowance/);
  });

  it('lets anyone mint, from the zero address', async () => {
    const receipt = await send(token, 'mint', [A2, 7n], { account: K2 });
    expect(events(receipt, token.abi)).toEqual([{ eventName: 'Transfer', args: { from: zeroAddress, to: A2, value: 7n } }]);
    expect(await read(token, 'totalSupply')).toBe(SUPPLY + 7n);
    expect(await read(token, 'balanceOf', [A2])).toBe(37n);
  });
});

describe('TestNFT (ERC-721)', () => {
  let nft: Deployed;
  let receiver: Deployed;
  let forwarder: Deployed;
  beforeAll(async () => {
    nft = await deploy(anvil.url, 'TestNFT', ['Test NFT', 'TNFT']);
    receiver = await deploy(anvil.url, 'TestReceiver');
    forwarder = await deploy(anvil.url, 'Forwarder');
  });

  it('has a name, a symbol and ERC-165 support', async () => {
    expect(await read(nft, 'name')).toBe('Test NFT');
    expect(await read(nft, 'symbol')).toBe('TNFT');
    expect(await read(nft, 'supportsInterface', ['0x80ac58cd'])).toBe(true);
    expect(await read(nft, 'supportsInterface', ['0x01ffc9a7'])).toBe(true);
    expect(await read(nft, 'supportsInterface', ['0xd9b67a26'])).toBe(false);
  });

  it('mint emits a Transfer with the token id as a fourth topic', async () => {
    const receipt = await send(nft, 'mint', [A0, 1n]);
    expect(events(receipt, nft.abi)).toEqual([{ eventName: 'Transfer', args: { from: zeroAddress, to: A0, tokenId: 1n } }]);
    // Same topic0 as the ERC-20 Transfer: only the topic count tells them apart.
    const erc20 = parseEventLogs({ abi: compileContracts().TestToken.abi, logs: receipt.logs });
    expect(erc20).toEqual([]);
    expect(receipt.logs[0]!.topics).toHaveLength(4);
    expect(receipt.logs[0]!.topics[3]).toBe(`0x${'1'.padStart(64, '0')}`);
    expect(await read(nft, 'ownerOf', [1n])).toBe(A0);
    expect(await read(nft, 'balanceOf', [A0])).toBe(1n);
    await expect(send(nft, 'mint', [A1, 1n])).rejects.toThrow(/already minted/);
  });

  it('approve lets the approved account transferFrom once', async () => {
    const approval = await send(nft, 'approve', [A1, 1n]);
    expect(events(approval, nft.abi)).toEqual([{ eventName: 'Approval', args: { owner: A0, approved: A1, tokenId: 1n } }]);
    expect(approval.logs[0]!.topics).toHaveLength(4);
    expect(await read(nft, 'getApproved', [1n])).toBe(A1);

    const moved = await send(nft, 'transferFrom', [A0, A1, 1n], { account: K1 });
    expect(events(moved, nft.abi)).toEqual([{ eventName: 'Transfer', args: { from: A0, to: A1, tokenId: 1n } }]);
    expect(await read(nft, 'ownerOf', [1n])).toBe(A1);
    expect(await read(nft, 'getApproved', [1n])).toBe(zeroAddress);
    expect(await read(nft, 'balanceOf', [A0])).toBe(0n);
    expect(await read(nft, 'balanceOf', [A1])).toBe(1n);
    await expect(send(nft, 'transferFrom', [A1, A0, 1n])).rejects.toThrow(/not owner nor approved/);
  });

  it('setApprovalForAll lets an operator safeTransferFrom', async () => {
    const approval = await send(nft, 'setApprovalForAll', [A2, true], { account: K1 });
    expect(events(approval, nft.abi)).toEqual([{ eventName: 'ApprovalForAll', args: { owner: A1, operator: A2, approved: true } }]);
    expect(await read(nft, 'isApprovedForAll', [A1, A2])).toBe(true);

    const moved = await send(nft, 'safeTransferFrom', [A1, A0, 1n], { account: K2 });
    expect(events(moved, nft.abi)).toEqual([{ eventName: 'Transfer', args: { from: A1, to: A0, tokenId: 1n } }]);
    expect(await read(nft, 'ownerOf', [1n])).toBe(A0);
  });

  it('safeTransferFrom to a contract needs onERC721Received; transferFrom does not', async () => {
    await send(nft, 'safeTransferFrom', [A0, receiver.address, 1n, '0x1234']);
    expect(await read(nft, 'ownerOf', [1n])).toBe(receiver.address);

    await send(nft, 'mint', [A0, 2n]);
    await expect(send(nft, 'safeTransferFrom', [A0, forwarder.address, 2n])).rejects.toMatchObject(
      revertedWithoutReason('safeTransferFrom'),
    );
    await send(nft, 'transferFrom', [A0, forwarder.address, 2n]);
    expect(await read(nft, 'ownerOf', [2n])).toBe(forwarder.address);
  });
});

describe('TestMulti (ERC-1155)', () => {
  let multi: Deployed;
  let receiver: Deployed;
  let forwarder: Deployed;
  beforeAll(async () => {
    multi = await deploy(anvil.url, 'TestMulti');
    receiver = await deploy(anvil.url, 'TestReceiver');
    forwarder = await deploy(anvil.url, 'Forwarder');
  });

  it('supports ERC-1155 and ERC-165', async () => {
    expect(await read(multi, 'supportsInterface', ['0xd9b67a26'])).toBe(true);
    expect(await read(multi, 'supportsInterface', ['0x01ffc9a7'])).toBe(true);
    expect(await read(multi, 'supportsInterface', ['0x80ac58cd'])).toBe(false);
  });

  it('mint emits TransferSingle and mintBatch emits TransferBatch with the arrays', async () => {
    const single = await send(multi, 'mint', [A0, 1n, 100n]);
    expect(events(single, multi.abi)).toEqual([
      { eventName: 'TransferSingle', args: { operator: A0, from: zeroAddress, to: A0, id: 1n, value: 100n } },
    ]);

    const batch = await send(multi, 'mintBatch', [A0, [2n, 3n], [20n, 30n]]);
    expect(events(batch, multi.abi)).toEqual([
      { eventName: 'TransferBatch', args: { operator: A0, from: zeroAddress, to: A0, ids: [2n, 3n], values: [20n, 30n] } },
    ]);
    expect(batch.logs[0]!.topics).toHaveLength(4);
    expect(await read(multi, 'balanceOf', [A0, 1n])).toBe(100n);
    expect(
      await read(multi, 'balanceOfBatch', [
        [A0, A0, A0, A1],
        [1n, 2n, 3n, 1n],
      ]),
    ).toEqual([100n, 20n, 30n, 0n]);
  });

  it('safeTransferFrom moves one id', async () => {
    const receipt = await send(multi, 'safeTransferFrom', [A0, A1, 1n, 40n, '0x']);
    expect(events(receipt, multi.abi)).toEqual([
      { eventName: 'TransferSingle', args: { operator: A0, from: A0, to: A1, id: 1n, value: 40n } },
    ]);
    expect(
      await read(multi, 'balanceOfBatch', [
        [A0, A1],
        [1n, 1n],
      ]),
    ).toEqual([60n, 40n]);
    await expect(send(multi, 'safeTransferFrom', [A0, A1, 1n, 61n, '0x'])).rejects.toThrow(/insufficient balance/);
  });

  it('an operator approved for all can safeBatchTransferFrom', async () => {
    await expect(send(multi, 'safeBatchTransferFrom', [A0, A1, [2n, 3n], [5n, 6n], '0x'], { account: K2 })).rejects.toThrow(
      /not owner nor approved/,
    );
    const approval = await send(multi, 'setApprovalForAll', [A2, true]);
    expect(events(approval, multi.abi)).toEqual([{ eventName: 'ApprovalForAll', args: { owner: A0, operator: A2, approved: true } }]);
    expect(await read(multi, 'isApprovedForAll', [A0, A2])).toBe(true);

    const receipt = await send(multi, 'safeBatchTransferFrom', [A0, A1, [2n, 3n], [5n, 6n], '0x'], { account: K2 });
    expect(events(receipt, multi.abi)).toEqual([
      { eventName: 'TransferBatch', args: { operator: A2, from: A0, to: A1, ids: [2n, 3n], values: [5n, 6n] } },
    ]);
    expect(
      await read(multi, 'balanceOfBatch', [
        [A0, A0, A1, A1],
        [2n, 3n, 2n, 3n],
      ]),
    ).toEqual([15n, 24n, 5n, 6n]);
  });

  it('calls the receiver hooks only on contracts', async () => {
    await send(multi, 'mint', [receiver.address, 9n, 1n]);
    await send(multi, 'mintBatch', [receiver.address, [9n, 10n], [1n, 2n]]);
    expect(
      await read(multi, 'balanceOfBatch', [
        [receiver.address, receiver.address],
        [9n, 10n],
      ]),
    ).toEqual([2n, 2n]);
    await expect(send(multi, 'mint', [forwarder.address, 9n, 1n])).rejects.toMatchObject(revertedWithoutReason('mint'));
    await expect(send(multi, 'mintBatch', [forwarder.address, [9n], [1n]])).rejects.toMatchObject(revertedWithoutReason('mintBatch'));
  });
});

describe('Forwarder', () => {
  let forwarder: Deployed;
  beforeAll(async () => {
    forwarder = await deploy(anvil.url, 'Forwarder');
  });

  it('forward sends the value on in an internal call', async () => {
    const before = await balance(A1);
    const receipt = await send(forwarder, 'forward', [A1], { value: parseEther('1') });
    expect(await balance(A1)).toBe(before + parseEther('1'));
    expect(await balance(forwarder.address)).toBe(0n);
    expect(events(receipt, forwarder.abi)).toEqual([{ eventName: 'Forwarded', args: { from: A0, to: A1, value: parseEther('1') } }]);

    const trace = await callTrace(receipt.transactionHash);
    expect(trace).toMatchObject({ type: 'CALL', from: A0.toLowerCase(), to: forwarder.address.toLowerCase(), value: '0xde0b6b3a7640000' });
    expect(trace.calls).toHaveLength(1);
    expect(trace.calls![0]).toMatchObject({
      type: 'CALL',
      from: forwarder.address.toLowerCase(),
      to: A1.toLowerCase(),
      value: '0xde0b6b3a7640000',
    });
  });

  it('split sends half to each in two internal calls', async () => {
    const [b1, b2] = [await balance(A1), await balance(A2)];
    const receipt = await send(forwarder, 'split', [A1, A2], { value: 3n });
    expect([(await balance(A1)) - b1, (await balance(A2)) - b2]).toEqual([1n, 2n]);
    expect(await balance(forwarder.address)).toBe(0n);
    expect(events(receipt, forwarder.abi)).toEqual([
      { eventName: 'Forwarded', args: { from: A0, to: A1, value: 1n } },
      { eventName: 'Forwarded', args: { from: A0, to: A2, value: 2n } },
    ]);
    const trace = await callTrace(receipt.transactionHash);
    expect(trace.calls?.map((c) => [c.to, c.value])).toEqual([
      [A1.toLowerCase(), '0x1'],
      [A2.toLowerCase(), '0x2'],
    ]);
  });

  it('accepts plain value', async () => {
    const hash = await (await walletClient(anvil.url, K1)).sendTransaction({ to: forwarder.address, value: 5n });
    await mined(anvil.url, hash);
    expect(await balance(forwarder.address)).toBe(5n);
  });
});

describe('TestEmitter', () => {
  it('emitMany emits n Ping events, one topic each for the index', async () => {
    const emitter = await deploy(anvil.url, 'TestEmitter');
    const receipt = await send(emitter, 'emitMany', [3n]);
    expect(events(receipt, emitter.abi)).toEqual([0n, 1n, 2n].map((i) => ({ eventName: 'Ping', args: { i } })));
    expect(receipt.logs.map((l) => l.topics.length)).toEqual([2, 2, 2]);
  });
});

describe('mined', () => {
  it('behavior: rejects within its bound and a try of 2 s, saying the node does not answer, when the node takes connections and never answers', async () => {
    // A node that hangs: it takes each request and answers nothing.
    const node = await startReceiver();
    node.state.answer = () => 'hang';
    try {
      const started = performance.now();
      const err = await mined(node.url, `0x${'11'.repeat(32)}`, 500).then(
        () => undefined,
        (e: Error) => e,
      );
      expect(err?.message).toMatch(/was not mined within 0\.5 s on .* \(the node does not answer: /);
      // 0.5 s for the receipt, 2 s for the node's answer (with the client's retries: 41 s more).
      expect(performance.now() - started).toBeLessThan(10_000);
    } finally {
      await node.close();
    }
  });
});
