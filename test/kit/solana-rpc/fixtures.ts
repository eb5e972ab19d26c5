/**
 * Real mainnet blocks and transactions from test/fixtures/solana, and a chain serving them at their own slots.
 * Works from test/kit/ (vitest) and from dist-bench/test/kit/ (benchmarks), which both reach the same fixture folder.
 */
import { existsSync, readFileSync } from 'node:fs';
import { type TxEntry, type TxMeta } from './build.js';
import { SolanaChain, type Reward } from './chain.js';
import { type UiMessage } from './wire.js';

const FOLDERS = ['../../fixtures/solana/', '../../../../test/fixtures/solana/'].map((p) => new URL(p, import.meta.url));

export function fixtureText(path: string): string {
  for (const folder of FOLDERS) {
    const url = new URL(path, folder);
    if (existsSync(url)) return readFileSync(url, 'utf8');
  }
  throw new Error(`no fixture ${path} under test/fixtures/solana`);
}

/** A getBlock result (json encoding) as the node sent it. */
export interface GetBlockJson {
  blockHeight: number | null;
  blockTime: number | null;
  blockhash: string;
  parentSlot: number;
  previousBlockhash: string;
  rewards?: Reward[];
  transactions: Array<{ meta: TxMeta; transaction: { message: UiMessage; signatures: string[] }; version?: 'legacy' | 0 }>;
}

/** A getTransaction result (json encoding); no `version` means a legacy transaction fetched without maxSupportedTransactionVersion. */
export interface GetTransactionJson {
  blockTime: number | null;
  meta: TxMeta;
  slot: number;
  transaction: { message: UiMessage; signatures: string[] };
  version?: 'legacy' | 0;
}

export const FIXTURE_BLOCK_SLOT = 100_000_000;
export const FIXTURE_BLOCK = 'chainstorage/getBlock-slot-100000000-json-trimmed10.json';
/** The json-encoded getTransaction fixtures of Solana mainnet (all legacy), in slot order. */
export const FIXTURE_TRANSACTIONS = [
  'hyperlane/getTransaction-slot-290198208-json.delivery_message_txn.json',
  'hyperlane/getTransaction-slot-297626301-json.dispatch_message_txn.json',
  'hyperlane/getTransaction-slot-322600797-json.dispatch_message_two_instructions_in_one_txn.json',
];
/** An Eclipse (not Solana) v0 transaction with a lookup table: only for checking the v0 serializer. */
export const ECLIPSE_V0_TRANSACTION = 'other-svm-NOT-solana-mainnet/eclipse-getTransaction-slot-35792433-json-v0.json';

export const fixtureBlock = (): GetBlockJson => JSON.parse(fixtureText(FIXTURE_BLOCK)) as GetBlockJson;
export const fixtureTransaction = (path: string): GetTransactionJson => JSON.parse(fixtureText(path)) as GetTransactionJson;

/** A block's or getTransaction's entry as the chain stores it (a missing version is legacy). */
export const entryOf = (t: { meta: TxMeta; transaction: TxEntry['transaction']; version?: 'legacy' | 0 }): TxEntry => ({
  meta: t.meta,
  transaction: t.transaction,
  version: t.version ?? 'legacy',
});

/**
 * The real block of slot 100,000,000 at its slot, unchanged, then each getTransaction fixture in a block of its
 * own at its slot, linked to the block before (their blockhashes and heights are the stand-in's; the slots
 * between are skipped). Built blocks may follow (`produce`).
 */
export function mainnetChain(): SolanaChain {
  const chain = fixtureBlockChain();
  for (const path of FIXTURE_TRANSACTIONS) {
    const t = fixtureTransaction(path);
    chain.skip(t.slot - chain.nextSlot);
    chain.produce([entryOf(t)], { blockTime: t.blockTime });
  }
  return chain;
}

/** The real block of slot 100,000,000 at its slot, unchanged, alone: built blocks may follow it at the next slots. */
export function fixtureBlockChain(): SolanaChain {
  const chain = new SolanaChain({ firstSlot: FIXTURE_BLOCK_SLOT });
  const real = fixtureBlock();
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
  return chain;
}
