import type { TableDeclarations } from '../../common/tables.js';

/** The tables of block times and contract logs (writer.ts writes them). */
export const chainTables = {
  blockTimes: {
    keys: 'hex',
    inPlace: true,
    chainKeys: ['{chain}/'],
    rows: [
      {
        key: '`chain/number (12 hex digits)`',
        value:
          "`[timestamp, hash]`: the block's timestamp, Unix seconds (dateToBlock searches numbers by binary search: timestamps grow with the number), and its hash as the indexes hold it (a page's items read their block here, one read per block). Rows written by schema version 5 or older hold the timestamp alone (the hash is then `canon`'s): still read",
      },
    ],
  },
  contractLogs: {
    keys: 'hex',
    writtenOnly: true,
    inPlace: true,
    chainKeys: ['{chain}/'],
    rows: [
      {
        key: '`chain/a/contract/number (12 hex)` (contract lower case)',
        value:
          "`[[logIndex, entry], …]`: the contract's logs of the block, a row per (contract, block) since schema 13 (engine/data-api/common/block-groups.ts), read as one entry per log keyed `chain/a/contract/number/logIndex (6 hex)`. An entry is the log's topic0 (the log is its `t/` row); for a log without topics, the log itself, `[tx, ti, topics, data]`. Schema 12 and older kept a row per log (`chain/a/contract/number/logIndex` → the entry): the migration groups them, but for the blocks that still had an undo row, read as they are. Rows written by schema version 5 or older hold every log as its entry (a page of all a contract's logs then reads no `t/` row), in the form below or (before 2026-11-24) `{tx, ti, ts, topics, data}` (`ts` the block's timestamp): still read",
      },
      {
        key: '`chain/t/contract/topic0/number (12 hex)/logIndex (6 hex)`',
        value:
          "`[tx, ti, topics, data]`: the log, under its first topic: the log's transaction hash (lower case) and index, its topics (lower case) and data; the block's hash and time are `blockTimes`'. A page of one event, or of a token's ERC-20 transfers under the Transfer topic0, reads O(page) entries and nothing else. The only stored copy of an ERC-20 Transfer (`erc20TransferAt`, engine/data-api/erc20/index/log.ts, decodes it). Rows written by schema version 5 or older hold 0 (the log is the `a/` row): still read",
      },
    ],
  },
} satisfies TableDeclarations;
