import type { Kv } from '../ports.js';
import { logTransfers } from '../evm/store.js';
import { contractLogKey, logRow, type StoredContractLog } from './contract-logs.js';
import type { WalletTransfer } from './erc20-keys.js';

/**
 * An ERC-20 transfer as the indexes keep it: once, as its log's `contractLogs` row (`chain/a/token/number/
 * logIndex`), decoded with logTransfers. Both forms of the row are read: the compact one and the one a store
 * written before 2026-11-24 holds. Such a store also holds the follower's old `transfers` row
 * `erc20/chain/token/number/logIndex`: it is not read, as every indexed block has its log rows (the log index is
 * older than the ERC-20 and transaction indexes whose entries lead here, and is written in the same transaction).
 */

/**
 * The ERC-20 transfer logged by `token` at (`block`, `logIndex`); undefined when no log is indexed there or it
 * is not an ERC-20 Transfer (a reorg took it back before the indexes did; an NFT's Transfer).
 */
export function erc20TransferAt(kv: Kv, chain: string, token: string, block: number, logIndex: number): WalletTransfer | undefined {
  const contract = token.toLowerCase();
  const stored = kv.get<StoredContractLog>('contractLogs', contractLogKey(chain, contract, block, logIndex));
  if (stored === undefined) return undefined;
  const log = logRow(stored);
  const [t] = logTransfers(log);
  if (t?.kind !== 'erc20') return undefined;
  return { contract, from: t.from, to: t.to, value: t.value, transactionHash: log.tx, transactionIndex: log.ti };
}
