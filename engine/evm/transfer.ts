/** A token transfer of a block (transfersOf in store.ts): ERC-20 Transfer, ERC-721 Transfer, an id of ERC-1155 TransferSingle or TransferBatch. */
export interface Transfer {
  kind: 'erc20' | 'erc721' | 'erc1155';
  contract: string;
  from: string;
  to: string;
  tokenId?: string;
  /** ERC-20 value or ERC-1155 amount (hex); 0x1 for ERC-721. */
  value: string;
  operator?: string;
  blockNumber: number;
  logIndex: number;
  transactionHash: string;
  transactionIndex: number;
  /** Position of the id in its TransferBatch (absent for other logs): a batch may list one id twice. */
  batchIndex?: number;
}
