import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  Ledger,
  TOKEN_PROGRAM,
  SYSTEM_PROGRAM,
  VOTE_PROGRAM,
  COMPUTE_BUDGET_PROGRAM,
  addressOf,
  failedTransfer,
  keypair,
  lookupTable,
  solTransfer,
  splTransfer,
  tokenAccountOf,
  voteTx,
  type BuiltTx,
  type Mint,
  type TxEntry,
} from './kit/solana-rpc/build.js';
import { SolanaChain } from './kit/solana-rpc/chain.js';
import { FIXTURE_BLOCK_SLOT, FIXTURE_TRANSACTIONS, entryOf, fixtureBlock, fixtureTransaction } from './kit/solana-rpc/fixtures.js';
import { startSolanaRpc, type SolanaRpc } from './kit/solana-rpc/server.js';
import { startChainpost, stopAndClean, until, type Running } from './helpers.js';
import { startReceiver, type Received } from './receiver.js';

/**
 * Solana streams end to end: the server binary follows the stand-in Solana
 * node (test/kit/solana-rpc/) over JSON-RPC and its slotSubscribe WebSocket, and a
 * real receiver gets each slot's webhook, unconfirmed then confirmed 4 slots
 * deep, for every selector, on built slots and on real mainnet transactions,
 * across skipped slots, a fork and a restart. Every body is checked against
 * this file's own reading of the stand-in's getBlock JSON for the slot.
 */
type Receiver = Awaited<ReturnType<typeof startReceiver>>;
type Body = Received['body'];

const CONFIRMATIONS = 4;

let node: SolanaRpc;
let rx: Receiver;
let s: Running;
const chain = new SolanaChain({ firstSlot: FIXTURE_BLOCK_SLOT - 1 });
const ledger = new Ledger();
const env = (): Record<string, string> => ({
  CHAINPOST_SOLANA_RPC: node.url,
  CHAINPOST_SOLANA_WS: node.wsUrl!,
  // The default interval: the server hears the stand-in's slots (CHAINPOST_SOLANA_WS), polling is the safety net.
  CHAINPOST_SOLANA_POLL_MS: '400',
  CHAINPOST_CONFIRMATIONS: `solana=${CONFIRMATIONS}`,
  CHAINPOST_RATE_LIMIT: '0',
});

// ---- an independent reading of getBlock's json encoding (what the body must say) ----

interface JsonIx {
  programIdIndex: number;
  accounts: number[];
  data: string;
  stackHeight?: number | null;
}
interface JsonBalance {
  mint: string;
  owner?: string;
}
interface JsonTx {
  meta: {
    err: unknown;
    fee: number;
    innerInstructions?: Array<{ index: number; instructions: JsonIx[] }> | null;
    loadedAddresses?: { writable: string[]; readonly: string[] };
    preTokenBalances?: JsonBalance[] | null;
    postTokenBalances?: JsonBalance[] | null;
  };
  transaction: { signatures: string[]; message: { accountKeys: string[]; instructions: JsonIx[] } };
}
interface JsonBlock {
  blockHeight: number | null;
  blockTime: number | null;
  blockhash: string;
  parentSlot: number;
  previousBlockhash: string;
  transactions: JsonTx[];
}

/** getBlock as chainpost asks it, straight from the stand-in over HTTP, parsed by JSON.parse. */
async function getBlock(slot: number): Promise<JsonBlock> {
  const res = await fetch(node.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'getBlock',
      params: [
        slot,
        { encoding: 'json', transactionDetails: 'full', maxSupportedTransactionVersion: 0, rewards: false, commitment: 'confirmed' },
      ],
    }),
  });
  const reply = (await res.json()) as { result?: JsonBlock; error?: unknown };
  if (reply.result === undefined) throw new Error(`getBlock ${slot}: ${JSON.stringify(reply.error)}`);
  return reply.result;
}

/** Static keys, then those loaded from lookup tables: writable, then readonly (the order indexes count in). */
const keysOf = (t: JsonTx): string[] => [
  ...t.transaction.message.accountKeys,
  ...(t.meta.loadedAddresses?.writable ?? []),
  ...(t.meta.loadedAddresses?.readonly ?? []),
];
const balancesOf = (t: JsonTx): JsonBalance[] => [...(t.meta.preTokenBalances ?? []), ...(t.meta.postTokenBalances ?? [])];
const programsOf = (t: JsonTx): string[] => {
  const keys = keysOf(t);
  return [...t.transaction.message.instructions, ...(t.meta.innerInstructions ?? []).flatMap((g) => g.instructions)].map(
    (ix) => keys[ix.programIdIndex]!,
  );
};
/** The vote rule: every top-level instruction calls the Vote program (ComputeBudget aside), one at least. */
const isVote = (t: JsonTx): boolean => {
  const keys = keysOf(t);
  const programs = t.transaction.message.instructions.map((ix) => keys[ix.programIdIndex]!);
  return programs.includes(VOTE_PROGRAM) && programs.every((p) => p === VOTE_PROGRAM || p === COMPUTE_BUDGET_PROGRAM);
};

