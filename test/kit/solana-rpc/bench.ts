/**
 * Mainnet-size slots for benchmarks: 3,000 transactions a slot, two in three of them votes, the rest SOL
 * transfers, SPL transfers (direct and by CPI) with token balances, v0 transactions loading accounts from a
 * lookup table, and failed transfers. A pool of a few hundred distinct signed transactions is built once;
 * each slot picks from it in a slot-dependent order and varies first signatures (SlotBlock.salt), so building
 * a long chain costs no signing and a block's answer is a copy of prerendered pieces.
 */
import {
  addressOf,
  failedTransfer,
  keypair,
  Ledger,
  lookupTable,
  solTransfer,
  splTransfer,
  tokenAccountOf,
  USDC_MINT,
  voteTx,
  type BuildContext,
  type BuiltTx,
  type Mint,
  type Touches,
} from './build.js';
import { SolanaChain } from './chain.js';

export const TXS_PER_SLOT = 3_000;

export interface BenchPool {
  votes: BuiltTx[];
  /** Everything but votes, in build order. */
  others: BuiltTx[];
  /** The lookup tables the v0 transactions load from (the chain holds them). */
  tables: Array<{ address: string; addresses: string[] }>;
  mints: Mint[];
}

export interface PoolOptions {
  /** Distinct vote transactions (default 260). */
  votes?: number;
  /** Distinct other transactions (default 140: 40 SOL, 40 SPL, 40 v0, 20 failed). */
  others?: number;
  seed?: string;
}

/** A program that pays by CPI into the Token program (stands for a DEX or payments program). */
export const CPI_PROGRAM = addressOf('bench/cpi-program');

/** Builds the pool (about a second of signing for the default sizes). */
export function benchPool(opts: PoolOptions = {}): BenchPool {
  const seed = opts.seed ?? 'bench';
  const ctx: BuildContext = { ledger: new Ledger(), recentBlockhash: addressOf(`${seed}/recent`) };
  const mints: Mint[] = [
    { address: USDC_MINT, decimals: 6 },
    ...Array.from({ length: 7 }, (_, i) => ({ address: addressOf(`${seed}/mint/${i}`), decimals: [9, 6, 8, 5, 9, 2, 0][i]! })),
  ];
  const voteCount = opts.votes ?? 260;
  const votes = Array.from({ length: voteCount }, (_, i) =>
    voteTx(ctx, {
      identity: keypair(`${seed}/validator`, i),
      voteAccount: addressOf(`${seed}/vote-account/${i}`),
      slot: 300_000_000 + i,
      hash: addressOf(`${seed}/bank/${i}`),
      timestamp: 1_750_000_000 + i,
    }),
  );
  const otherCount = opts.others ?? 140;
  const user = (i: number): ReturnType<typeof keypair> => keypair(`${seed}/user`, i);
  const receiver = (i: number): string => addressOf(`${seed}/receiver/${i}`);
  const tables: BenchPool['tables'] = [];
  const others: BuiltTx[] = [];
  for (let i = 0; i < otherCount; i++) {
    const mint = mints[i % mints.length]!;
    const kind = i % 7;
    if (kind === 0 || kind === 1)
      others.push(solTransfer(ctx, { from: user(i), to: receiver(i), lamports: 1_000_000 + i, computeBudget: kind === 1 }));
    else if (kind === 2 || kind === 3)
      others.push(
        splTransfer(ctx, { owner: user(i), mint, to: receiver(i), amount: BigInt(1_000 + i), ...(kind === 3 ? { via: CPI_PROGRAM } : {}) }),
      );
    else if (kind === 4 || kind === 5) {
      const to = receiver(i);
      const table = lookupTable(`${seed}/${i}`, [
        addressOf(`${seed}/table-filler/${i}`),
        mint.address,
        tokenAccountOf(to, mint.address),
        to,
      ]);
      tables.push(table);
      others.push(
        kind === 4
          ? solTransfer(ctx, { from: user(i), to, lamports: 2_000_000 + i, table })
          : splTransfer(ctx, { owner: user(i), mint, to, amount: BigInt(5_000 + i), table, via: CPI_PROGRAM }),
      );
    } else others.push(failedTransfer(ctx, { from: user(i), to: receiver(i), lamports: 1 }));
  }
  return { votes, others, tables, mints };
}

/** The pool transactions of slot `slot`: two votes then one other, in an order that shifts with the slot. */
export function slotPick(pool: BenchPool, slot: number, count = TXS_PER_SLOT): BuiltTx[] {
  const picked: BuiltTx[] = [];
  for (let i = 0; i < count; i++) {
    if (i % 3 === 2) picked.push(pool.others[(Math.floor(i / 3) + slot * 7) % pool.others.length]!);
    else picked.push(pool.votes[(i - Math.floor(i / 3) + slot) % pool.votes.length]!);
  }
  return picked;
}

export interface BenchChainOptions {
  /** Slots to produce (default 100). */
  slots?: number;
  /** The first slot (default 320,000,000, a 2025 mainnet slot). */
  start?: number;
  /** Every K-th slot is skipped (0: none, the default). */
  skipEvery?: number;
  txsPerSlot?: number;
  pool?: BenchPool;
}

/** A chain of bench slots; its lookup tables are the pool's. */
export function benchChain(opts: BenchChainOptions = {}): { chain: SolanaChain; pool: BenchPool } {
  const pool = opts.pool ?? benchPool();
  const start = opts.start ?? 320_000_000;
  const chain = new SolanaChain({ firstSlot: start, firstBlockHeight: start - 21_000_000 });
  for (const t of pool.tables) chain.addLookupTable(t.address, t.addresses);
  const count = opts.slots ?? 100;
  const perSlot = opts.txsPerSlot ?? TXS_PER_SLOT;
  for (let n = 0; n < count; n++) {
    if (opts.skipEvery && n > 0 && n % opts.skipEvery === 0) chain.skip();
    const slot = chain.nextSlot;
    chain.produce(
      slotPick(pool, slot, perSlot).map((t) => t.entry),
      { salt: slot * perSlot },
    );
  }
  return { chain, pool };
}

/** What the non-vote transactions of the pool touch, together: what a bench watches to match them. */
export function poolTouches(pool: BenchPool): { accounts: Set<string>; programs: Set<string>; mints: Set<string>; owners: Set<string> } {
  const sets = { accounts: new Set<string>(), programs: new Set<string>(), mints: new Set<string>(), owners: new Set<string>() };
  const add = (t: Touches): void => {
    for (const k of Object.keys(sets) as Array<keyof Touches>) for (const v of t[k]) sets[k].add(v);
  };
  for (const t of pool.others) add(t.touches);
  return sets;
}

/** `count` distinct 32-byte addresses nobody uses (filler for a watch list of a million accounts). */
export function unusedAddresses(count: number, seed = 'unused'): string[] {
  return Array.from({ length: count }, (_, i) => addressOf(`${seed}/${i}`));
}
