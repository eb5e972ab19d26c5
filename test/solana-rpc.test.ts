import { ed25519 } from '@noble/curves/ed25519.js';
import bs58 from 'bs58';
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { benchChain, benchPool, poolTouches, slotPick } from './kit/solana-rpc/bench.js';
import {
  addressOf,
  failedTransfer,
  keypair,
  Ledger,
  lookupTable,
  solTransfer,
  splTransfer,
  SYSTEM_PROGRAM,
  TOKEN_PROGRAM,
  tokenAccountOf,
  touchesOf,
  uiTokenAmount,
  VOTE_PROGRAM,
  voteTx,
  type BuildContext,
  type BuiltTx,
} from './kit/solana-rpc/build.js';
import { SolanaChain } from './kit/solana-rpc/chain.js';
import { mainnetChain } from './kit/solana-rpc/fixtures.js';
import { startSolanaRpc, type SolanaRpc, type SolanaRpcOptions } from './kit/solana-rpc/server.js';
import { serializeMessage, type UiMessage } from './kit/solana-rpc/wire.js';

type Json = Record<string, any>;

/** Fixture JSON read here, not through the stand-in's loader. */
const fixture = (path: string): Json => JSON.parse(readFileSync(new URL(`./fixtures/solana/${path}`, import.meta.url), 'utf8')) as Json;
const BLOCK_100M = 'chainstorage/getBlock-slot-100000000-json-trimmed10.json';
const HYPERLANE = [
  'hyperlane/getTransaction-slot-290198208-json.delivery_message_txn.json',
  'hyperlane/getTransaction-slot-297626301-json.dispatch_message_txn.json',
  'hyperlane/getTransaction-slot-322600797-json.dispatch_message_two_instructions_in_one_txn.json',
];
const ECLIPSE_V0 = 'other-svm-NOT-solana-mainnet/eclipse-getTransaction-slot-35792433-json-v0.json';

/** chainpost's getBlock parameters. */
const FOLLOW = { encoding: 'json', transactionDetails: 'full', maxSupportedTransactionVersion: 0, rewards: false, commitment: 'confirmed' };

const running: SolanaRpc[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((n) => n.close()));
});

async function start(opts: Partial<SolanaRpcOptions> = {}): Promise<SolanaRpc> {
  const node = await startSolanaRpc({ chain: opts.chain ?? mainnetChain(), ...opts });
  running.push(node);
  return node;
}

