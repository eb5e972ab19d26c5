import { describe, expect, it } from 'vitest';
import { prepareSolanaBlock, type PreparedSolanaBlock } from '../../../../engine/solana/prepared.js';
import { SolRecordView, encodeSolRecord } from '../../../../engine/solana/record.js';
import { SolanaScanError, scanSolanaBlock, type SolBlock, type SolTransaction } from '../../../../engine/solana/scan.js';
import { FAMILIES } from '../../../../app/families.js';
import { familyTask } from '../../../../app/family-tasks.js';
import { BLOCK_100M, BLOCK_100M_PARSED, answerOf, envelope, fixtureBlock, fixtureText, isVote, keysOf, type JsonTx } from './reader.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
const SLOT = 100_000_000;

/** What the record must give back of a transaction, read from its JSON alone. */
function expected(t: JsonTx): SolTransaction {
  const ix = (i: any) => ({ programIdIndex: i.programIdIndex, accounts: i.accounts, data: i.data, stackHeight: i.stackHeight ?? null });
  const loaded = t.meta.loadedAddresses ?? { writable: [], readonly: [] };
  return {
    signature: t.transaction.signatures[0],
    fee: t.meta.fee,
    err: t.meta.err === null ? null : JSON.stringify(t.meta.err),
    version: t.version ?? 'legacy',
    accountKeys: keysOf(t),
    staticKeys: t.transaction.message.accountKeys.length,
    loadedWritable: loaded.writable.length,
    instructions: t.transaction.message.instructions.map(ix),
    innerInstructions:
      t.meta.innerInstructions === null || t.meta.innerInstructions === undefined
        ? null
        : t.meta.innerInstructions.map((g: any) => ({ index: g.index, instructions: g.instructions.map(ix) })),
    preTokenBalances: t.meta.preTokenBalances ?? null,
    postTokenBalances: t.meta.postTokenBalances ?? null,
  };
}

/** err as the scan keeps it (the node's text) compared as a value. */
const asValue = (t: SolTransaction) => ({ ...t, err: t.err === null ? null : JSON.parse(t.err) });

describe('the getBlock scanner', () => {
  it('reads a block and each transaction as JSON.parse reads them', () => {
    const json = fixtureBlock();
    const block = scanSolanaBlock(SLOT, answerOf(json)) as SolBlock;
    expect({ ...block, transactions: [] }).toEqual({
      slot: SLOT,
      blockhash: json.blockhash,
      previousBlockhash: json.previousBlockhash,
      parentSlot: 99_999_999,
      blockHeight: 89_586_871,
      blockTime: 1_633_504_705,
      transactions: [],
    });
    expect(block.transactions.length).toBe(14);
    block.transactions.forEach((t, i) => expect(asValue(t)).toEqual(asValue(expected(json.transactions[i]!))));
    // The bare result as the node's bytes (not re-serialized): the same block.
    const bare = scanSolanaBlock(SLOT, envelope(`"result":${fixtureText(BLOCK_100M)}`)) as SolBlock;
    expect({ ...bare, transactions: bare.transactions.map(asValue) }).toEqual({
      ...block,
      transactions: block.transactions.slice(0, 10).map(asValue),
    });
    // The v0 transaction's lookup-table keys follow its static keys.
    const v0 = block.transactions[13]!;
    expect([v0.version, v0.accountKeys.length - v0.staticKeys, v0.loadedWritable]).toEqual([0, 18, 8]);
  });

  it('tells a null result and the node errors apart', () => {
    expect(scanSolanaBlock(5, envelope('"result":null'))).toBeNull();
    for (const [code, message] of [
      [-32007, 'Slot 5 was skipped, or missing due to ledger jump to recent snapshot'],
      [-32009, 'Slot 5 was skipped, or missing in long-term storage'],
      [-32004, 'Block not available for slot 5'],
    ] as const) {
      expect(scanSolanaBlock(5, envelope(`"error":{"code":${code},"message":${JSON.stringify(message)}}`))).toEqual({
        error: { code, message },
      });
      expect(prepareSolanaBlock({ slot: 5, block: envelope(`"error":{"code":${code},"message":"x","data":{"a":[1]}}`) })).toEqual({
        error: { code, message: 'x' },
      });
    }
    expect(prepareSolanaBlock({ slot: 5, block: envelope('"result":null') })).toBeNull();
  });

  it('refuses what is not a json-encoded full getBlock answer', () => {
    for (const body of [
      '{"jsonrpc":"2.0","id":1}',
      '{"result":{"blockhash":"x"',
      '[1]',
      '{"result":{"blockhash":"a","previousBlockhash":"b","parentSlot":1}}',
    ]) {
      expect(() => scanSolanaBlock(1, Buffer.from(body))).toThrow(SolanaScanError);
    }
    expect(() => scanSolanaBlock(SLOT, envelope(`"result":${fixtureText(BLOCK_100M_PARSED)}`))).toThrow(/jsonParsed/);
    const sigsOnly = { ...fixtureBlock(), transactions: undefined, signatures: ['x'] };
    expect(() => scanSolanaBlock(SLOT, answerOf(sigsOnly))).toThrow(/transactionDetails must be full/);
  });
});

