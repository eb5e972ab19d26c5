import { describe, expect, it } from 'vitest';
import { EVERY } from '../../../../engine/match/filter-set.js';
import type { StoredStream } from '../../../../engine/streams/model.js';
import { solanaBody } from '../../../../engine/solana/body.js';
import { prepareSolanaBlock, type PreparedSolanaBlock } from '../../../../engine/solana/prepared.js';
import { SolRecordView } from '../../../../engine/solana/record.js';
import { solanaTxIndexes, solanaWebhookBuilder } from '../../../../engine/solana/webhook.js';
import { answerOf, fixtureBlock, isVote, keysOf, type JsonTx } from './reader.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
const SLOT = 100_000_000;
const json = fixtureBlock();
const prepared = prepareSolanaBlock({ slot: SLOT, block: answerOf(json) }) as PreparedSolanaBlock;

/** The body's transaction, written from the transaction's JSON and the notes' field list (§2.4) alone. */
function bodyTx(t: JsonTx): Record<string, unknown> {
  const keys = keysOf(t);
  const ix = (i: any) => ({ programId: keys[i.programIdIndex], accounts: i.accounts.map((a: number) => keys[a]), data: i.data });
  return {
    signature: t.transaction.signatures[0],
    slot: String(SLOT),
    blockTime: json.blockTime,
    fee: String(t.meta.fee),
    err: t.meta.err,
    accountKeys: keys,
    instructions: t.transaction.message.instructions.map(ix),
    innerInstructions: t.meta.innerInstructions.map((g: any) => ({
      index: g.index,
      instructions: g.instructions.map((i: any) => ({ ...ix(i), stackHeight: i.stackHeight ?? null })),
    })),
    preTokenBalances: t.meta.preTokenBalances,
    postTokenBalances: t.meta.postTokenBalances,
  };
}

const stream = { id: 'sol-1', tag: 'wallets' } as StoredStream;

describe('the Solana webhook body', () => {
  it('is the hosted SolanaWebhook, field by field, for every fixture transaction', () => {
    const all = json.transactions.map((_, i) => i);
    const body = JSON.parse(
      JSON.stringify(
        solanaBody(SolRecordView.of(prepared.record), { streamId: 'sol-1', tag: 'wallets', confirmed: false, txIndexes: all }),
      ),
    );
    expect(Object.keys(body)).toEqual(['confirmed', 'chainId', 'network', 'streamId', 'tag', 'retries', 'block', 'transactions']);
    expect({ ...body, transactions: undefined }).toEqual({
      confirmed: false,
      chainId: 'solana_mainnet',
      network: 'mainnet',
      streamId: 'sol-1',
      tag: 'wallets',
      retries: 0,
      block: {
        slot: '100000000',
        blockHash: json.blockhash,
        blockHeight: '89586871',
        blockTime: 1633504705,
        parentSlot: '99999999',
        previousBlockHash: json.previousBlockhash,
      },
      transactions: undefined,
    });
    body.transactions.forEach((t: Record<string, unknown>, i: number) => expect(t).toEqual(bodyTx(json.transactions[i]!)));
    // Failed votes carry their err; lookup-table keys follow the static ones; inner instructions name addresses.
    expect(body.transactions[8].err).toEqual({ InstructionError: [0, { Custom: 0 }] });
    expect(body.transactions[13].accountKeys.slice(-18)).toEqual([
      ...json.transactions[13]!.meta.loadedAddresses.writable,
      ...json.transactions[13]!.meta.loadedAddresses.readonly,
    ]);
    expect(body.transactions[11].innerInstructions[0].instructions[0]).toMatchObject({
      programId: 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA',
      stackHeight: 2,
    });
    expect(body.transactions[6].innerInstructions[0].instructions[0].stackHeight).toBeNull();
  });

  it('is built per stream from the walk’s refs: allAddresses adds every transaction but votes, in block order', async () => {
    const build = solanaWebhookBuilder();
    const block = { chain: 'solana', number: SLOT, bytes: prepared.record, confirmed: true };
    const sent = async (refs: number[]) => ((await build(block, stream, refs)) as any)?.transactions.map((t: any) => t.signature) ?? null;
    const sig = (i: number) => json.transactions[i]!.transaction.signatures[0];
    const nonVotes = json.transactions.flatMap((t, i) => (isVote(t) ? [] : [i]));
    expect(nonVotes).toEqual([3, 4, 6, 7, 10, 11, 12, 13]);
    expect(await sent([11, 13])).toEqual([sig(11), sig(13)]);
    expect(await sent([EVERY])).toEqual(nonVotes.map(sig));
    expect(await sent([0, 9, EVERY])).toEqual([0, ...nonVotes.slice(0, 5), 9, ...nonVotes.slice(5)].sort((a, b) => a - b).map(sig));
    expect(await sent([])).toBeNull();
    const body = (await build(block, stream, [12])) as any;
    expect([body.confirmed, body.streamId, body.tag]).toEqual([true, 'sol-1', 'wallets']);
    // A slot of votes only: an allAddresses stream gets nothing.
    expect(solanaTxIndexes({ txCount: 3, isVote: () => true }, [EVERY])).toEqual([]);
  });

  it('says null for a block height the node does not give', () => {
    const j = fixtureBlock();
    j.blockHeight = null;
    const p = prepareSolanaBlock({ slot: SLOT, block: answerOf(j) }) as PreparedSolanaBlock;
    expect(solanaBody(SolRecordView.of(p.record), { streamId: 's', tag: '', confirmed: true, txIndexes: [] }).block.blockHeight).toBeNull();
  });
});