async function post(node: SolanaRpc, body: unknown): Promise<{ status: number; text: string }> {
  const res = await fetch(node.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
}

/** One call's reply object. */
async function rpc(node: SolanaRpc, method: string, ...params: unknown[]): Promise<Json> {
  const { status, text } = await post(node, { jsonrpc: '2.0', id: 1, method, params });
  expect(status).toBe(200);
  return JSON.parse(text) as Json;
}

async function result(node: SolanaRpc, method: string, ...params: unknown[]): Promise<any> {
  const reply = await rpc(node, method, ...params);
  if (reply.error) throw Object.assign(new Error(reply.error.message), reply.error);
  return reply.result;
}

const errorOf = async (node: SolanaRpc, method: string, ...params: unknown[]): Promise<unknown> =>
  (await rpc(node, method, ...params)).error;

/** Whether every signature of a json-encoded transaction verifies against its signer key over the serialized message. */
function signaturesVerify(tx: { transaction: { message: UiMessage; signatures: string[] }; version?: 'legacy' | 0 }): boolean[] {
  const bytes = serializeMessage(tx.transaction.message, tx.version ?? 'legacy');
  return tx.transaction.signatures.map((s, i) =>
    ed25519.verify(bs58.decode(s), bytes, bs58.decode(tx.transaction.message.accountKeys[i]!)),
  );
}

describe('message serializer against real signatures', () => {
  const real = [...fixture(BLOCK_100M).transactions, ...HYPERLANE.map(fixture)] as Json[];

  it('re-serializes the real mainnet legacy transactions so that every signature verifies against its signer', () => {
    expect(real).toHaveLength(13);
    for (const tx of real) expect(signaturesVerify(tx as never)).toEqual(tx.transaction.signatures.map(() => true));
  });

  it('re-serializes a real v0 transaction with an address-table lookup (Eclipse, same wire format) so its signatures verify', () => {
    const tx = fixture(ECLIPSE_V0);
    expect(tx.version).toBe(0);
    expect(tx.transaction.message.addressTableLookups).toHaveLength(1);
    expect(signaturesVerify(tx as never)).toEqual([true, true, true]);
    // The check can fail: the same message read as legacy, or one changed byte, does not verify.
    expect(signaturesVerify({ ...tx, version: 'legacy' } as never)[0]).toBe(false);
    const changed = structuredClone(tx);
    changed.transaction.message.instructions[0].data = bs58.encode(
      Uint8Array.of(...bs58.decode(tx.transaction.message.instructions[0].data), 0),
    );
    expect(signaturesVerify(changed as never)[0]).toBe(false);
  });
});

describe('built transactions', () => {
  const ctx = (): BuildContext => ({ ledger: new Ledger() });
  const usdc = { address: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v', decimals: 6 };
  const alice = keypair('test', 1);
  const bob = addressOf('bob');
  const sumOf = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);

  const check = (b: BuiltTx): Json => {
    const e = b.entry as unknown as Json;
    expect(signaturesVerify(b.entry)).toEqual(e.transaction.signatures.map(() => true));
    expect(b.signature).toBe(e.transaction.signatures[0]);
    expect(e.meta.fee).toBe(5000 * e.transaction.signatures.length);
    expect(Object.keys(e)).toEqual(['meta', 'transaction', 'version']);
    expect(Object.keys(e.meta)).toEqual([
      'computeUnitsConsumed',
      'err',
      'fee',
      'innerInstructions',
      'loadedAddresses',
      'logMessages',
      'postBalances',
      'postTokenBalances',
      'preBalances',
      'preTokenBalances',
      'rewards',
      'status',
    ]);
    const keys = e.transaction.message.accountKeys.length + e.meta.loadedAddresses.writable.length + e.meta.loadedAddresses.readonly.length;
    expect(e.meta.preBalances).toHaveLength(keys);
    expect(e.meta.postBalances).toHaveLength(keys);
    // Lamports are not made or lost: what leaves is the fee.
    expect(sumOf(e.meta.preBalances) - sumOf(e.meta.postBalances)).toBe(e.meta.fee);
    expect(b.touches).toEqual(touchesOf(b.entry));
    return e;
  };

  it('a SOL transfer: System instruction 2 with the lamports as u64 LE, logs and balances as a node writes them', () => {
    const e = check(solTransfer(ctx(), { from: alice, to: bob, lamports: 1_234_567 }));
    const m = e.transaction.message;
    expect(e.version).toBe('legacy');
    expect(m.accountKeys).toEqual([alice.address, bob, SYSTEM_PROGRAM]);
    expect(m.header).toEqual({ numReadonlySignedAccounts: 0, numReadonlyUnsignedAccounts: 1, numRequiredSignatures: 1 });
    expect(m.instructions).toEqual([{ accounts: [0, 1], data: expect.any(String), programIdIndex: 2, stackHeight: null }]);
    expect(Buffer.from(bs58.decode(m.instructions[0].data)).toString('hex')).toBe(
      `02000000${Buffer.from(new BigUint64Array([1_234_567n]).buffer).toString('hex')}`,
    );
    expect(e.meta.logMessages).toEqual([`Program ${SYSTEM_PROGRAM} invoke [1]`, `Program ${SYSTEM_PROGRAM} success`]);
    expect(e.meta.postBalances[1] - e.meta.preBalances[1]).toBe(1_234_567);
    expect(e.meta.status).toEqual({ Ok: null });
  });

  it('an SPL transferChecked by CPI: token balances with owners, the inner instruction at stack height 2', () => {
    const via = addressOf('some-program');
    const b = splTransfer(ctx(), { owner: alice, mint: usdc, to: bob, amount: 2_500_000n, via });
    const e = check(b);
    const keys: string[] = e.transaction.message.accountKeys;
    const inner = e.meta.innerInstructions[0];
    expect(inner.index).toBe(1);
    expect(inner.instructions).toHaveLength(1);
    const cpi = inner.instructions[0];
    expect(keys[cpi.programIdIndex]).toBe(TOKEN_PROGRAM);
    expect(cpi.stackHeight).toBe(2);
    expect(cpi.accounts.map((i: number) => keys[i])).toEqual([
      tokenAccountOf(alice.address, usdc.address),
      usdc.address,
      tokenAccountOf(bob, usdc.address),
      alice.address,
    ]);
    const data = bs58.decode(cpi.data);
    expect(data[0]).toBe(12);
    expect(Buffer.from(data).readBigUInt64LE(1)).toBe(2_500_000n);
    expect(data[9]).toBe(6);
    const amount = (list: Json[], owner: string): bigint => BigInt(list.find((t) => t.owner === owner)!.uiTokenAmount.amount);
    expect(amount(e.meta.preTokenBalances, alice.address) - amount(e.meta.postTokenBalances, alice.address)).toBe(2_500_000n);
    expect(amount(e.meta.postTokenBalances, bob) - amount(e.meta.preTokenBalances, bob)).toBe(2_500_000n);
    for (const t of e.meta.postTokenBalances) {
      expect(Object.keys(t)).toEqual(['accountIndex', 'mint', 'owner', 'programId', 'uiTokenAmount']);
      expect(t).toMatchObject({ mint: usdc.address, programId: TOKEN_PROGRAM });
    }
    // The receiving wallet is no account key: only its token balance names it.
    expect(keys).not.toContain(bob);
    expect(b.touches.owners).toContain(bob);
    expect(e.meta.logMessages).toEqual(
      expect.arrayContaining([
        `Program ${via} invoke [1]`,
        `Program ${TOKEN_PROGRAM} invoke [2]`,
        'Program log: Instruction: TransferChecked',
        `Program ${TOKEN_PROGRAM} success`,
        `Program ${via} success`,
      ]),
    );
  });

  it('token amounts as the node shows them', () => {
    expect(uiTokenAmount(2_500_000n, 6)).toEqual({ amount: '2500000', decimals: 6, uiAmount: 2.5, uiAmountString: '2.5' });
    expect(uiTokenAmount(795n, 6)).toEqual({ amount: '795', decimals: 6, uiAmount: 0.000795, uiAmountString: '0.000795' });
    expect(uiTokenAmount(0n, 6)).toEqual({ amount: '0', decimals: 6, uiAmount: null, uiAmountString: '0' });
    expect(uiTokenAmount(7n, 0)).toEqual({ amount: '7', decimals: 0, uiAmount: 7, uiAmountString: '7' });
  });

  it('a v0 transaction loads accounts from a lookup table: 0x80 message, loadedAddresses, indexes past the static keys', () => {
    const to = addressOf('carol');
    const table = lookupTable('t', [addressOf('filler'), usdc.address, tokenAccountOf(to, usdc.address), to]);
    const e = check(splTransfer(ctx(), { owner: alice, mint: usdc, to, amount: 10n, table }));
    const m = e.transaction.message;
    expect(e.version).toBe(0);
    expect(serializeMessage(m, 0)[0]).toBe(0x80);
    expect(m.addressTableLookups).toEqual([{ accountKey: table.address, readonlyIndexes: [1], writableIndexes: [2] }]);
    // Read independently: the loaded addresses are the table's entries at the lookup's indexes.
    expect(e.meta.loadedAddresses).toEqual({ readonly: [table.addresses[1]], writable: [table.addresses[2]] });
    const all = [...m.accountKeys, ...e.meta.loadedAddresses.writable, ...e.meta.loadedAddresses.readonly];
    const ix = m.instructions[1];
    expect(all[ix.programIdIndex]).toBe(TOKEN_PROGRAM);
    expect(ix.accounts.some((i: number) => i >= m.accountKeys.length)).toBe(true);
    expect(ix.accounts.map((i: number) => all[i])).toEqual([
      tokenAccountOf(alice.address, usdc.address),
      usdc.address,
      tokenAccountOf(to, usdc.address),
      alice.address,
    ]);
    const sol = check(solTransfer(ctx(), { from: alice, to, lamports: 5, table }));
    expect(sol.meta.loadedAddresses).toEqual({ readonly: [], writable: [to] });
    expect(sol.transaction.message.instructions[0].accounts).toEqual([0, sol.transaction.message.accountKeys.length]);
  });

  it('a vote transaction has the shape of the real votes of slot 100,000,000', () => {
    const realVote = fixture(BLOCK_100M).transactions[0];
    const e = check(voteTx(ctx(), { identity: alice, voteAccount: bob, slot: 1000, hash: addressOf('bank'), timestamp: 1_700_000_000 }));
    const m = e.transaction.message;
    expect(m.header).toEqual(realVote.transaction.message.header);
    expect(m.accountKeys.slice(2)).toEqual(realVote.transaction.message.accountKeys.slice(2));
    expect(m.instructions[0].accounts).toEqual(realVote.transaction.message.instructions[0].accounts);
    expect(m.accountKeys[m.instructions[0].programIdIndex]).toBe(VOTE_PROGRAM);
    expect(bs58.decode(m.instructions[0].data)).toHaveLength(bs58.decode(realVote.transaction.message.instructions[0].data).length);
    expect(e.meta.logMessages).toEqual(realVote.meta.logMessages);
  });

  it('a failed transfer: InstructionError Custom 1, status Err, only the fee taken', () => {
    const e = check(failedTransfer(ctx(), { from: alice, to: bob, lamports: 1 }));
    expect(e.meta.err).toEqual({ InstructionError: [0, { Custom: 1 }] });
    expect(e.meta.status).toEqual({ Err: { InstructionError: [0, { Custom: 1 }] } });
    expect(e.meta.postBalances[1]).toBe(e.meta.preBalances[1]);
    expect(e.meta.logMessages.at(-1)).toBe(`Program ${SYSTEM_PROGRAM} failed: custom program error: 0x1`);
  });
});

describe('stand-in Solana RPC node', () => {
  it('serves the real block of slot 100,000,000 unchanged (rewards shown, no maxSupportedTransactionVersion)', async () => {
    const node = await start();
    const real = fixture(BLOCK_100M);
    const { text } = await post(node, {
      jsonrpc: '2.0',
      id: 7,
      method: 'getBlock',
      params: [100_000_000, { encoding: 'json', commitment: 'confirmed' }],
    });
    expect(text).toBe(`{"jsonrpc":"2.0","result":${JSON.stringify(real)},"id":7}\n`);
  });

  it("with chainpost's parameters: no block rewards, meta.rewards null, version legacy, the rest as the node sent it", async () => {
    const node = await start();
    const real = fixture(BLOCK_100M);
    const got = await result(node, 'getBlock', 100_000_000, FOLLOW);
    const { rewards, ...withoutRewards } = real;
    expect(rewards).toHaveLength(1);
    expect(Object.keys(got)).toEqual(['blockHeight', 'blockTime', 'blockhash', 'parentSlot', 'previousBlockhash', 'transactions']);
    expect(got).toEqual({
      ...withoutRewards,
      transactions: real.transactions.map((t: Json) => ({
        meta: { ...t.meta, rewards: null },
        transaction: t.transaction,
        version: 'legacy',
      })),
    });
  });

  it('serves the getTransaction fixtures in blocks at their slots, linked to the block before', async () => {
    const node = await start();
    let parent = await result(node, 'getBlock', 100_000_000, FOLLOW);
    let parentSlot = 100_000_000;
    for (const path of HYPERLANE) {
      const tx = fixture(path);
      const block = await result(node, 'getBlock', tx.slot, { ...FOLLOW, rewards: true });
      expect(block.transactions).toEqual([{ meta: tx.meta, transaction: tx.transaction, version: 'legacy' }]);
      expect(block).toMatchObject({
        blockTime: tx.blockTime,
        parentSlot,
        previousBlockhash: parent.blockhash,
        blockHeight: parent.blockHeight + 1,
      });
      parent = block;
      parentSlot = tx.slot;
    }
    expect(await result(node, 'getSlot', { commitment: 'confirmed' })).toBe(parentSlot);
    expect(await result(node, 'getFirstAvailableBlock')).toBe(100_000_000);
  });

  it("answers skipped, missing and not yet available slots with agave's codes and texts", async () => {
    const chain = mainnetChain();
    const node = await start({ chain });
    const first = chain.tip;
    chain.skip(2);
    const announced = chain.produce([], { available: false });
    expect(announced.slot).toBe(first + 3);
    expect(await result(node, 'getSlot', { commitment: 'confirmed' })).toBe(first + 3);
    expect(await errorOf(node, 'getBlock', first + 1, FOLLOW)).toEqual({
      code: -32007,
      message: `Slot ${first + 1} was skipped, or missing due to ledger jump to recent snapshot`,
    });
    expect(await errorOf(node, 'getBlock', 99_999_999, FOLLOW)).toEqual({
      code: -32009,
      message: 'Slot 99999999 was skipped, or missing in long-term storage',
    });
    expect(await errorOf(node, 'getBlock', first + 3, FOLLOW)).toEqual({
      code: -32004,
      message: `Block not available for slot ${first + 3}`,
    });
    expect(await errorOf(node, 'getBlock', first + 4, FOLLOW)).toEqual({
      code: -32004,
      message: `Block not available for slot ${first + 4}`,
    });
    chain.release(first + 3);
    const block = await result(node, 'getBlock', first + 3, FOLLOW);
    expect(block).toMatchObject({ parentSlot: first, transactions: [] });
    // finalized (the default commitment) sees only slots 32 behind the tip.
    expect(await result(node, 'getSlot')).toBe(Math.max(100_000_000, first + 3 - 32));
    expect(await errorOf(node, 'getBlock', first + 3)).toEqual({ code: -32004, message: `Block not available for slot ${first + 3}` });
    expect(node.calls.getBlock).toBe(6);
  });

  it('refuses a v0 block without maxSupportedTransactionVersion (-32015), other encodings, processed, unknown methods', async () => {
    const chain = new SolanaChain({ firstSlot: 500 });
    const table = lookupTable('x', [addressOf('y')]);
    chain.addLookupTable(table.address, table.addresses);
    const v0 = solTransfer({ ledger: new Ledger() }, { from: keypair('t'), to: addressOf('y'), lamports: 1, table });
    chain.produce([v0.entry]);
    const node = await start({ chain });
    expect(await errorOf(node, 'getBlock', 500, { commitment: 'confirmed' })).toEqual({
      code: -32015,
      message:
        'Transaction version (0) is not supported by the requesting client. Please try the request again with the following configuration parameter: "maxSupportedTransactionVersion": 0',
    });
    expect((await result(node, 'getBlock', 500, FOLLOW)).transactions[0].version).toBe(0);
    expect(await errorOf(node, 'getBlock', 500, { ...FOLLOW, encoding: 'base64' })).toMatchObject({
      code: -32602,
      message: expect.stringContaining('json only'),
    });
    expect(await errorOf(node, 'getBlock', 500, { ...FOLLOW, commitment: 'processed' })).toEqual({
      code: -32602,
      message: 'Method does not support commitment below `confirmed`',
    });
    expect(await errorOf(node, 'getBlock', '500', FOLLOW)).toMatchObject({ code: -32602 });
    expect(await errorOf(node, 'getAccountInfo', 'x')).toEqual({ code: -32601, message: 'Method not found' });
    expect(node.calls.getAccountInfo).toBe(1);
  });

  it('answers the small methods', async () => {
    const node = await start();
    expect(await result(node, 'getHealth')).toBe('ok');
    expect(await result(node, 'getGenesisHash')).toBe('5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d');
    expect(Object.keys(await result(node, 'getVersion'))).toEqual(['feature-set', 'solana-core']);
    const tip = node.chain.at(node.chain.tip)!;
    expect(await result(node, 'getBlockHeight', { commitment: 'confirmed' })).toBe(tip.blockHeight);
  });

  it('answers a batch in order, errors in place, notifications left out; a bad body is a parse error', async () => {
    const node = await start();
    const { text } = await post(node, [
      { jsonrpc: '2.0', id: 'a', method: 'getSlot', params: [{ commitment: 'confirmed' }] },
      { jsonrpc: '2.0', method: 'getSlot' },
      { jsonrpc: '2.0', id: 'b', method: 'nope' },
      { jsonrpc: '2.0', id: 'c', method: 'getBlock', params: [322_600_797, FOLLOW] },
      { id: 'd', method: 'getSlot' },
    ]);
    const replies = JSON.parse(text) as Json[];
    expect(replies.map((r) => r.id)).toEqual(['a', 'b', 'c', 'd']);
    expect(replies[0]).toEqual({ jsonrpc: '2.0', result: 322_600_797, id: 'a' });
    expect(replies[1]).toEqual({ jsonrpc: '2.0', error: { code: -32601, message: 'Method not found' }, id: 'b' });
    expect(replies[2]!.result.transactions[0].transaction.signatures).toEqual(fixture(HYPERLANE[2]!).transaction.signatures);
    expect(replies[3]!.error).toEqual({ code: -32600, message: 'Invalid request' });
    expect(JSON.parse((await post(node, '{oops')).text)).toEqual({
      jsonrpc: '2.0',
      error: { code: -32700, message: 'Parse error' },
      id: null,
    });
    expect(node.calls.getSlot).toBe(2);
  });

  it('notifies slot subscribers of each new slot and stops after slotUnsubscribe', async () => {
    const chain = new SolanaChain({ firstSlot: 1000 });
    chain.produce();
    const node = await start({ chain });
    const socket = new WebSocket(node.wsUrl!);
    const messages: Json[] = [];
    const next = (): Promise<Json> => new Promise((resolve) => socket.once('message', (d) => resolve(JSON.parse(String(d)) as Json)));
    await new Promise((resolve) => socket.once('open', resolve));
    let reply = next();
    socket.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'slotSubscribe' }));
    const subscribed = await reply;
    expect(subscribed).toEqual({ jsonrpc: '2.0', result: expect.any(Number), id: 1 });
    socket.on('message', (d) => messages.push(JSON.parse(String(d)) as Json));
    chain.skip();
    chain.produce();
    chain.produce([], { available: false });
    await expect.poll(() => messages.length).toBe(2);
    expect(messages).toEqual([
      {
        jsonrpc: '2.0',
        method: 'slotNotification',
        params: { result: { parent: 1000, root: 1000, slot: 1002 }, subscription: subscribed.result },
      },
      {
        jsonrpc: '2.0',
        method: 'slotNotification',
        params: { result: { parent: 1002, root: 1000, slot: 1003 }, subscription: subscribed.result },
      },
    ]);
    reply = new Promise((resolve) => socket.once('message', (d) => resolve(JSON.parse(String(d)) as Json)));
    socket.send(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'slotUnsubscribe', params: [subscribed.result] }));
    expect(await reply).toEqual({ jsonrpc: '2.0', result: true, id: 2 });
    expect(node.subscriptions()).toBe(0);
    chain.produce();
    await new Promise((r) => setTimeout(r, 50));
    expect(messages).toHaveLength(3);
    expect(node.calls).toMatchObject({ slotSubscribe: 1, slotUnsubscribe: 1 });
    socket.close();
  });

  it('without WebSocket a subscription cannot connect', async () => {
    const node = await start({ ws: false });
    expect(node.wsUrl).toBeUndefined();
    const socket = new WebSocket(`ws://127.0.0.1:${node.port}`);
    await expect(new Promise((resolve, reject) => (socket.once('open', resolve), socket.once('error', reject)))).rejects.toThrow();
  });

  it('a fork replaces the slots from S on: new blockhashes, parent links kept', async () => {
    const chain = new SolanaChain({ firstSlot: 2000 });
    const ctx: BuildContext = { ledger: new Ledger() };
    for (let i = 0; i < 6; i++) chain.produce([solTransfer(ctx, { from: keypair('f', i), to: addressOf('g'), lamports: 1 }).entry]);
    const node = await start({ chain });
    const before = await Promise.all([2000, 2001, 2002, 2003, 2004, 2005].map((s) => result(node, 'getBlock', s, FOLLOW)));
    const dropped = chain.fork(2003, [[solTransfer(ctx, { from: keypair('f', 9), to: addressOf('h'), lamports: 2 }).entry], 'skip', []]);
    expect(dropped.map((b) => b.slot)).toEqual([2003, 2004, 2005]);
    expect(await result(node, 'getSlot', { commitment: 'confirmed' })).toBe(2005);
    expect(await errorOf(node, 'getBlock', 2004, FOLLOW)).toMatchObject({ code: -32007 });
    const after = await Promise.all([2000, 2001, 2002, 2003, 2005].map((s) => result(node, 'getBlock', s, FOLLOW)));
    expect(after.slice(0, 3)).toEqual(before.slice(0, 3));
    expect(after[3].blockhash).not.toBe(before[3].blockhash);
    expect(after[4].blockhash).not.toBe(before[5].blockhash);
    // Each block names the one below it, by slot and hash, and counts one more block.
    const bySlot = new Map([2000, 2001, 2002, 2003, 2005].map((s, i) => [s, after[i]]));
    for (const [slot, b] of bySlot) {
      if (slot === 2000) continue;
      const p = bySlot.get(b.parentSlot)!;
      expect(b.previousBlockhash).toBe(p.blockhash);
      expect(b.blockHeight).toBe(p.blockHeight + 1);
    }
    expect(after[4].parentSlot).toBe(2003);
  });
});

