import { prefixRange, type KeyRange } from '../ingest/chain-store.js';
import { chainTables } from './chain/index/tables.js';
import { indexerTables, type TableDeclaration, type TableDeclarations } from './common/tables.js';
import { dexTables } from './dex/index/tables.js';
import { erc20Tables } from './erc20/index/tables.js';
import { nftTables } from './nft/index/tables.js';
import { transactionTables } from './transactions/index/tables.js';

/**
 * The Data API's tables, gathered from the declarations beside each index, grouped as storage/README.md documents
 * them. The store's list of tables is the engine's (CORE_TABLES, engine/ports.ts) and these: a new index adds its
 * declarations here, and nothing else lists them.
 */
export const DATA_API_TABLE_GROUPS = {
  indexer: indexerTables,
  erc20: erc20Tables,
  nft: nftTables,
  transactions: transactionTables,
  chain: chainTables,
  dex: dexTables,
} as const satisfies Record<string, TableDeclarations>;

type Groups = typeof DATA_API_TABLE_GROUPS;
/** A Data API table's name. */
export type DataApiTable = { [G in keyof Groups]: keyof Groups[G] & string }[keyof Groups];

// Kv's Table (engine/ports.ts) takes in these names: ports.ts names no feature's tables itself.
declare module '../ports.js' {
  interface DeclaredTables extends Record<DataApiTable, TableDeclaration> {}
}

/** Every Data API table with its declaration, in the order of the groups. */
export const DATA_API_TABLES: ReadonlyArray<readonly [DataApiTable, TableDeclaration]> = Object.values(DATA_API_TABLE_GROUPS).flatMap(
  (group) => Object.entries(group) as Array<[DataApiTable, TableDeclaration]>,
);

/** The tables no index reads while the indexes build (`writtenOnly`): their overlay keeps none of their writes. */
export const WRITTEN_ONLY_TABLES: ReadonlySet<DataApiTable> = new Set(
  DATA_API_TABLES.filter(([, d]) => (d as TableDeclaration).writtenOnly === true).map(([t]) => t),
);

/**
 * Every key range the Data API's indexes hold of one chain, for clearing it (`chainpost devnet reset`), from each
 * table's `chainKeys`; the indexer's position (`indexState`) last, so a run cut short leaves the chain to be indexed again.
 */
export function dataChainRanges(chain: string): KeyRange[] {
  const ranges = DATA_API_TABLES.flatMap(([table, { chainKeys }]) =>
    chainKeys.map((template): KeyRange => {
      const key = template.replace('{chain}', chain);
      return key.endsWith('/') ? prefixRange(table, key) : { table, start: key, end: `${key}\u0000` };
    }),
  );
  return [...ranges.filter((r) => r.table !== 'indexState'), ...ranges.filter((r) => r.table === 'indexState')];
}
