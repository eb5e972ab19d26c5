import type { Kv, Table } from '../ports.js';

/**
 * What every chain family's ingestion keeps per block, under the same keys
 * (storage/README.md): its record (`blocks`) and probe column (`probes`) by
 * `chain/number`, the canonical hash by number (`canon`) and the number by hash
 * (`blockHashes`). A family adds its own index tables beside these (EVM:
 * engine/evm/store.ts).
 */
export const blockKey = (chain: string, number: number): string => `${chain}/${number.toString(16).padStart(12, '0')}`;
/** `blockHashes` key: a canonical block's hash → its number (engine/ingest/block-hashes.ts reads it). */
export const blockHashKey = (chain: string, hash: string): string => `${chain}/${hash.toLowerCase()}`;

/** Drops a block's record and probe column out of the retention window; its hash and transfer indexes stay. */
export function pruneBlock(kv: Kv, chain: string, number: number): void {
  const key = blockKey(chain, number);
  kv.remove('blocks', key);
  kv.remove('probes', key);
}

/** What every family stores of a block in the shared tables. */
export interface CanonicalBlock {
  number: number;
  hash: string;
  record: Uint8Array;
  probe: Uint8Array;
}

/** Whether a block a message carried (unchecked) has what writeCanonical writes, and its parent's hash. */
export const isCanonicalBlock = (b: Partial<CanonicalBlock & { parentHash: string }>): boolean =>
  typeof b.number === 'number' &&
  typeof b.hash === 'string' &&
  typeof b.parentHash === 'string' &&
  b.record instanceof Uint8Array &&
  b.probe instanceof Uint8Array;

/** Writes a block's record, probe column and canonical hash both ways; call inside a transaction. */
export function writeCanonical(kv: Kv, chain: string, b: CanonicalBlock): void {
  const key = blockKey(chain, b.number);
  kv.putRaw('blocks', key, b.record);
  kv.putRaw('probes', key, b.probe);
  kv.put('canon', key, b.hash);
  kv.put('blockHashes', blockHashKey(chain, b.hash), b.number);
}

/** Removes a block's record, probe column and canonical hash both ways (a reorg); call inside a transaction. */
export function removeCanonical(kv: Kv, chain: string, number: number): void {
  const key = blockKey(chain, number);
  const hash = kv.get<string>('canon', key);
  if (hash !== undefined) kv.remove('blockHashes', blockHashKey(chain, hash));
  for (const table of ['blocks', 'probes', 'canon'] as const) kv.remove(table, key);
}

/** A key range of one table: start ≤ key < end. */
export interface KeyRange {
  table: Table;
  start: string;
  end: string;
}

/** Every key that begins with `p`. */
export const prefixRange = (table: Table, p: string): KeyRange => ({ table, start: p, end: `${p}\uffff` });

/** The key ranges a chain's ingestion writes (storage/README.md) besides its `chainState` row. */
function chainRanges(chain: string): KeyRange[] {
  return [
    ...(
      [
        'blocks',
        'probes',
        'canon',
        'blockHashes',
        'blockEvents',
        'tokens',
        'sales',
        'btcOutputs',
        'btcAddressTxs',
        'btcUtxos',
        'btcTxs',
      ] as const
    ).map((t) => prefixRange(t, `${chain}/`)),
    // `wallet/` and `erc20/`: rows a store written before 2026-11-24 holds (by-wallet postings, ERC-20 transfers now kept as their logs: nothing reads them).
    ...['nft', 'erc20', 'wallet'].map((kind) => prefixRange('transfers', `${kind}/${chain}/`)),
    // What the delivery partitions staged of the chain's block events (engine/match/block-events.ts).
    prefixRange('matchMarks', `${chain}/`),
  ];
}

/**
 * Removes what was ingested from a chain (a fresh start of it: `chainpost devnet reset`), a bounded batch
 * per transaction (a run cut short is finished by running it again); the rows removed per table.
 */
export async function clearChain(
  kv: Kv,
  chain: string,
  more: readonly KeyRange[] = [],
  batch = 10_000,
): Promise<Partial<Record<Table, number>>> {
  const removed: Partial<Record<Table, number>> = {};
  // The follower's state first: whatever else is left of the chain is then below nothing it trusts.
  if (kv.has('chainState', chain)) {
    await kv.transactAsync(() => kv.remove('chainState', chain));
    removed.chainState = 1;
  }
  // `more`: what is built from the chain's blocks elsewhere (the Data API's indexes: dataChainRanges).
  return { ...removed, ...(await clearRanges(kv, [...chainRanges(chain), ...more], batch)) };
}

/**
 * Removes every key of `ranges`, in their order, `batch` at most per transaction (committed off the event loop),
 * `between` awaited after each (a turn of a live server's event loop, or a check that it is stopping); the rows
 * removed per table.
 */
export async function clearRanges(
  kv: Kv,
  ranges: readonly KeyRange[],
  batch = 10_000,
  between?: () => Promise<void>,
): Promise<Partial<Record<Table, number>>> {
  const removed: Partial<Record<Table, number>> = {};
  for (const range of ranges) {
    let n: number;
    do {
      n = await kv.transactAsync(() => kv.removeRange(range.table, { start: range.start, end: range.end, limit: batch }));
      removed[range.table] = (removed[range.table] ?? 0) + n;
      await between?.();
    } while (n === batch);
  }
  return removed;
}
