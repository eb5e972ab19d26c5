import { pos } from '../../../evm/store.js';

/**
 * Keys and rows of the ERC-20 indexes (storage/README.md, "ERC-20 indexes").
 * Addresses are lower case; quantities are 0x hex strings (uint256 does not fit msgpack integers).
 */

const UINT256_MAX = 2n ** 256n - 1n;

/**
 * erc20Balances `chain/wallet/token` → balance (hex), above 0 only (a wallet's list reads no empty rows);
 * erc20Pairs, same key → 0: the pair's balance is known (read once from the node, or started at 0).
 */
export const balanceKey = (chain: string, wallet: string, token: string): string => `${chain}/${wallet}/${token}`;
export const walletBalancesPrefix = (chain: string, wallet: string): string => `${chain}/${wallet}/`;

/** erc20Holders `chain/token/(2^256−1−balance, 64 hex)/wallet` → 0: key order is balance descending. */
export const holderKey = (chain: string, token: string, balance: bigint, wallet: string): string =>
  `${holderPrefix(chain, token)}${(UINT256_MAX - balance).toString(16).padStart(64, '0')}/${wallet}`;
export const holderPrefix = (chain: string, token: string): string => `${chain}/${token}/`;
/** A holder key's wallet and balance. */
export function holderOf(key: string): { wallet: string; balance: bigint } {
  const parts = key.split('/');
  return { wallet: parts.at(-1)!, balance: UINT256_MAX - BigInt(`0x${parts.at(-2)!}`) };
}

/** erc20Tokens `chain/token` → what the indexes know of a token as a whole. */
export interface TokenState {
  /** totalSupply (hex): read once at the block before its first transfer, then moved by mints and burns. */
  supply: string;
  /** Wallets with a balance above 0. */
  holders: number;
  /** The token's creation is in the indexed range: every balance started at 0 there, and its holder list is exact. */
  created: boolean;
  /** Where and when it was created (created tokens only). */
  createdBlock?: number;
  createdAt?: number;
  /** Its name, symbol and address are in the search index. */
  named?: boolean;
}
export const tokenKey = (chain: string, token: string): string => `${chain}/${token}`;

/** erc20HolderDays `chain/token/day(6 hex, days since the epoch)` → holders at the end of the day (days with a change). */
export const dayKey = (chain: string, token: string, day: number): string => `${chain}/${token}/${day.toString(16).padStart(6, '0')}`;
/** erc20HolderDeltas `chain/token/timestamp(10 hex)/number(12 hex)` → the block's change of the holder count. */
export const deltaKey = (chain: string, token: string, timestamp: number, number: number): string =>
  `${chain}/${token}/${timestamp.toString(16).padStart(10, '0')}/${number.toString(16).padStart(12, '0')}`;
export const DAY = 86_400;

/** erc20Approvals `chain/owner/token/spender` → the latest Approval with a value above 0 (an approval of 0 removes it). */
export interface ApprovalRow {
  value: string;
  blockNumber: number;
  blockHash: string;
  timestamp: number;
  transactionHash: string;
  logIndex: number;
}
export const approvalKey = (chain: string, owner: string, token: string, spender: string): string =>
  `${chain}/${owner}/${token}/${spender}`;
export const approvalsPrefix = (chain: string, owner: string): string => `${chain}/${owner}/`;

/**
 * erc20Wallet `chain/wallet/number/logIndex` → the token's address (lower case), under the transfer's from and its
 * to (NFTs never): the transfer itself is the token's log row `contractLogs` `chain/t/token/topic0/number/logIndex`, read as a
 * WalletTransfer by erc20TransferAt (engine/data-api/erc20/index/log.ts).
 */
export interface WalletTransfer {
  contract: string;
  from: string;
  to: string;
  value: string;
  transactionHash: string;
  transactionIndex: number;
}
export const walletTransferKey = (chain: string, wallet: string, number: number, logIndex: number): string =>
  `${walletTransfersPrefix(chain, wallet)}${pos(number, logIndex)}`;
export const walletTransfersPrefix = (chain: string, wallet: string): string => `${chain}/${wallet}/`;

/** erc20Search `chain/term/token` → 0: the lower-case name, each word of it, the symbol and the address. */
export const searchKey = (chain: string, term: string, token: string): string => `${chain}/${term}/${token}`;
export function searchTerms(name: string, symbol: string, token: string): string[] {
  const words = name
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w.length > 0);
  // '/' separates key segments: a term never holds one.
  const terms = [name.toLowerCase(), ...words, symbol.toLowerCase(), token]
    .map((t) => t.replaceAll('/', ' ').trim())
    .filter((t) => t.length > 0);
  return [...new Set(terms)];
}

export const hex = (n: bigint): string => `0x${n.toString(16)}`;
