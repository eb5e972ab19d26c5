/**
 * How a Data API index declares its tables, beside its code: engine/data-api/tables.ts gathers the declarations into
 * the store's list of tables (storage/env.ts opens one LMDB database per name), and storage/README.md's key tables are
 * written from them (`npm run docs:tables`).
 */
export interface TableDeclaration {
  /**
   * How the store keeps the keys: `hex`, each hex segment as its bytes (storage/hex-keys.ts: the indexes' tables of
   * addresses, hashes and padded numbers), or `text`, plain UTF-8 (free text searched by prefixes that may end inside
   * a segment, and small tables).
   */
  keys: 'hex' | 'text';
  /**
   * Range reads decode each value where lmdb-js put it (storage/env.ts IN_PLACE_TABLES): only for values of strings,
   * numbers and lists of them; a byte array would come back as a view of lmdb-js's shared buffer.
   */
  inPlace: boolean;
  /**
   * One chain's rows (a chain cleared: `chainpost devnet reset`), `{chain}` standing for its id: a template ending in
   * `/` is a key prefix, any other is one key.
   */
  chainKeys: readonly string[];
  /**
   * No index reads the table while the indexes build (each block adds its rows under keys of its own, read by the
   * Data API's answers alone): the indexes' overlay keeps no copy of its writes (Kv.overlay `writeOnly`).
   */
  writtenOnly?: true;
  /** The table's rows as storage/README.md lists them: the key and the value, in Markdown. */
  rows: ReadonlyArray<{ key: string; value: string }>;
}

export type TableDeclarations = Readonly<Record<string, TableDeclaration>>;

/** The indexer's own tables (engine/data-api/common/indexer.ts): how far each chain is indexed, and what each block's writes replaced. */
export const indexerTables = {
  indexState: {
    keys: 'text',
    inPlace: false,
    chainKeys: ['{chain}'],
    rows: [
      {
        key: '`chain`',
        value:
          '`{number, hash, start}`: the last block every Data API index holds and the first (`start`: where the indexes began; ERC-20 token transfers answer from it, NFT contracts seen first after it are read from the node) (reads about a later block wait for it)',
      },
    ],
  },
  indexUndo: {
    keys: 'hex',
    inPlace: false,
    chainKeys: ['{chain}/'],
    rows: [
      {
        key: '`chain/number (12 hex digits)`',
        value:
          "`{hash, undo: [[table, key, bytes before or null], …]}`: what the block's index writes replaced, kept for the last 256 indexed blocks (a deeper reorg is refused and logged)",
      },
    ],
  },
} satisfies TableDeclarations;
