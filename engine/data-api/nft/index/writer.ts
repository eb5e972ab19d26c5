import { inBatches } from '../../common/node-reads.js';
import { encodeFunctionData, parseAbi } from 'viem/utils';
import type { ChainReads } from '../../../evm/chain-reads.js';
import { salesOf, type Sale } from '../../../evm/sales.js';
import { nftTokenPrefix, transferRef, type Transfer } from '../../../evm/store.js';
import type { Kv } from '../../../ports.js';
import { addedInBlock, indexStart, type DataIndex, type IndexedBlock, type IndexWriter } from '../../common/indexer.js';
import { n12 } from '../../common/block-times.js';
import { ZERO_ADDRESS as ZERO } from '../../common/values.js';

/**
 * The NFT indexes, built from each block's ERC-721 Transfer and ERC-1155
 * TransferSingle/TransferBatch logs (transfersOf, the ingest decoder) and its
 * sales (salesOf). Every write goes through the IndexWriter, so a reorg takes
 * back ownership, counts and references alike. Keys (storage/README.md, "NFT indexes"):
 *   nftOwners       token/chain/contract/tokenId(64 hex)/owner    → Holding   (owners of a token; of a contract by its prefix)
 *                   owner/chain/owner/contract/tokenId(64 hex)    → Holding   (NFTs of a wallet)
 *   nftTokens       chain/contract/tokenId(64 hex)                → NftToken  (tokens with at least one holder)
 *   nftCollections  chain/owner/contract                          → Collection (tokens a wallet holds per contract)
 *   nftStats        chain/contract                                → ContractStats
 *   nftRefs         block/chain/number/logIndex/batch, contract/chain/contract/number/…, wallet/chain/wallet/number/…,
 *                   walletContract/chain/wallet/contract/number/…  → the transfer's `transfers` key (lists in block order)
 *   nftTrades       contract/chain/contract/number/logIndex, token/chain/contract/tokenId/number/logIndex → Trade
 *                   wallet/chain/wallet/number/logIndex                 → WalletTrade (the buyer's and the seller's)
 * Ownership is moved by the transfers the index has seen. When indexing starts
 * after block 0, an ERC-1155 contract that already had code at the block before
 * the start has holders the index never saw arrive: the first time a wallet
 * appears in a transfer of one of its ids, its balance is read with balanceOf at
 * the block before (prepare, off the transaction) and counted in. ERC-721 owners
 * are right once a token moves (the last transfer names its owner); an ERC-721
 * token that never moves after the start is not listed.
 */

/** What an owner holds of one token. */
export interface Holding {
  kind: 'erc721' | 'erc1155';
  /** Hex. */
  amount: string;
  /** The last block that moved this owner's amount. */
  block: number;
}

/** A token with holders. */
export interface NftToken {
  kind: 'erc721' | 'erc1155';
  /** The block of its mint (or of its first transfer seen, when minted before indexing started). */
  minted: number;
  /** The minting transaction's sender; null when the mint was not seen. */
  minter: string | null;
  /** The last block that moved it. */
  block: number;
  /** Amount held by all owners (hex): 0x1 for ERC-721. */
  supply: string;
  holders: number;
}

export interface Collection {
  kind: 'erc721' | 'erc1155';
  /** Distinct token ids held. */
  count: number;
  block: number;
}

export interface ContractStats {
  kind: 'erc721' | 'erc1155';
  /** Whether the index saw the contract's whole history (no code before indexing started); else balances are read when first met. */
  complete: boolean;
  /** Token ids with at least one holder. */
  tokens: number;
  /** Wallets holding at least one of its tokens. */
  owners: number;
  transfers: number;
}

/** One sale by the ingest rule (engine/evm/sales.ts), per (transaction, buyer, contract): a bundle lists its ids. */
export interface Trade extends Sale {
  blockNumber: number;
  blockHash: string;
  transactionIndex: number;
  /** The transaction's receiver: the marketplace (or the buyer's own contract). */
  marketplace: string;
  tokenIds: string[];
}

/** A trade as a wallet's list holds it (`wallet/…` keys of `nftTrades`): the trade and its contract, which its key does not name. */
export interface WalletTrade extends Trade {
  contract: string;
}

