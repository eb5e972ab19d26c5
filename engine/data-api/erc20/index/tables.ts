import type { TableDeclarations } from '../../common/tables.js';

/** The ERC-20 index's tables (writer.ts writes them; keys.ts holds their key layout). */
export const erc20Tables = {
  erc20Balances: {
    keys: 'hex',
    inPlace: true,
    chainKeys: ['{chain}/'],
    rows: [{ key: '`chain/wallet/token`', value: "balance (hex), above 0 only: a wallet's tokens are one range" }],
  },
  erc20Pairs: {
    keys: 'hex',
    inPlace: true,
    chainKeys: ['{chain}/'],
    rows: [
      {
        key: '`chain/wallet/token`',
        value: "0: the pair's balance is known (read once, or started at 0); a pair without it is read from the node",
      },
    ],
  },
  erc20Holders: {
    keys: 'hex',
    inPlace: true,
    chainKeys: ['{chain}/'],
    rows: [{ key: '`chain/token/(2^256−1−balance, 64 hex)/wallet`', value: "0: a token's holders, balance descending in key order" }],
  },
  erc20Tokens: {
    keys: 'hex',
    inPlace: true,
    chainKeys: ['{chain}/'],
    rows: [
      {
        key: '`chain/token`',
        value:
          '`{supply, holders, created, createdBlock?, createdAt?, named?}`: `created` when its creation (receipt contractAddress, or a CREATE/CREATE2 frame of the call tracer) is indexed, else its holder list is `partial`',
      },
    ],
  },
  erc20HolderDays: {
    keys: 'hex',
    inPlace: true,
    chainKeys: ['{chain}/'],
    rows: [{ key: '`chain/token/day (6 hex, days since the epoch)`', value: 'holder count at the end of that day (days with a change)' }],
  },
  erc20HolderDeltas: {
    keys: 'hex',
    inPlace: true,
    chainKeys: ['{chain}/'],
    rows: [
      {
        key: '`chain/token/timestamp (10 hex)/number (12 hex)`',
        value: "the block's change of the holder count; the count at any time is the day row before it plus that day's deltas",
      },
    ],
  },
  erc20Approvals: {
    keys: 'hex',
    inPlace: true,
    chainKeys: ['{chain}/'],
    rows: [
      {
        key: '`chain/owner/token/spender`',
        value:
          '`{value, blockNumber, blockHash, timestamp, transactionHash, logIndex}`: the latest Approval (3 topics) above 0; an approval of 0 removes the row',
      },
    ],
  },
  erc20Wallet: {
    keys: 'hex',
    writtenOnly: true,
    inPlace: true,
    chainKeys: ['{chain}/'],
    rows: [
      {
        key: '`chain/wallet/number (12 hex)/logIndex (6 hex)`',
        value:
          "the token's address: a wallet's ERC-20 transfers (under its from and its to), each the token's `contractLogs` row `chain/t/token/topic0/number/logIndex` (`erc20TransferAt`, engine/data-api/erc20/index/log.ts)",
      },
    ],
  },
  erc20Search: {
    keys: 'text',
    inPlace: false,
    chainKeys: ['{chain}/'],
    rows: [
      {
        key: '`chain/term/token`',
        value:
          "0: the token's lower-case name, each word of it, its symbol and its address, for /tokens/search (a prefix read, ranked by holders)",
      },
    ],
  },
} satisfies TableDeclarations;
