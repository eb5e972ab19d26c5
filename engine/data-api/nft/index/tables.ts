import type { TableDeclarations } from '../../common/tables.js';

/** The NFT index's tables (writer.ts writes them), and the NFT metadata cache (engine/data-api/nft/metadata.ts). */
export const nftTables = {
  nftOwners: {
    keys: 'hex',
    inPlace: true,
    chainKeys: ['token/{chain}/', 'owner/{chain}/'],
    rows: [
      {
        key: "`token/chain/contract/tokenId/owner` (owners of a token; of a contract by `token/chain/contract/`), `owner/chain/owner/contract/tokenId` (a wallet's NFTs)",
        value: "`{kind: 'erc721' \\| 'erc1155', amount (hex), block}`: what the owner holds, and the last block that moved it; no key at 0",
      },
    ],
  },
  nftTokens: {
    keys: 'hex',
    inPlace: true,
    chainKeys: ['{chain}/'],
    rows: [
      {
        key: '`chain/contract/tokenId`',
        value:
          "`{kind, minted, minter, block, supply (hex), holders}`: a token with at least one holder (the key goes when the last holder's amount reaches 0, as at a burn); `minted`/`minter` the mint's block and transaction sender (`minter` null when the mint was not indexed)",
      },
    ],
  },
  nftCollections: {
    keys: 'hex',
    inPlace: true,
    chainKeys: ['{chain}/'],
    rows: [{ key: '`chain/owner/contract`', value: '`{kind, count, block}`: how many token ids of the contract the wallet holds' }],
  },
  nftStats: {
    keys: 'hex',
    inPlace: true,
    chainKeys: ['{chain}/'],
    rows: [
      {
        key: '`chain/contract`',
        value:
          '`{kind, complete, tokens, owners, transfers}`: token ids held, wallets holding, NFT transfers indexed; `complete` false when the contract had code at the block before indexing started (its ERC-1155 balances are then read with balanceOf at the block before a wallet is first met)',
      },
    ],
  },
  nftRefs: {
    keys: 'hex',
    writtenOnly: true,
    inPlace: true,
    chainKeys: ['block/{chain}/', 'contract/{chain}/', 'wallet/{chain}/', 'walletContract/{chain}/'],
    rows: [
      {
        key: '`block/chain/number/logIndex/batch`, `contract/chain/contract/number/logIndex/batch`, `wallet/chain/wallet/number/logIndex/batch`, `walletContract/chain/wallet/contract/number/logIndex/batch`',
        value:
          "the transfer's reference `[contract, logIndex, tokenId, batch?]` (`TransferRef`, engine/evm/store.ts; its block is the key's), which names its `transfers` row (`nft/…`): NFT transfer lists in block order by block, contract, wallet (from or to, not the zero address) and wallet with contract. Rows written before 2026-11-24 hold the `transfers` key itself (still read)",
      },
    ],
  },
  nftTrades: {
    keys: 'hex',
    inPlace: true,
    chainKeys: ['contract/{chain}/', 'token/{chain}/', 'wallet/{chain}/'],
    rows: [
      {
        key: "`contract/chain/contract/number/logIndex`, `token/chain/contract/tokenId/number/logIndex`, `wallet/chain/wallet/number/logIndex` (the buyer's and the seller's; the value adds `contract`)",
        value:
          "`{transactionHash, timestamp, buyer, seller, price (hex), paymentToken, blockNumber, blockHash, transactionIndex, marketplace, tokenIds}`: one sale per (transaction, buyer, contract), at its first NFT transfer; `marketplace` the transaction's receiver, `paymentToken` null for the native currency",
      },
    ],
  },
  nftMetadata: {
    keys: 'text',
    inPlace: false,
    chainKeys: ['{chain}/'],
    rows: [
      {
        key: '`chain/contract/tokenId`',
        value:
          '`{uri, uriSync, metadata, metadataSync, state, error?}`: the URI of tokenURI/uri (ERC-1155 `{id}` replaced) read by eth_call when the token is first asked about; `metadata` the document as compact JSON (from a `data:` URI at once, from http(s) or the IPFS gateway by one background fetch); `state` `none` (no URI), `inline`, `queued`, `fetched`, `failed`, `unfetched` (ipfs without a gateway, other schemes)',
      },
    ],
  },
} satisfies TableDeclarations;