const num = n12;
const hex6 = (n: number): string => n.toString(16).padStart(6, '0');
const hex4 = (n: number): string => n.toString(16).padStart(4, '0');
export const id64 = (id: bigint): string => id.toString(16).padStart(64, '0');
/** A block number as the NFT keys write it. */
export const blockPart = num;

export const holdingByToken = (chain: string, contract: string, id: bigint, owner: string): string =>
  `token/${nftTokenPrefix(chain, contract, id)}${owner}`;
export const holdingByOwner = (chain: string, owner: string, contract: string, id: bigint): string =>
  `owner/${chain}/${owner}/${contract}/${id64(id)}`;
export const tokenKey = (chain: string, contract: string, id: bigint): string => `${chain}/${contract}/${id64(id)}`;
export const collectionKey = (chain: string, owner: string, contract: string): string => `${chain}/${owner}/${contract}`;
export const statsKey = (chain: string, contract: string): string => `${chain}/${contract}`;
/** A wallet's trade, as buyer or seller, at its first transfer's `number/logIndex`. */
const walletTradeKey = (chain: string, wallet: string, at: string): string => `wallet/${chain}/${wallet}/${at}`;

/** The contract and token id of an `nftOwners`/`nftTokens`/`transfers` key (the 40-hex segment, then the 64-hex one). */
export function tokenOfKey(key: string): { contract: string; tokenId: bigint } {
  const parts = key.split('/');
  const i = parts.findIndex((p, j) => /^0x[0-9a-f]{40}$/.test(p) && /^[0-9a-f]{64}$/.test(parts[j + 1] ?? ''));
  return { contract: parts[i]!, tokenId: BigInt(`0x${parts[i + 1]!}`) };
}

/** What prepare read for a batch: completeness of contracts met for the first time, balances of wallets met for the first time. */
interface Prepared {
  /** contract → whether the index sees its whole history. */
  complete: Map<string, boolean>;
  /** `number/contract/tokenId/owner` → its balance at the block before (ERC-1155 of incomplete contracts). */
  seeds: Map<string, bigint>;
}

const BALANCE_OF = parseAbi(['function balanceOf(address, uint256) view returns (uint256)']);
const seedKey = (n: number, contract: string, id: bigint, owner: string): string => `${n}/${contract}/${id}/${owner}`;

export function nftIndex(reads?: Pick<ChainReads, 'call' | 'code'>): DataIndex<Prepared> {
  return {
    name: 'nft',
    prepare: (blocks, kv) => prepare(reads, blocks, kv),
    apply(w, block, prepared) {
      const all = block.transfers;
      for (const t of all) if (t.kind !== 'erc20') applyTransfer(w, block, t, prepared);
      applyTrades(w, block, all);
    },
  };
}

async function prepare(reads: Pick<ChainReads, 'call' | 'code'> | undefined, blocks: readonly IndexedBlock[], kv: Kv): Promise<Prepared> {
  const out: Prepared = { complete: new Map(), seeds: new Map() };
  const chain = blocks[0]!.chain;
  // Before the first batch is written, the batch's own first block.
  const start = indexStart(kv, chain) ?? blocks[0]!.number;
  const asks: Array<() => Promise<void>> = [];
  for (const block of blocks) {
    for (const t of block.transfers) {
      if (t.kind === 'erc20') continue;
      const contract = t.contract.toLowerCase();
      if (!out.complete.has(contract)) {
        const known = kv.get<ContractStats>('nftStats', statsKey(chain, contract));
        // From block 0 everything is seen; otherwise a contract without code before the start is.
        const code = known !== undefined || start === 0 || reads === undefined ? undefined : await reads.code(chain, contract, start - 1);
        out.complete.set(contract, known?.complete ?? (start === 0 || reads === undefined || code === '0x'));
      }
      if (t.kind !== 'erc1155' || out.complete.get(contract) === true) continue;
      const id = BigInt(t.tokenId!);
      for (const owner of [t.from.toLowerCase(), t.to.toLowerCase()]) {
        const key = seedKey(block.number, contract, id, owner);
        if (owner === ZERO || out.seeds.has(key) || kv.has('nftOwners', holdingByToken(chain, contract, id, owner))) continue;
        out.seeds.set(key, 0n);
        const data = encodeFunctionData({ abi: BALANCE_OF, functionName: 'balanceOf', args: [owner as `0x${string}`, id] });
        asks.push(() =>
          reads!.call(chain, contract, data, block.number - 1).then((r) => {
            // A node without that block's state cannot say: the wallet counts from 0, as from block 0.
            if (r !== null && r.length >= 66) out.seeds.set(key, BigInt(r.slice(0, 66)));
          }),
        );
      }
    }
  }
  await inBatches(asks);
  return out;
}