describe('the slot record', () => {
  it('gives back every fixture transaction, decoded alone, and the header', () => {
    const json = fixtureBlock();
    const prepared = prepareSolanaBlock({ slot: SLOT, block: answerOf(json) }) as PreparedSolanaBlock;
    const view = SolRecordView.of(prepared.record);
    expect(view.header).toEqual({
      slot: SLOT,
      parentSlot: 99_999_999,
      blockHeight: 89_586_871,
      blockTime: 1_633_504_705,
      blockhash: json.blockhash,
      previousBlockhash: json.previousBlockhash,
    });
    expect(view.txCount).toBe(14);
    // Backwards, so each is decoded on its own.
    for (let i = view.txCount - 1; i >= 0; i--) {
      const t = json.transactions[i]!;
      expect(asValue(view.tx(i))).toEqual(asValue(expected(t)));
      expect(view.signature(i)).toBe(t.transaction.signatures[0]);
      expect(view.isVote(i)).toBe(isVote(t));
    }
    expect(view.decoded).toBe(14);
    // Written from a whole scanned block rather than a transaction at a time: the same transactions.
    const whole = SolRecordView.of(encodeSolRecord(scanSolanaBlock(SLOT, answerOf(json)) as SolBlock));
    expect([whole.header, whole.txCount]).toEqual([view.header, view.txCount]);
    for (let i = 0; i < whole.txCount; i++) expect(whole.tx(i)).toEqual(view.tx(i));
    // Failed transactions keep their err: the two failed votes of slot 100,000,000.
    expect([8, 9].map((i) => JSON.parse(view.tx(i).err!))).toEqual([
      { InstructionError: [0, { Custom: 0 }] },
      { InstructionError: [0, { Custom: 0 }] },
    ]);
    // The jsonParsed copy of the block names the same keys (cross-check of the fixture reading).
    const parsed = JSON.parse(fixtureText(BLOCK_100M_PARSED));
    for (let i = 0; i < 10; i++)
      expect(view.tx(i).accountKeys).toEqual(parsed.transactions[i].transaction.message.accountKeys.map((k: any) => k.pubkey));
    expect(prepared).toMatchObject({
      slot: SLOT,
      hash: json.blockhash,
      parentSlot: 99_999_999,
      parentHash: json.previousBlockhash,
      blockHeight: 89_586_871,
      blockTime: 1_633_504_705,
      txCount: 14,
    });
  });

  it('keeps what the node left null or unknown, and a slot without transactions', () => {
    const json = fixtureBlock();
    json.blockHeight = null;
    json.blockTime = null;
    json.previousBlockhash = '11111111111111111111111111111111';
    const t = json.transactions[3]!;
    t.meta.innerInstructions = null;
    t.meta.preTokenBalances = null;
    delete t.meta.postTokenBalances;
    t.meta.err = { InsufficientFundsForRent: { account_index: 2 } };
    json.transactions[4]!.meta.postTokenBalances = [
      {
        accountIndex: 1,
        mint: t.transaction.message.accountKeys[0],
        uiTokenAmount: { amount: '0', decimals: 0, uiAmount: null, uiAmountString: '0' },
      },
    ];
    const view = SolRecordView.of((prepareSolanaBlock({ slot: 7, block: answerOf(json) }) as PreparedSolanaBlock).record);
    expect(view.header).toMatchObject({
      slot: 7,
      blockHeight: null,
      blockTime: null,
      previousBlockhash: '11111111111111111111111111111111',
    });
    for (const i of [3, 4]) expect(asValue(view.tx(i))).toEqual(asValue(expected(json.transactions[i]!)));
    const empty = prepareSolanaBlock({ slot: 8, block: answerOf({ ...json, transactions: [] }) }) as PreparedSolanaBlock;
    expect([empty.txCount, SolRecordView.of(empty.record).txCount]).toEqual([0, 0]);
    expect(() => SolRecordView.of(empty.record.subarray(0, empty.record.length - 1))).toThrow(/offset table/);
  });

  it('comes out of the worker task with its arrays moved', () => {
    const solanaTask = (input: unknown) => familyTask(FAMILIES)({ name: 'solana', input }) as object;
    const out = solanaTask({ answers: { slot: SLOT, block: answerOf(fixtureBlock()) } });
    // movable() wraps the value for piscina: the prepared block is its value.
    const value = Object.getOwnPropertySymbols(out)
      .map((s) => (out as any)[s])
      .find((v) => v?.record !== undefined) as PreparedSolanaBlock;
    expect(value.txCount).toBe(14);
    expect(value.record.byteOffset).toBe(0);
    expect(value.record.byteLength).toBe(value.record.buffer.byteLength);
    expect(value.probe.byteLength).toBe(value.probe.buffer.byteLength);
    expect(solanaTask({ answers: { slot: 1, block: envelope('"error":{"code":-32004,"message":"m"}') } })).toEqual({
      error: { code: -32004, message: 'm' },
    });
  });
});
