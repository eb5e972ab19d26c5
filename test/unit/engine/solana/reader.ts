import { readFileSync } from 'node:fs';
import bs58 from 'bs58';

/**
 * The Solana fixtures read with JSON.parse alone, for tests to check the scanner, record, probe column and body
 * against: an independent reading of what each transaction's keys, programs, mints and owners are.
 */
const dir = new URL('../../../fixtures/solana/', import.meta.url);
export const fixtureText = (name: string): string => readFileSync(new URL(name, dir), 'utf8');

export const BLOCK_100M = 'chainstorage/getBlock-slot-100000000-json-trimmed10.json';
export const BLOCK_100M_PARSED = 'chainstorage/getBlock-slot-100000000-jsonParsed-trimmed10.json';
export const TX_FILES = [
  'hyperlane/getTransaction-slot-290198208-json.delivery_message_txn.json',
  'hyperlane/getTransaction-slot-297626301-json.dispatch_message_txn.json',
  'hyperlane/getTransaction-slot-322600797-json.dispatch_message_two_instructions_in_one_txn.json',
  // Eclipse (an SVM chain, not Solana): the only real v0 transaction with lookup-table keys.
  'other-svm-NOT-solana-mainnet/eclipse-getTransaction-slot-35792433-json-v0.json',
];

/* eslint-disable @typescript-eslint/no-explicit-any */
export type JsonTx = { transaction: any; meta: any; version?: 'legacy' | 0 };
export type JsonBlock = {
  blockhash: string;
  previousBlockhash: string;
  parentSlot: number;
  blockHeight: number | null;
  blockTime: number | null;
  transactions: JsonTx[];
};

/** Slot 100,000,000's block (10 transactions) followed by the getTransaction fixtures, as one getBlock result. */
export function fixtureBlock(): JsonBlock {
  const block = JSON.parse(fixtureText(BLOCK_100M)) as JsonBlock & { rewards?: unknown };
  delete block.rewards;
  for (const f of TX_FILES) {
    const { transaction, meta, version } = JSON.parse(fixtureText(f)) as JsonTx;
    block.transactions.push(version === undefined ? { transaction, meta } : { transaction, meta, version });
  }
  return block;
}

/** A JSON-RPC response body around a result (or error) as a node sends it. */
export const envelope = (member: string): Uint8Array => Buffer.from(`{"jsonrpc":"2.0",${member},"id":1}`);
export const answerOf = (block: unknown): Uint8Array => envelope(`"result":${JSON.stringify(block)}`);

export const VOTE = 'Vote111111111111111111111111111111111111111';
export const COMPUTE_BUDGET = 'ComputeBudget111111111111111111111111111111';

/** Static keys, then loaded writable, then loaded readonly. */
export const keysOf = (t: JsonTx): string[] => [
  ...t.transaction.message.accountKeys,
  ...(t.meta?.loadedAddresses?.writable ?? []),
  ...(t.meta?.loadedAddresses?.readonly ?? []),
];
const allInstructions = (t: JsonTx): any[] => [
  ...t.transaction.message.instructions,
  ...(t.meta?.innerInstructions ?? []).flatMap((g: any) => g.instructions),
];
export const programsOf = (t: JsonTx): string[] => [...new Set(allInstructions(t).map((ix) => keysOf(t)[ix.programIdIndex]!))];
const balancesOf = (t: JsonTx): any[] => [...(t.meta?.preTokenBalances ?? []), ...(t.meta?.postTokenBalances ?? [])];
export const mintsOf = (t: JsonTx): string[] => [...new Set(balancesOf(t).map((b) => b.mint as string))];
export const ownersOf = (t: JsonTx): string[] => [
  ...new Set(balancesOf(t).flatMap((b) => (b.owner === undefined ? [] : [b.owner as string]))),
];
export const isVote = (t: JsonTx): boolean => {
  const top = t.transaction.message.instructions.map((ix: any) => keysOf(t)[ix.programIdIndex]);
  return top.includes(VOTE) && top.every((p: string) => p === VOTE || p === COMPUTE_BUDGET);
};

/** What a transaction's probe entries should be: "kind:key" strings (0 address, 1 program, 2 mint). */
export function expectedEntries(t: JsonTx): Set<string> {
  if (isVote(t)) return new Set([`1:${VOTE}`]);
  return new Set(
    [...keysOf(t), ...ownersOf(t)]
      .map((k) => `0:${k}`)
      .concat(
        programsOf(t).map((k) => `1:${k}`),
        mintsOf(t).map((k) => `2:${k}`),
      ),
  );
}

/** A probe column's entries per transaction index, read with bs58 (not the code under test's encoder). */
export function probeEntries(probe: Uint8Array): Map<number, string[]> {
  const b = Buffer.from(probe.buffer, probe.byteOffset, probe.byteLength);
  const count = b.readUInt32LE(1);
  const out = new Map<number, string[]>();
  for (let k = 0; k < count; k++) {
    const ref = b.readUInt32LE(5 + count * 32 + k * 4);
    const tx = ref & 0xffffff;
    const list = out.get(tx) ?? [];
    list.push(`${ref >>> 24}:${bs58.encode(b.subarray(5 + k * 32, 5 + k * 32 + 32))}`);
    out.set(tx, list);
  }
  return out;
}