function applyTransfer(w: IndexWriter, block: IndexedBlock, t: Transfer, prepared: Prepared): void {
  const { chain } = block;
  const contract = t.contract.toLowerCase();
  const [from, to] = [t.from.toLowerCase(), t.to.toLowerCase()];
  // The transfer's reference (contract, log index, token id, batch position); its block is the key's.
  const ref = transferRef(t);
  const at = `${num(t.blockNumber)}/${hex6(t.logIndex)}/${hex4(t.batchIndex ?? 0)}`;
  w.put('nftRefs', `block/${chain}/${at}`, ref);
  w.put('nftRefs', `contract/${chain}/${contract}/${at}`, ref);
  for (const wallet of new Set([from, to])) {
    if (wallet === ZERO) continue;
    w.put('nftRefs', `wallet/${chain}/${wallet}/${at}`, ref);
    w.put('nftRefs', `walletContract/${chain}/${wallet}/${contract}/${at}`, ref);
  }
  const kind = t.kind as Holding['kind'];
  const sk = statsKey(chain, contract);
  const stats = w.get<ContractStats>('nftStats', sk) ?? {
    kind,
    complete: prepared.complete.get(contract) ?? true,
    tokens: 0,
    owners: 0,
    transfers: 0,
  };
  w.put('nftStats', sk, { ...stats, transfers: stats.transfers + 1 });
  const amount = BigInt(t.value);
  const id = BigInt(t.tokenId!);
  const minter = String(block.record.txs[t.transactionIndex]?.tx['from'] ?? '').toLowerCase() || null;
  // A wallet met for the first time in an incomplete contract: what it held before this block, counted in first (once).
  for (const owner of [to, from]) {
    const key = seedKey(block.number, contract, id, owner);
    const seed = prepared.seeds.get(key);
    if (seed === undefined) continue;
    prepared.seeds.delete(key);
    if (seed > 0n && !w.has('nftOwners', holdingByToken(chain, contract, id, owner)))
      move(w, block, { contract, id, kind, owner, delta: seed, mint: false, minter: null });
  }
  // The receiver first: a token moving between owners never looks, halfway, as if it had no holder (and lost its mint).
  if (to !== ZERO) move(w, block, { contract, id, kind, owner: to, delta: amount, mint: from === ZERO, minter });
  if (from !== ZERO) move(w, block, { contract, id, kind, owner: from, delta: -amount, mint: false, minter });
}

interface Move {
  contract: string;
  id: bigint;
  kind: Holding['kind'];
  owner: string;
  delta: bigint;
  mint: boolean;
  minter: string | null;
}

