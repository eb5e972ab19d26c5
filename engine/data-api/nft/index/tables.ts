import type { Table } from '../../../ports.js';

/** Every key range of the NFT indexes and metadata cache that holds one chain's rows (a chain cleared: `chainpost devnet reset`). */
export const nftChainPrefixes = (chain: string): Array<[Table, string]> => [
  ['nftOwners', `token/${chain}/`],
  ['nftOwners', `owner/${chain}/`],
  ['nftTokens', `${chain}/`],
  ['nftCollections', `${chain}/`],
  ['nftStats', `${chain}/`],
  ...['block', 'contract', 'wallet', 'walletContract'].map((k): [Table, string] => ['nftRefs', `${k}/${chain}/`]),
  ['nftTrades', `contract/${chain}/`],
  ['nftTrades', `token/${chain}/`],
  ['nftMetadata', `${chain}/`],
];
