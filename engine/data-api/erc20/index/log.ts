import type { Kv } from '../../../ports.js';
import { erc20Transfer, TRANSFER } from '../../../evm/store.js';
import { logAt, type LogRow } from '../../chain/index/logs.js';
import type { WalletTransfer } from './keys.js';

/**
 * An ERC-20 transfer as the indexes keep it: once, as its log's `contractLogs` row under the token's Transfer
 * topic0 (`chain/t/token/topic0/number/logIndex`), decoded with erc20Transfer (logTransfers' ERC-20 case). A store written by schema version 5 or older
 * holds the log under `chain/a/token/number/logIndex` instead (in the compact form, or as an object before
 * 2026-11-24): read too. Such a store also holds the follower's old `transfers` row `erc20/chain/token/number/
 * logIndex`: it is not read, as every indexed block has its log rows (the log index is older than the ERC-20 and
 * transaction indexes whose entries lead here, and is written in the same transaction).
 */

/** The ERC-20 transfer a log of `contract` holds (lower case); undefined when it is no ERC-20 Transfer (an NFT's). */
export function erc20TransferOf(contract: string, log: LogRow): WalletTransfer | undefined {
  const t = erc20Transfer(log);
  return t === undefined
    ? undefined
    : { contract, from: t.from, to: t.to, value: t.value, transactionHash: log.tx, transactionIndex: log.ti };
}

/**
 * The ERC-20 transfer logged by `token` at (`block`, `logIndex`); undefined when no Transfer log is indexed there
 * or it is not an ERC-20 one (a reorg took it back before the indexes did; an NFT's Transfer).
 */
export function erc20TransferAt(kv: Kv, chain: string, token: string, block: number, logIndex: number): WalletTransfer | undefined {
  const contract = token.toLowerCase();
  const log = logAt(kv, chain, contract, block, logIndex, TRANSFER);
  return log === undefined ? undefined : erc20TransferOf(contract, log);
}