/** Moves an owner's amount of a token by `delta` (never below 0), keeping the token, collection and contract counts. */
function move(w: IndexWriter, block: IndexedBlock, m: Move): void {
  const { chain } = block;
  const byToken = holdingByToken(chain, m.contract, m.id, m.owner);
  const before = BigInt(w.get<Holding>('nftOwners', byToken)?.amount ?? '0x0');
  let after = before + m.delta;
  if (after < 0n) after = 0n; // history before indexing started: what was not seen arriving cannot leave
  if (after === before && after === 0n) return;
  const byOwner = holdingByOwner(chain, m.owner, m.contract, m.id);
  if (after === 0n) {
    w.remove('nftOwners', byToken);
    w.remove('nftOwners', byOwner);
  } else {
    const holding: Holding = { kind: m.kind, amount: `0x${after.toString(16)}`, block: block.number };
    w.put('nftOwners', byToken, holding);
    w.put('nftOwners', byOwner, holding);
  }
  const sk = statsKey(chain, m.contract);
  const stats = w.get<ContractStats>('nftStats', sk)!;
  const tk = tokenKey(chain, m.contract, m.id);
  const token = w.get<NftToken>('nftTokens', tk) ?? {
    kind: m.kind,
    minted: block.number,
    minter: m.mint ? m.minter : null,
    block: block.number,
    supply: '0x0',
    holders: 0,
  };
  const gained = before === 0n && after > 0n ? 1 : before > 0n && after === 0n ? -1 : 0;
  const next: NftToken = {
    ...token,
    block: block.number,
    supply: `0x${(BigInt(token.supply) + after - before).toString(16)}`,
    holders: token.holders + gained,
  };
  if (token.holders === 0 && m.mint) Object.assign(next, { minted: block.number, minter: m.minter });
  let { tokens, owners } = stats;
  if (next.holders === 0) w.remove('nftTokens', tk);
  else w.put('nftTokens', tk, next);
  if (token.holders === 0 && next.holders > 0) tokens++;
  if (token.holders > 0 && next.holders === 0) tokens--;
  if (gained !== 0) {
    const ck = collectionKey(chain, m.owner, m.contract);
    const c = w.get<Collection>('nftCollections', ck) ?? { kind: m.kind, count: 0, block: block.number };
    const count = c.count + gained;
    if (count === 0) w.remove('nftCollections', ck);
    else w.put('nftCollections', ck, { ...c, count, block: block.number });
    if (c.count === 0 && count > 0) owners++;
    if (c.count > 0 && count === 0) owners--;
  }
  w.put('nftStats', sk, { ...stats, tokens, owners });
}

/** The block's sales grouped into trades: one per (transaction, buyer, contract), at its first transfer's position. */
function applyTrades(w: IndexWriter, block: IndexedBlock, all: readonly Transfer[]): void {
  const trades = new Map<string, { at: string; trade: Trade }>();
  for (const { transfer: t, sale } of salesOf(block.record, all)) {
    const contract = t.contract.toLowerCase();
    const group = `${t.transactionIndex}/${sale.buyer}/${contract}`;
    const id = BigInt(t.tokenId!).toString();
    const known = trades.get(group);
    if (known !== undefined) {
      if (!known.trade.tokenIds.includes(id)) known.trade.tokenIds.push(id);
      continue;
    }
    const tx = block.record.txs[t.transactionIndex]!.tx;
    const trade: Trade = {
      ...sale,
      blockNumber: block.number,
      blockHash: block.hash,
      transactionIndex: t.transactionIndex,
      marketplace: String(tx['to'] ?? ZERO).toLowerCase(),
      tokenIds: [id],
    };
    trades.set(group, { at: `${num(t.blockNumber)}/${hex6(t.logIndex)}`, trade });
  }
  for (const [group, { at, trade }] of trades) {
    const contract = group.split('/')[2]!;
    w.put('nftTrades', `contract/${block.chain}/${contract}/${at}`, trade);
    for (const id of trade.tokenIds) w.put('nftTrades', `token/${nftTokenPrefix(block.chain, contract, BigInt(id))}${at}`, trade);
    // The buyer's and the seller's lists (never the same wallet: a transfer to its own sender is no sale).
    for (const wallet of [trade.buyer, trade.seller]) w.put('nftTrades', walletTradeKey(block.chain, wallet, at), { ...trade, contract });
  }
}

/**
 * The wallet rows of a trade indexed before they existed (the store's upgrade to schema 10): for a `contract/…` row of
 * `nftTrades`, its buyer's and seller's rows, also named in the block's undo row while it has one (a reorg takes
 * them back with the trade). Undefined for any other row, or one whose wallet rows are there.
 */
export function walletTradeRows(kv: Kv, key: string, value: unknown): Array<[string, WalletTrade]> | undefined {
  if (!key.startsWith('contract/')) return undefined;
  const [, chain, contract, number, logIndex] = key.split('/') as [string, string, string, string, string];
  const trade = value as Trade;
  const keys = [trade.buyer, trade.seller].map((wallet) => walletTradeKey(chain, wallet, `${number}/${logIndex}`));
  if (keys.every((k) => kv.has('nftTrades', k))) return undefined;
  addedInBlock(
    kv,
    chain,
    trade.blockNumber,
    keys.map((k) => ['nftTrades', k] as const),
  );
  return keys.map((k) => [k, { ...trade, contract }]);
}