interface Selector {
  addresses?: string[];
  programIds?: string[];
  mintAddresses?: string[];
  allAddresses?: boolean;
}

/** Whether a stream of `sel` gets the transaction, by the Matching section. */
function matches(t: JsonTx, sel: Selector): boolean {
  const has = (xs: string[], wanted: string[] | undefined): boolean => (wanted ?? []).some((w) => xs.includes(w));
  if (isVote(t)) return has([VOTE_PROGRAM], sel.programIds);
  return (
    sel.allAddresses === true ||
    has(keysOf(t), sel.addresses) ||
    has(
      balancesOf(t).map((b) => b.owner ?? ''),
      sel.addresses,
    ) ||
    has(programsOf(t), sel.programIds) ||
    has(
      balancesOf(t).map((b) => b.mint),
      sel.mintAddresses,
    )
  );
}

const signaturesOf = (block: JsonBlock, sel: Selector): string[] =>
  block.transactions.filter((t) => matches(t, sel)).map((t) => t.transaction.signatures[0]!);

/** The webhook body for the slot's transactions `sel` matches, read from the JSON (the hosted service's SolanaWebhook shape). */
function expectedBody(
  slot: number,
  block: JsonBlock,
  sel: Selector,
  envelope: { streamId: string; tag: string; confirmed: boolean },
): Record<string, unknown> {
  const slotText = String(slot);
  return {
    confirmed: envelope.confirmed,
    chainId: 'solana_mainnet',
    network: 'mainnet',
    streamId: envelope.streamId,
    tag: envelope.tag,
    retries: 0,
    block: {
      slot: slotText,
      blockHash: block.blockhash,
      blockHeight: block.blockHeight === null ? null : String(block.blockHeight),
      blockTime: block.blockTime,
      parentSlot: String(block.parentSlot),
      previousBlockHash: block.previousBlockhash,
    },
    transactions: block.transactions
      .filter((t) => matches(t, sel))
      .map((t) => {
        const keys = keysOf(t);
        const ix = (i: JsonIx) => ({ programId: keys[i.programIdIndex], accounts: i.accounts.map((a) => keys[a]), data: i.data });
        return {
          signature: t.transaction.signatures[0],
          slot: slotText,
          blockTime: block.blockTime,
          fee: String(t.meta.fee),
          err: t.meta.err,
          accountKeys: keys,
          instructions: t.transaction.message.instructions.map(ix),
          // Resolved as top-level ones are (engine/solana/body.ts's documented choice), with the call depth.
          innerInstructions:
            t.meta.innerInstructions == null
              ? null
              : t.meta.innerInstructions.map((g) => ({
                  index: g.index,
                  instructions: g.instructions.map((i) => ({ ...ix(i), stackHeight: i.stackHeight ?? null })),
                })),
          preTokenBalances: t.meta.preTokenBalances ?? null,
          postTokenBalances: t.meta.postTokenBalances ?? null,
        };
      }),
  };
}

// ---- the server, its streams and what the receiver got ----

const head = async (): Promise<number> =>
  ((await s.call('/health')).body.chains as Array<{ chain: string; head: number }>).find((c) => c.chain === 'solana')?.head ?? -1;
/** Waits until the server has stored the stand-in's tip. */
const caughtUp = async (): Promise<void> => {
  expect(await until(async () => (await head()) === chain.tip, 20_000)).toBe(true);
};

interface Stream {
  id: string;
  tag: string;
  sel: Selector;
}

