import type { TableDeclarations } from '../../common/tables.js';

/** The native transaction index's tables (writer.ts writes them; summary.ts encodes its summaries). */
export const transactionTables = {
  nativeTxs: {
    keys: 'hex',
    writtenOnly: true,
    inPlace: true,
    chainKeys: ['h/{chain}/', 's/{chain}/'],
    rows: [
      { key: '`h/chain/hash` (lower case)', value: '`[block number, index]`: where a transaction is' },
      {
        key: '`s/chain/number (12 hex digits)/index (6 hex digits)`',
        value:
          "`SummaryRow` (engine/data-api/transactions/index/summary.ts), a tuple read back as a `TxSummary` by `decodeSummary`: `[hash, timestamp, nonce, from, to, value, gas, gasPrice, input, cumulativeGasUsed, gasUsed, status, transfers, internal, approvals, contractAddress, root]`. Block number and index are the key's, the block hash is `blockTimes`' (kept past pruning); the timestamp stays (5 bytes, where `blockTimes` would cost a read per item). A quantity that is a canonical hex below 2^52 is stored as its number, any other as its hex. `transfers`: a reference per ERC-20 and NFT transfer, in log order, `[contract, logIndex]` (ERC-20: the transfer is the token's `contractLogs` row) or `[contract, logIndex, tokenId, batchIndex]` (NFT: its `transfers` row; batchIndex left out when 0), contract `0` when it is the transaction's `to`, read only through `transferOfSummary` (engine/data-api/transactions/source.ts); `internal`: `[type, from, to, value, gas, gasUsed]` per call (the record keeps no call input or output); `approvals`: `[token, owner, spender, value or approved]` per ERC-20 Approval and ApprovalForAll log. Empty lists and nulls at the end are left out. Rows written before 2026-11-24 hold the `TxSummary` itself (named fields, its transfers as `transfers` keys by contract): still read",
      },
    ],
  },
  addressTxs: {
    keys: 'hex',
    writtenOnly: true,
    inPlace: true,
    chainKeys: ['tx/{chain}/', 'hist/{chain}/'],
    rows: [
      {
        key: '`tx/chain/address/number`',
        value:
          "`[index, …]`: the block's transactions the address sent, received, created, or took part in by an internal call, a row per (address, block) since schema 13 (engine/data-api/common/block-groups.ts), read as one entry per transaction keyed `tx/chain/address/number/index` (GET /:address). Schema 12 kept a row per transaction there (`1`): the migration groups them, but for the blocks that still had an undo row, read as they are",
      },
      {
        key: '`hist/chain/address/number/index`',
        value:
          '`1`: a transaction that moved its tokens or NFTs or holds its approvals and is not in its `tx/` list (GET /wallets/:address/history reads both lists; before schema 11 every transaction of the history, the migration drops those of `tx/`)',
      },
    ],
  },
  activity: {
    keys: 'hex',
    inPlace: true,
    chainKeys: ['{chain}/'],
    rows: [
      {
        key: '`chain/address`',
        value:
          "`{first, last: [block, index, timestamp], txs, erc20, nft}`: the address's first and last activity on the chain (a transaction of its `hist/` list, whose hash is its `s/` summary's; rows written before 2026-11-24 hold `{block, timestamp, hash}`) and its counters: transactions of its `tx/` list, ERC-20 transfers, NFT transfers (one per id of a batch) from or to it",
      },
    ],
  },
} satisfies TableDeclarations;