describe('bench slots', () => {
  it('3,000 transactions a slot, two in three votes, unique signatures across slots, mainnet-size JSON', async () => {
    const pool = benchPool({ votes: 30, others: 21 });
    const { chain } = benchChain({ pool, slots: 3, start: 7000, skipEvery: 2 });
    expect(chain.slots().map((b) => b.slot)).toEqual([7000, 7001, 7003]);
    const node = await start({ chain, prerender: true });
    const { text } = await post(node, { jsonrpc: '2.0', id: 1, method: 'getBlock', params: [7003, FOLLOW] });
    expect(text.length).toBeGreaterThan(3_000_000);
    const block = (JSON.parse(text) as Json).result;
    const txs = block.transactions as Json[];
    expect(txs).toHaveLength(3000);
    const votes = txs.filter((t) => t.transaction.message.accountKeys.includes(VOTE_PROGRAM));
    expect(votes).toHaveLength(2000);
    const other = await result(node, 'getBlock', 7001, FOLLOW);
    const signatures = new Set([...txs, ...other.transactions].map((t: Json) => t.transaction.signatures[0]));
    expect(signatures.size).toBe(6000);
    expect([...signatures].every((s) => bs58.decode(s).length === 64)).toBe(true);
    expect(txs.filter((t) => t.version === 0).length).toBeGreaterThan(0);
    expect(txs.filter((t) => t.meta.err !== null).length).toBeGreaterThan(0);
    // The served transactions are the pool's, apart from the varied first signature.
    const picked = slotPick(pool, 7003);
    txs.forEach((t, i) =>
      expect({ ...t, transaction: { ...t.transaction, signatures: [] } }).toEqual({
        ...JSON.parse(JSON.stringify(picked[i]!.entry)),
        meta: { ...picked[i]!.entry.meta, rewards: null },
        transaction: { ...picked[i]!.entry.transaction, signatures: [] },
      }),
    );
    const watched = poolTouches(pool);
    for (const t of txs.filter((x) => !x.transaction.message.accountKeys.includes(VOTE_PROGRAM))) {
      const touched = touchesOf(t as never);
      expect(touched.accounts.some((a) => watched.accounts.has(a))).toBe(true);
    }
    expect(watched.programs).toContain(TOKEN_PROGRAM);
    expect(watched.mints.size).toBeGreaterThan(1);
  });

  it('answers concurrent calls right while reusing answer buffers (a cache of one answer)', async () => {
    const pool = benchPool({ votes: 6, others: 7 });
    const { chain } = benchChain({ pool, slots: 4, start: 9000, txsPerSlot: 300 });
    const node = await start({ chain, cacheSize: 1 });
    for (let round = 0; round < 3; round++) {
      const slots = [9000, 9001, 9002, 9003, 9001, 9000];
      const blocks = await Promise.all(slots.map((s) => result(node, 'getBlock', s, FOLLOW)));
      blocks.forEach((b, i) => {
        expect(b.blockhash).toBe(chain.at(slots[i]!)!.blockhash);
        expect(b.transactions).toHaveLength(300);
      });
    }
  });
});