async function createStream(sel: Selector, tag = 'sol'): Promise<Stream> {
  const { addresses, ...fields } = sel;
  const res = await s.call('/streams/solana', { method: 'PUT', json: { webhookUrl: rx.url, description: 'e2e', tag, ...fields } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const id = res.body.id as string;
  if (addresses !== undefined) {
    const added = await s.call(`/streams/solana/${id}/address`, { method: 'POST', json: { address: addresses } });
    expect(added.status, JSON.stringify(added.body)).toBe(200);
  }
  return { id, tag, sel };
}
const remove = async (...streams: Stream[]): Promise<void> => {
  for (const st of streams) expect((await s.call(`/streams/solana/${st.id}`, { method: 'DELETE' })).status).toBe(200);
};

const webhooksOf = (st: Stream): Body[] =>
  rx
    .webhooks()
    .filter((r) => r.body.streamId === st.id)
    .map((r) => r.body);
const at = (st: Stream, slot: number, confirmed: boolean): Body[] =>
  webhooksOf(st).filter((b) => b.block.slot === String(slot) && b.confirmed === confirmed);
const slotsOf = (st: Stream, confirmed: boolean): number[] =>
  webhooksOf(st)
    .filter((b) => b.confirmed === confirmed)
    .map((b) => Number(b.block.slot));
const sigs = (b: Body): string[] => b.transactions.map((t: { signature: string }) => t.signature);

/** Waits for the stream's delivery of `slot` (unconfirmed or confirmed); the first. */
async function delivered(st: Stream, slot: number, confirmed: boolean): Promise<Body> {
  expect(
    await until(() => at(st, slot, confirmed).length > 0, 15_000),
    `stream ${JSON.stringify(st.sel)}: slot ${slot}, confirmed ${confirmed}`,
  ).toBe(true);
  return at(st, slot, confirmed)[0]!;
}

/** Empty slots, so the tip moves past what came before (and confirms it). */
const fillers = (n = CONFIRMATIONS): void => {
  for (let i = 0; i < n; i++) chain.produce([]);
};

/** Built transactions for the next slot (its recent blockhash is the tip's). */
const ctx = () => ({ ledger, recentBlockhash: chain.recentBlockhash });
const entries = (txs: BuiltTx[]): TxEntry[] => txs.map((t) => t.entry);

beforeAll(async () => {
  // The parent of mainnet slot 100,000,000, so the real block links to it unchanged.
  const real = fixtureBlock();
  chain.put({
    slot: real.parentSlot,
    blockHeight: real.blockHeight! - 1,
    blockTime: real.blockTime,
    blockhash: real.previousBlockhash,
    parentSlot: real.parentSlot - 1,
    previousBlockhash: addressOf('before-100m'),
    rewards: [],
    transactions: [],
  });
  node = await startSolanaRpc({ chain });
  rx = await startReceiver();
  s = await startChainpost(env());
  await caughtUp();
}, 30_000);

afterAll(async () => {
  await stopAndClean(s);
  await rx?.close();
  await node?.close();
});

describe('Solana streams, delivered', () => {
  it('real mainnet slot 100,000,000 and the hyperlane transactions: each selector, votes, failed transactions, bodies field by field', async () => {
    const real = fixtureBlock();
    const hyper = FIXTURE_TRANSACTIONS.map(fixtureTransaction);
    // Keys named from the fixture's own JSON: a non-vote's first static key, a program called only as an inner
    // instruction in the USDC dispatch (SPL Token), its USDC mint, and the Hyperlane mailbox, called at the top
    // level by the delivery and by CPI in both dispatches. (No fixture has a token-balance owner that is not
    // an account key of its transaction: the built slots below have that case.)
    const nonVote = real.transactions.find((t) =>
      t.transaction.message.instructions.every((ix) => t.transaction.message.accountKeys[ix.programIdIndex] !== VOTE_PROGRAM),
    )!;
    const usdcTx = hyper[1]!;
    const usdcKeys = usdcTx.transaction.message.accountKeys;
    expect(usdcTx.transaction.message.instructions.map((ix) => usdcKeys[ix.programIdIndex])).not.toContain(TOKEN_PROGRAM);
    const mailbox = hyper[0]!.transaction.message.accountKeys[hyper[0]!.transaction.message.instructions[1]!.programIdIndex]!;
    const streams = {
      all: await createStream({ allAddresses: true }, 'all'),
      votes: await createStream({ programIds: [VOTE_PROGRAM] }, 'votes'),
      address: await createStream({ addresses: [nonVote.transaction.message.accountKeys[0]!] }, 'address'),
      inner: await createStream({ programIds: [TOKEN_PROGRAM] }, 'inner'),
      mint: await createStream({ mintAddresses: [usdcTx.meta.postTokenBalances![0]!.mint] }, 'mint'),
      mailbox: await createStream({ programIds: [mailbox] }, 'mailbox'),
    };
    chain.put({
      slot: FIXTURE_BLOCK_SLOT,
      blockHeight: real.blockHeight,
      blockTime: real.blockTime,
      blockhash: real.blockhash,
      parentSlot: real.parentSlot,
      previousBlockhash: real.previousBlockhash,
      rewards: real.rewards ?? [],
      transactions: real.transactions.map(entryOf),
    });
    const slots = [FIXTURE_BLOCK_SLOT, ...hyper.map((t) => chain.produce([entryOf(t)], { blockTime: t.blockTime }).slot)];
    fillers();
    await caughtUp();
    const blocks = await Promise.all(slots.map(getBlock));
    // The real block as the node serves it: 10 transactions, 6 votes, 2 failed.
    expect(blocks[0]!.transactions.length).toBe(10);
    expect(blocks[0]!.transactions.filter(isVote).length).toBe(6);
    for (const st of Object.values(streams)) {
      for (const [i, slot] of slots.entries()) {
        const want = signaturesOf(blocks[i]!, st.sel);
        if (want.length === 0) continue;
        for (const confirmed of [false, true])
          expect(await delivered(st, slot, confirmed)).toEqual(
            expectedBody(slot, blocks[i]!, st.sel, { streamId: st.id, tag: st.tag, confirmed }),
          );
      }
    }
    // What each stream got, slot by slot, from the fixtures' own listing (not the reading above).
    const sig = (t: { transaction: { signatures: string[] } }): string => t.transaction.signatures[0]!;
    expect(sigs(at(streams.votes, FIXTURE_BLOCK_SLOT, true)[0]!)).toEqual(
      real.transactions.filter((t) => t.transaction.message.accountKeys.includes(VOTE_PROGRAM)).map(sig),
    );
    expect(sigs(at(streams.all, FIXTURE_BLOCK_SLOT, true)[0]!)).toEqual(
      real.transactions.filter((t) => !t.transaction.message.accountKeys.includes(VOTE_PROGRAM)).map(sig),
    );
    expect(slotsOf(streams.all, true)).toEqual(slots);
    expect(slotsOf(streams.inner, true)).toEqual([FIXTURE_BLOCK_SLOT, slots[2], slots[3]]);
    expect(slotsOf(streams.mint, true)).toEqual([slots[2]]);
    expect(slotsOf(streams.mailbox, true)).toEqual(slots.slice(1));
    expect(slotsOf(streams.votes, true)).toEqual([FIXTURE_BLOCK_SLOT]);
    expect(slotsOf(streams.address, true)).toEqual([FIXTURE_BLOCK_SLOT]);
    // The real failed votes came to the vote stream with their err.
    expect(
      at(streams.votes, FIXTURE_BLOCK_SLOT, true)[0]!
        .transactions.filter((t: { err: unknown }) => t.err !== null)
        .map((t: { err: unknown }) => t.err),
    ).toEqual([{ InstructionError: [0, { Custom: 0 }] }, { InstructionError: [0, { Custom: 0 }] }]);
    // Every stream once per slot and phase.
    for (const st of Object.values(streams)) expect(webhooksOf(st).length).toBe(2 * new Set(slotsOf(st, true)).size);
    await remove(...Object.values(streams));
  });

  /** Wallets and keys of the built slots. */
  const w = (name: string) => keypair(`e2e-${name}`);
  const usdc: Mint = { address: addressOf('mint/e2e-usdc'), decimals: 6 };
  const bonk: Mint = { address: addressOf('mint/e2e-bonk'), decimals: 5 };
  const payProgram = addressOf('program/e2e-pay');

  it('built slots: static, lookup-table and token-owner addresses, top-level and CPI programs, mints, allAddresses, votes, failed transactions, OR; one webhook per slot, none without a match', async () => {
    const [alice, bob, carol, dave, erin, frank, gina, hank, ivan, judy, kim, lee, val, mona, nick] = [
      'alice',
      'bob',
      'carol',
      'dave',
      'erin',
      'frank',
      'gina',
      'hank',
      'ivan',
      'judy',
      'kim',
      'lee',
      'val',
      'mona',
      'nick',
    ].map(w);
    const tableA = lookupTable('e2e-a', [addressOf('filler/1'), dave!.address]);
    const tableB = lookupTable('e2e-b', [usdc.address, tokenAccountOf(judy!.address, usdc.address)]);
    // The bonk mint (readonly) and nick's token account (writable) loaded, in a CPI: inner accounts index loaded keys.
    const tableC = lookupTable('e2e-c', [tokenAccountOf(nick!.address, bonk.address), bonk.address]);
    for (const table of [tableA, tableB, tableC]) chain.addLookupTable(table.address, table.addresses);
    const streams = {
      staticKey: await createStream({ addresses: [bob!.address] }),
      loaded: await createStream({ addresses: [dave!.address] }),
      loadedReadonly: await createStream({ addresses: [bonk.address] }),
      owner: await createStream({ addresses: [frank!.address] }),
      top: await createStream({ programIds: [payProgram] }),
      cpi: await createStream({ programIds: [TOKEN_PROGRAM] }),
      mint: await createStream({ mintAddresses: [usdc.address] }),
      all: await createStream({ allAddresses: true }),
      votes: await createStream({ programIds: [VOTE_PROGRAM] }),
      voter: await createStream({ addresses: [val!.address] }),
      failed: await createStream({ addresses: [lee!.address] }),
      or: await createStream(
        { addresses: [bob!.address, val!.address], mintAddresses: [bonk.address], programIds: [SYSTEM_PROGRAM] },
        'or',
      ),
      nothing: await createStream({ addresses: [addressOf('nobody')] }),
    };
    const voteAccount = addressOf('vote-account/val');
    const vote = (n: number) =>
      voteTx(ctx(), { identity: val!, voteAccount, slot: chain.tip - n, hash: chain.recentBlockhash, timestamp: 1_750_000_000 + n });
    const built = [
      vote(0),
      solTransfer(ctx(), { from: alice!, to: bob!.address, lamports: 1_000, computeBudget: true }),
      solTransfer(ctx(), { from: carol!, to: dave!.address, lamports: 2_000, table: tableA }),
      splTransfer(ctx(), { owner: erin!, mint: usdc, to: frank!.address, amount: 5_000_000n }),
      splTransfer(ctx(), { owner: gina!, mint: bonk, to: hank!.address, amount: 7n, via: payProgram }),
      splTransfer(ctx(), { owner: ivan!, mint: usdc, to: judy!.address, amount: 1n, table: tableB }),
      failedTransfer(ctx(), { from: kim!, to: lee!.address, lamports: 10 }),
      vote(1),
      splTransfer(ctx(), { owner: mona!, mint: bonk, to: nick!.address, amount: 3n, via: payProgram, table: tableC }),
    ];
    // What the builders say each transaction is (their own inputs): the cases this test is about.
    expect(built[2]!.entry.meta.loadedAddresses!.writable).toEqual([dave!.address]);
    expect(built[2]!.entry.transaction.message.accountKeys).not.toContain(dave!.address);
    expect(built[3]!.touches.accounts).not.toContain(frank!.address);
    expect(built[3]!.touches.owners).toContain(frank!.address);
    const topPrograms = (b: BuiltTx): string[] =>
      b.entry.transaction.message.instructions.map((ix) => b.entry.transaction.message.accountKeys[ix.programIdIndex]!);
    expect(topPrograms(built[4]!)).not.toContain(TOKEN_PROGRAM);
    expect(built[4]!.entry.meta.innerInstructions![0]!.instructions[0]!.stackHeight).toBe(2);
    expect(built[5]!.entry.meta.loadedAddresses!.writable).toEqual([tokenAccountOf(judy!.address, usdc.address)]);
    expect(built[6]!.entry.meta.err).toEqual({ InstructionError: [0, { Custom: 1 }] });
    expect(built[8]!.entry.meta.loadedAddresses).toEqual({
      writable: [tokenAccountOf(nick!.address, bonk.address)],
      readonly: [bonk.address],
    });
    expect(built[8]!.entry.transaction.message.accountKeys).not.toContain(bonk.address);
    const slot = chain.produce(entries(built)).slot;
    // A slot only allAddresses (and SYSTEM in `or`) wants: a transfer between strangers.
    const other = chain.produce([solTransfer(ctx(), { from: w('xavier'), to: addressOf('yvonne'), lamports: 3 }).entry]).slot;
    fillers();
    await caughtUp();
    const block = await getBlock(slot);
    const signature = (i: number): string => built[i]!.signature;
    // Each stream's transactions, by construction.
    const want: Record<keyof typeof streams, number[]> = {
      staticKey: [1],
      loaded: [2],
      loadedReadonly: [4, 8],
      owner: [3],
      top: [4, 8],
      cpi: [3, 4, 5, 8],
      mint: [3, 5],
      all: [1, 2, 3, 4, 5, 6, 8],
      votes: [0, 7],
      voter: [],
      failed: [6],
      or: [1, 2, 4, 6, 8],
      nothing: [],
    };
    for (const [name, st] of Object.entries(streams) as Array<[keyof typeof streams, Stream]>) {
      // The independent reading agrees with the construction.
      expect(signaturesOf(block, st.sel), name).toEqual(want[name].map(signature));
      if (want[name].length === 0) continue;
      for (const confirmed of [false, true]) {
        const body = await delivered(st, slot, confirmed);
        expect(body, `${name} confirmed ${confirmed}`).toEqual(
          expectedBody(slot, block, st.sel, { streamId: st.id, tag: st.tag, confirmed }),
        );
      }
    }
    expect(await delivered(streams.all, other, true)).toEqual(
      expectedBody(other, await getBlock(other), streams.all.sel, { streamId: streams.all.id, tag: 'sol', confirmed: true }),
    );
    await delivered(streams.or, other, true);
    // The failed transfer, its err as the node gave it.
    expect(at(streams.failed, slot, false)[0]!.transactions[0]).toMatchObject({
      signature: signature(6),
      err: { InstructionError: [0, { Custom: 1 }] },
      fee: '5000',
    });
    // The v0 transaction's keys: static, then the loaded one.
    expect(at(streams.loaded, slot, false)[0]!.transactions[0].accountKeys.at(-1)).toBe(dave!.address);
    // The CPI: the Token program's transferChecked as the pay program's inner instruction.
    expect(at(streams.top, slot, false)[0]!.transactions[0].innerInstructions).toEqual([
      {
        index: 1,
        instructions: [
          {
            programId: TOKEN_PROGRAM,
            accounts: [
              tokenAccountOf(gina!.address, bonk.address),
              bonk.address,
              tokenAccountOf(hank!.address, bonk.address),
              gina!.address,
            ],
            data: expect.any(String),
            stackHeight: 2,
          },
        ],
      },
    ]);
    await new Promise((r) => setTimeout(r, 300));
    // One webhook per slot and phase; none for a slot without a match (the other slot, the empty ones, and streams matching nothing).
    for (const [name, st] of Object.entries(streams) as Array<[keyof typeof streams, Stream]>) {
      const expected = want[name].length === 0 ? [] : name === 'all' || name === 'or' ? [slot, other] : [slot];
      expect(slotsOf(st, false), name).toEqual(expected);
      expect(slotsOf(st, true), name).toEqual(expected);
    }
    await remove(...Object.values(streams));
  });

  it('confirmed:true only once the tip is 4 slots past the slot (woken by slotSubscribe)', async () => {
    expect(((await s.call('/health')).body.chains as Array<{ chain: string; wake: string }>).find((c) => c.chain === 'solana')!.wake).toBe(
      'websocket',
    );
    const to = w('depth');
    const st = await createStream({ addresses: [to.address] });
    const slot = chain.produce([solTransfer(ctx(), { from: w('payer-depth'), to: to.address, lamports: 1 }).entry]).slot;
    await delivered(st, slot, false);
    // The depth is in slot numbers (a skipped slot counts): the tip 3 slots past it is not enough, 4 is.
    chain.skip(1);
    fillers(CONFIRMATIONS - 2);
    await caughtUp();
    expect(chain.tip).toBe(slot + CONFIRMATIONS - 1);
    expect(await until(() => at(st, slot, true).length > 0, 500)).toBe(false);
    chain.produce([]);
    expect(chain.tip).toBe(slot + CONFIRMATIONS);
    await delivered(st, slot, true);
    await remove(st);
  });

  it('skipped slots: nothing delivered for them, the slots after them delivered; the block endpoint answers 404 for them', async () => {
    const to = w('skipper');
    const st = await createStream({ addresses: [to.address] });
    const first = chain.produce([solTransfer(ctx(), { from: w('payer-skip'), to: to.address, lamports: 1 }).entry]).slot;
    chain.skip(3);
    const second = chain.produce([solTransfer(ctx(), { from: w('payer-skip'), to: to.address, lamports: 2 }).entry]).slot;
    expect(second).toBe(first + 4);
    fillers();
    await caughtUp();
    expect((await delivered(st, second, true)).block.parentSlot).toBe(String(first));
    await delivered(st, first, true);
    expect(slotsOf(st, false)).toEqual([first, second]);
    expect(slotsOf(st, true)).toEqual([first, second]);
    for (let n = first + 1; n < second; n++)
      expect((await s.call(`/streams/solana/mainnet/block/${n}`, { method: 'POST', json: { allAddresses: true } })).status).toBe(404);
    const skipped = ((await s.call('/health')).body.chains as Array<{ chain: string; skippedSlots: number }>).find(
      (c) => c.chain === 'solana',
    )!.skippedSlots;
    expect(skipped).toBeGreaterThanOrEqual(3);
    await remove(st);
  });

  it("a fork: the slots that left the chain never get confirmed:true; the replacing slots' matches get both deliveries", async () => {
    const to = w('forked');
    const st = await createStream({ addresses: [to.address] });
    const pay = (n: number) => solTransfer(ctx(), { from: w('payer-fork'), to: to.address, lamports: n });
    const from = chain.produce([pay(1).entry]).slot;
    chain.produce([pay(2).entry]);
    await delivered(st, from, false);
    await delivered(st, from + 1, false);
    const left = [at(st, from, false)[0]!.block.blockHash, at(st, from + 1, false)[0]!.block.blockHash];
    // The node's new branch: slot `from` skipped, `from + 1` with another payment, then on.
    // It holds the payment of the slot that left again (a transaction lands in another slot) and a new one.
    const again = at(st, from + 1, false)[0]!.transactions[0].signature as string;
    const moved = chain.at(from + 1)!.transactions[0]!;
    const replacing = pay(3);
    chain.fork(from, ['skip', [moved, replacing.entry]]);
    fillers();
    await caughtUp();
    const body = await delivered(st, from + 1, true);
    expect(body).toEqual(expectedBody(from + 1, await getBlock(from + 1), st.sel, { streamId: st.id, tag: st.tag, confirmed: true }));
    expect(sigs(body)).toEqual([again, replacing.signature]);
    expect(body.block.parentSlot).toBe(String(from - 1));
    await new Promise((r) => setTimeout(r, 300));
    const confirmedHashes = webhooksOf(st)
      .filter((b) => b.confirmed)
      .map((b) => b.block.blockHash);
    expect(confirmedHashes).toEqual([chain.at(from + 1)!.blockhash]);
    for (const h of left) expect(confirmedHashes).not.toContain(h);
    // The block endpoints read the node's branch: the slot now skipped is not stored, the replacing one answers.
    expect((await s.call(`/streams/solana/mainnet/block/${from}`, { method: 'POST', json: { allAddresses: true } })).status).toBe(404);
    expect(
      sigs((await s.call(`/streams/solana/mainnet/block/${from + 1}`, { method: 'POST', json: { addresses: [to.address] } })).body),
    ).toEqual([again, replacing.signature]);
    // Unconfirmed: the two that left, then the replacing one.
    expect(
      webhooksOf(st)
        .filter((b) => !b.confirmed)
        .map((b) => b.block.blockHash),
    ).toEqual([...left, chain.at(from + 1)!.blockhash]);
    await remove(st);
  });

  it('a slot announced before it can be fetched (-32004): held, then delivered in order once the node serves it', async () => {
    const to = w('late');
    const st = await createStream({ addresses: [to.address] });
    const pay = (n: number) => solTransfer(ctx(), { from: w('payer-late'), to: to.address, lamports: n }).entry;
    const late = chain.produce([pay(1)], { available: false }).slot;
    const next = chain.produce([pay(2)]).slot;
    expect(await until(() => webhooksOf(st).length > 0, 500)).toBe(false);
    chain.release(late);
    await delivered(st, late, false);
    await delivered(st, next, false);
    expect(slotsOf(st, false)).toEqual([late, next]);
    fillers();
    await delivered(st, next, true);
    expect(slotsOf(st, true)).toEqual([late, next]);
    await remove(st);
  });

  it('a fork while the server is down: after its restart, the slot that left is never confirmed, the replacing one is', async () => {
    const to = w('fork-down');
    const st = await createStream({ addresses: [to.address] });
    const pay = (n: number) => solTransfer(ctx(), { from: w('payer-fork-down'), to: to.address, lamports: n });
    const from = chain.produce([pay(1).entry]).slot;
    const left = (await delivered(st, from, false)).block.blockHash as string;
    expect(await until(async () => (await s.call(`/stats/${st.id}`)).body.totalWebhooksDelivered === 1, 10_000)).toBe(true);
    await s.stop('SIGKILL');
    const replacing = pay(2);
    chain.fork(from, [[], [replacing.entry]]);
    fillers();
    s = await startChainpost(env(), s.dir);
    await caughtUp();
    const body = await delivered(st, from + 1, true);
    expect(sigs(body)).toEqual([replacing.signature]);
    await delivered(st, from + 1, false);
    await new Promise((r) => setTimeout(r, 300));
    expect(webhooksOf(st).map((b) => [b.block.slot, b.block.blockHash, b.confirmed])).toEqual([
      [String(from), left, false],
      [String(from + 1), chain.at(from + 1)!.blockhash, false],
      [String(from + 1), chain.at(from + 1)!.blockhash, true],
    ]);
    await remove(st);
  });

  it('a restart in mid-stream: nothing lost, no confirmed delivery twice', async () => {
    const to = w('restart');
    const st = await createStream({ addresses: [to.address] });
    const pay = (n: number) => solTransfer(ctx(), { from: w('payer-restart'), to: to.address, lamports: n }).entry;
    const first = chain.produce([pay(1)]).slot;
    await delivered(st, first, false);
    expect(await until(async () => (await s.call(`/stats/${st.id}`)).body.totalWebhooksDelivered === 1, 10_000)).toBe(true);
    await s.stop('SIGKILL');
    // While it is down: another match, and the tip past both.
    chain.produce([]);
    const second = chain.produce([pay(2)]).slot;
    fillers();
    s = await startChainpost(env(), s.dir);
    await caughtUp();
    await delivered(st, first, true);
    await delivered(st, second, true);
    await delivered(st, second, false);
    expect(await until(async () => (await s.call(`/stats/${st.id}`)).body.totalWebhooksDelivered === 4, 10_000)).toBe(true);
    fillers(2);
    await caughtUp();
    await new Promise((r) => setTimeout(r, 300));
    expect(slotsOf(st, false)).toEqual([first, second]);
    expect(slotsOf(st, true)).toEqual([first, second]);
    await remove(st);
  });

  it('a kill while matching slots stream in: after the restart every slot is delivered in both phases, again only what was in flight at the kill', async () => {
    const to = w('kill');
    const st = await createStream({ addresses: [to.address] });
    const pay = (n: number) => solTransfer(ctx(), { from: w('payer-kill'), to: to.address, lamports: n }).entry;
    const slots: number[] = [];
    slots.push(chain.produce([pay(0)]).slot);
    await delivered(st, slots[0]!, false);
    // The server is killed while it fetches, confirms and delivers these (no waiting for any of them).
    for (let i = 1; i <= 6; i++) slots.push(chain.produce([pay(i)]).slot);
    await new Promise((r) => setTimeout(r, 60));
    await s.stop('SIGKILL');
    // What reached the receiver before the kill (a request whose body had arrived is handled within this wait).
    await new Promise((r) => setTimeout(r, 100));
    const beforeKill = webhooksOf(st).map((b) => `${b.block.slot}/${b.confirmed}`);
    s = await startChainpost(env(), s.dir);
    fillers();
    await caughtUp();
    for (const slot of slots) await delivered(st, slot, true);
    await new Promise((r) => setTimeout(r, 300));
    const all = webhooksOf(st).map((b) => `${b.block.slot}/${b.confirmed}`);
    // Nothing lost: each slot in both phases.
    expect([...new Set(all)].sort()).toEqual(slots.flatMap((n) => [`${n}/false`, `${n}/true`]).sort());
    // Sent twice only when the first copy reached the receiver before the kill: a delivery whose outcome the
    // server had not committed yet is sent again (at least once); anything first sent after the restart, once.
    const after = all.slice(beforeKill.length);
    expect(new Set(after).size).toBe(after.length);
    await remove(st);
  });

  it('changes to a live stream (programIds, addresses added and removed) apply from the next slot', async () => {
    const p1 = addressOf('program/e2e-p1');
    const p2 = addressOf('program/e2e-p2');
    const x = w('changes-x');
    const st = await createStream({ programIds: [p1] });
    const via = (program: string, n: number) =>
      splTransfer(ctx(), { owner: w(`changes-${n}`), mint: usdc, to: addressOf(`changes-to-${n}`), amount: BigInt(n), via: program });
    const toX = (n: number) => solTransfer(ctx(), { from: w('changes-payer'), to: x.address, lamports: n });
    const call = async (path: string, method: string, json: unknown) => expect((await s.call(path, { method, json })).status).toBe(200);
    const a = [via(p1, 1)];
    const slotA = chain.produce(entries(a)).slot;
    expect(sigs(await delivered(st, slotA, false))).toEqual([a[0]!.signature]);
    await call(`/streams/solana/${st.id}`, 'POST', { programIds: [p2] });
    const b = [via(p1, 2), via(p2, 3)];
    const slotB = chain.produce(entries(b)).slot;
    expect(sigs(await delivered(st, slotB, false))).toEqual([b[1]!.signature]);
    await call(`/streams/solana/${st.id}/address`, 'POST', { address: [x.address] });
    const c = [toX(4), via(p1, 5)];
    const slotC = chain.produce(entries(c)).slot;
    expect(sigs(await delivered(st, slotC, false))).toEqual([c[0]!.signature]);
    await call(`/streams/solana/${st.id}/address`, 'DELETE', { address: [x.address] });
    const d = [toX(6), via(p2, 7)];
    const slotD = chain.produce(entries(d)).slot;
    expect(sigs(await delivered(st, slotD, false))).toEqual([d[1]!.signature]);
    // Paused: nothing for its slots; active again: the next slot.
    await call(`/streams/solana/${st.id}/status`, 'POST', { status: 'paused' });
    const slotE = chain.produce(entries([via(p2, 8)])).slot;
    await caughtUp();
    await call(`/streams/solana/${st.id}/status`, 'POST', { status: 'active' });
    const f = [via(p2, 9)];
    const slotF = chain.produce(entries(f)).slot;
    expect(sigs(await delivered(st, slotF, false))).toEqual([f[0]!.signature]);
    expect(at(st, slotE, false)).toEqual([]);
    await remove(st);
  });

  it('the block endpoints: POST …/block/:slot answers the body (or {} for no match), block-to-webhook enqueues it; bad chainId 400, a slot not stored 404', async () => {
    const to = w('replay');
    const holder = w('replay-holder');
    const st = await createStream({ addresses: [to.address] }, 'replay');
    const token = splTransfer(ctx(), { owner: holder, mint: usdc, to: to.address, amount: 42n, via: payProgram });
    const slot = chain.produce([
      solTransfer(ctx(), { from: w('replay-payer'), to: addressOf('someone'), lamports: 1 }).entry,
      token.entry,
    ]).slot;
    await delivered(st, slot, false);
    const block = await getBlock(slot);
    const sel = { addresses: [to.address], programIds: [payProgram], mintAddresses: [bonk.address], allAddresses: false };
    // Not yet confirmed: the endpoint says so.
    const early = await s.call(`/streams/solana/mainnet/block/${slot}`, { method: 'POST', json: { ...sel, tag: 'asked' } });
    expect(early.status).toBe(200);
    expect({ ...early.body, streamId: 'x' }).toEqual(expectedBody(slot, block, sel, { streamId: 'x', tag: 'asked', confirmed: false }));
    fillers();
    await caughtUp();
    await delivered(st, slot, true);
    for (const asked of [sel, { allAddresses: true }, { mintAddresses: [usdc.address] }, { programIds: [TOKEN_PROGRAM] }]) {
      const res = await s.call(`/streams/solana/solana_mainnet/block/${slot}`, { method: 'POST', json: { ...asked, tag: 't' } });
      expect(res.status).toBe(200);
      expect({ ...res.body, streamId: 'x' }).toEqual(expectedBody(slot, block, asked, { streamId: 'x', tag: 't', confirmed: true }));
    }
    expect(sigs((await s.call(`/streams/solana/mainnet/block/${slot}`, { method: 'POST', json: { allAddresses: true } })).body)).toEqual(
      block.transactions.map((t) => t.transaction.signatures[0]),
    );
    const none = await s.call(`/streams/solana/mainnet/block/${slot}`, { method: 'POST', json: { addresses: [addressOf('nobody')] } });
    expect(none.status).toBe(200);
    expect(none.body).toEqual({});
    expect((await s.call(`/streams/solana/ethereum/block/${slot}`, { method: 'POST', json: {} })).body).toMatchObject({
      details: { field: 'chainId' },
    });
    expect((await s.call(`/streams/solana/ethereum/block/${slot}`, { method: 'POST', json: {} })).status).toBe(400);
    expect((await s.call(`/streams/solana/mainnet/block/${chain.tip + 1000}`, { method: 'POST', json: {} })).status).toBe(404);
    // block-to-webhook: the stream's body for the slot, sent again.
    const before = webhooksOf(st).length;
    const res = await s.call(`/streams/solana/mainnet/block-to-webhook/${slot}/${st.id}`, { method: 'POST' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ streamId: st.id, blockNumber: slot, result: 'queued' });
    expect(await until(() => webhooksOf(st).length === before + 1, 10_000)).toBe(true);
    expect(webhooksOf(st).at(-1)).toEqual(expectedBody(slot, block, st.sel, { streamId: st.id, tag: 'replay', confirmed: true }));
    expect((await s.call(`/streams/solana/sol/block-to-webhook/${slot}/${st.id}`, { method: 'POST' })).status).toBe(200);
    expect((await s.call(`/streams/solana/bitcoin/block-to-webhook/${slot}/${st.id}`, { method: 'POST' })).body).toMatchObject({
      details: { field: 'chainId' },
    });
    expect((await s.call(`/streams/solana/mainnet/block-to-webhook/${slot + 1}/${st.id}`, { method: 'POST' })).status).toBe(404);
    await remove(st);
  });
});
