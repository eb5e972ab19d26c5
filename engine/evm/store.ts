import type { Kv } from '../ports.js';
import { blockHashKey, blockKey, removeCanonical } from '../ingest/chain-store.js';
import { buildProbe } from './probe.js';
import { decodeRecord, encodeRecord, type BlockRecord } from './record.js';
import { salesOf } from './sales.js';
import type { Transfer } from './transfer.js';

// Declared in transfer.ts, which sales.ts reads too (store.ts imports sales.ts); its readers import it from here.
export type { Transfer };

/**
 * Writing a block: its record, its probe column and the transfer indexes the
 * Data API reads, in one transaction. Keys (storage/README.md):
 *   blocks, probes            chain/number(12 hex digits)
 *   transfers  nft/chain/contract/tokenId(64 hex)/number/logIndex(6 hex)/batch(4 hex)   ERC-721 Transfer, ERC-1155 TransferSingle/Batch
 *   sales      chain/contract/tokenId/number/logIndex/batch                            an NFT transfer that was paid for (engine/evm/sales.ts)
 * Transfer values carry what a Data API result needs (block hash and time, the
 * transaction's value): block records are pruned, transfer indexes stay. An
 * ERC-20 Transfer is stored once, as its log (the Data API's `contractLogs`
 * row, engine/data-api/erc20/index/log.ts); a store written before 2026-11-24 still
 * holds `transfers` rows under `erc20/chain/contract/number/logIndex`, unread,
 * and transaction summaries naming transfers by such keys (transferKeyRef).
 */
/** topic0 of ERC-20/721 Transfer, ERC-1155 TransferSingle and TransferBatch. */
export const TRANSFER = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';
export const TRANSFER_SINGLE = '0xc3d58168c5ae7397731d063d5bbf3d657854427343f4c083240f7aacaa2d0f62';
export const TRANSFER_BATCH = '0x4a39dc06d4c0dbc64b70af90fd698a233a518aa5d07e595d983b8c0526c8f7fb';

/** What the `transfers` table holds under an NFT key (its position, block number and log index, is in the key). */
export interface StoredTransfer extends Omit<Transfer, 'blockNumber' | 'logIndex'> {
  blockHash: string;
  /** The block's timestamp, unix seconds. */
  timestamp: number;
  /** The transaction's native value (hex), which the NFT transfer record reports as `value`. */
  txValue: string;
}

/** The address an indexed topic holds (its last 20 bytes). */
export const topicAddress = (t: string | undefined): string => `0x${(t ?? '').slice(26)}`;
/** The i-th 32-byte word of a log's data, as 0x hex. */
export const word = (data: string, i: number): string => `0x${data.slice(2 + i * 64, 2 + (i + 1) * 64)}`;
const quantity = (hexWord: string): string => `0x${BigInt(hexWord).toString(16)}`;

/** An ERC-20 Transfer log's parties and amount (0x hex); undefined for any other log. */
export function erc20Transfer(l: { topics: string[]; data: string }): { from: string; to: string; value: string } | undefined {
  const { topics, data } = l;
  return topics.length === 3 && topics[0] === TRANSFER && data.length >= 66
    ? { from: topicAddress(topics[1]), to: topicAddress(topics[2]), value: quantity(word(data, 0)) }
    : undefined;
}

/** What one log transfers (ERC-20, ERC-721, ERC-1155 single or batch: one per id); quantities as 0x hex. */
export type LogTransfer = Pick<Transfer, 'kind' | 'from' | 'to' | 'tokenId' | 'value' | 'operator' | 'batchIndex'>;

export function logTransfers(l: { topics: string[]; data: string }): LogTransfer[] {
  const [t0, t1, t2, t3] = l.topics;
  const erc20 = erc20Transfer(l);
  if (erc20 !== undefined) return [{ kind: 'erc20', from: erc20.from, to: erc20.to, value: erc20.value }];
  if (t0 === TRANSFER && l.topics.length === 4)
    return [{ kind: 'erc721', from: topicAddress(t1), to: topicAddress(t2), tokenId: quantity(t3!), value: '0x1' }];
  if (t0 === TRANSFER_SINGLE && l.topics.length === 4 && l.data.length >= 130) {
    return [
      {
        kind: 'erc1155',
        operator: topicAddress(t1),
        from: topicAddress(t2),
        to: topicAddress(t3),
        tokenId: quantity(word(l.data, 0)),
        value: quantity(word(l.data, 1)),
      },
    ];
  }
  if (t0 === TRANSFER_BATCH && l.topics.length === 4) {
    return decodeBatch(l.data).map(([tokenId, value], batchIndex) => ({
      kind: 'erc1155',
      operator: topicAddress(t1),
      from: topicAddress(t2),
      to: topicAddress(t3),
      tokenId,
      value,
      batchIndex,
    }));
  }
  return [];
}

/** The ERC-20, ERC-721 and ERC-1155 transfers of a block, in log order (a TransferBatch gives one per id). */
export function transfersOf(r: BlockRecord): Transfer[] {
  const number = Number(r.header['number']);
  const out: Transfer[] = [];
  r.txs.forEach((t, txIndex) => {
    for (const l of t.logs) {
      const base = {
        contract: l.address,
        blockNumber: number,
        logIndex: Number(l.logIndex),
        transactionHash: String(t.tx['hash']),
        transactionIndex: txIndex,
      };
      for (const x of logTransfers(l)) out.push({ ...base, ...x });
    }
  });
  return out;
}

/** TransferBatch data: abi-encoded (uint256[] ids, uint256[] values). Malformed data yields nothing. */
function decodeBatch(data: string): Array<[string, string]> {
  try {
    const w = (i: number): bigint => BigInt(word(data, i));
    const idsAt = Number(w(0)) / 32;
    const valuesAt = Number(w(1)) / 32;
    const n = Number(w(idsAt));
    if (n !== Number(w(valuesAt)) || n > 10_000) return [];
    return Array.from({ length: n }, (_, i) => [`0x${w(idsAt + 1 + i).toString(16)}`, `0x${w(valuesAt + 1 + i).toString(16)}`]);
  } catch {
    return [];
  }
}

/** A transfer's place in key order: block number (12 hex) / log index (6 hex). */
export const pos = (n: number, logIndex: number): string => `${n.toString(16).padStart(12, '0')}/${logIndex.toString(16).padStart(6, '0')}`;

/** pos() read back: the block number and log index of a key whose position ends at `end` (by default the key's end). */
export function posAt(key: string, end = key.length): { blockNumber: number; logIndex: number } {
  return { blockNumber: parseInt(key.slice(end - 19, end - 7), 16), logIndex: parseInt(key.slice(end - 6, end), 16) };
}

/** The key prefix of one NFT's transfers and sales: `chain/contract/tokenId(64 hex)/`. */
export const nftTokenPrefix = (chain: string, contract: string, tokenId: bigint): string =>
  `${chain}/${contract.toLowerCase()}/${tokenId.toString(16).padStart(64, '0')}/`;

/** Where an NFT transfer lies in its token's history: block, log and (TransferBatch) position, in key order. */
const nftPosition = (chain: string, t: Pick<Transfer, 'contract' | 'tokenId' | 'blockNumber' | 'logIndex' | 'batchIndex'>): string =>
  `${nftTokenPrefix(chain, t.contract, BigInt(t.tokenId!))}${pos(t.blockNumber, t.logIndex)}/${(t.batchIndex ?? 0).toString(16).padStart(4, '0')}`;

/** An NFT key's block number and log index (its last three segments are number/logIndex/batch). */
export const nftKeyPosition = (key: string): { blockNumber: number; logIndex: number } => posAt(key, key.lastIndexOf('/'));

/**
 * The index keys of one transfer: by contract (and token id for NFTs); an NFT's sale key. (A wallet's transfers
 * are the Data API's indexes, built behind the follower: `erc20Wallet`, `nftRefs`.)
 */
export function transferKeys(chain: string, t: Transfer): { byContract: string; sale?: string } {
  if (t.kind === 'erc20') return { byContract: erc20TransferKey(chain, t.contract, t.blockNumber, t.logIndex) };
  const nft = nftPosition(chain, t);
  return { byContract: `nft/${nft}`, sale: nft };
}

/**
 * A transfer as its transaction's summary names it (the summary's key gives the block): ERC-20
 * [contract, logIndex]; NFT [contract, logIndex, tokenId, batchIndex] (batchIndex left out when 0, as in the
 * key). Contract lower case, tokenId a 0x quantity. Resolved to its row by transferOfSummary
 * (engine/data-api/transactions/source.ts) alone.
 */
export type TransferRef = readonly [contract: string, logIndex: number, tokenId?: string, batchIndex?: number];

export function transferRef(t: Transfer): TransferRef {
  const contract = t.contract.toLowerCase();
  if (t.kind === 'erc20') return [contract, t.logIndex];
  return t.batchIndex ? [contract, t.logIndex, t.tokenId!, t.batchIndex] : [contract, t.logIndex, t.tokenId!];
}

/** The `transfers` key (by contract) a reference of block `number` names (an ERC-20 one: its name, erc20TransferKey, under which nothing is stored since 2026-11-24). */
export function transferRefKey(chain: string, number: number, [contract, logIndex, tokenId, batchIndex]: TransferRef): string {
  if (tokenId === undefined) return erc20TransferKey(chain, contract, number, logIndex);
  return `nft/${nftPosition(chain, { contract, tokenId, blockNumber: number, logIndex, batchIndex })}`;
}

/** The reference a `transfers` key (by contract) names: what a summary written before 2026-11-24 held. */
export function transferKeyRef(key: string): TransferRef {
  const parts = key.split('/');
  if (parts[0] === 'erc20') return [parts.at(-3)!, parseInt(parts.at(-1)!, 16)];
  const [contract, tokenId, , logIndex, batch] = parts.slice(-5);
  const ref = [contract!, parseInt(logIndex!, 16), `0x${BigInt(`0x${tokenId!}`).toString(16)}`] as const;
  const batchIndex = parseInt(batch!, 16);
  return batchIndex ? [...ref, batchIndex] : ref;
}

/**
 * An ERC-20 transfer's name: `erc20/chain/contract/number/logIndex` (contract lower case, whatever case the node
 * wrote). No row is written under it since 2026-11-24 (the transfer is its `contractLogs` row); transaction
 * summaries written before then name their ERC-20 transfers by it (transferKeyRef reads it back).
 */
export const erc20TransferKey = (chain: string, contract: string, number: number, logIndex: number): string =>
  `erc20/${chain}/${contract.toLowerCase()}/${pos(number, logIndex)}`;

/** The tables written with each block beside its record and probe column (`blocks`, `probes`). */
export type IndexTable = 'canon' | 'blockHashes' | 'transfers' | 'sales';
export interface IndexRow {
  table: IndexTable;
  key: string;
  value: unknown;
}

/** What a block adds to the index tables: its hash both ways, its NFT transfers by contract and token, its sales. */
export function indexRows(chain: string, r: BlockRecord): IndexRow[] {
  const number = Number(r.header['number']);
  const hash = String(r.header['hash']);
  const rows: IndexRow[] = [
    { table: 'canon', key: blockKey(chain, number), value: r.header['hash'] },
    { table: 'blockHashes', key: blockHashKey(chain, hash), value: number },
  ];
  const block = { blockHash: hash, timestamp: Number(r.header['timestamp']) };
  const transfers = transfersOf(r);
  for (const t of transfers) {
    // An ERC-20 transfer is its log's `contractLogs` row (the Data API's): none here.
    if (t.kind === 'erc20') continue;
    const { blockNumber: _inKey, logIndex: _alsoInKey, ...rest } = t;
    // What the NFT transfers endpoint answers outlives the block record.
    rows.push({
      table: 'transfers',
      key: transferKeys(chain, t).byContract,
      value: { ...rest, ...block, txValue: String(r.txs[t.transactionIndex]!.tx['value'] ?? '0x0') } satisfies StoredTransfer,
    });
  }
  for (const { transfer, sale } of salesOf(r, transfers))
    rows.push({ table: 'sales', key: transferKeys(chain, transfer).sale!, value: sale });
  return rows;
}

/** Stores the block as canonical: its record, hash, probe column, transfer and sales indexes; call inside a transaction. */
export function writeBlock(kv: Kv, chain: string, r: BlockRecord): { recordBytes: number; probeBytes: number } {
  const key = blockKey(chain, Number(r.header['number']));
  const record = encodeRecord(r);
  const probe = buildProbe(r);
  kv.putRaw('blocks', key, record);
  kv.putRaw('probes', key, probe);
  for (const row of indexRows(chain, r)) kv.put(row.table, row.key, row.value);
  return { recordBytes: record.byteLength, probeBytes: probe.byteLength };
}

/** Removes a block and everything written with it (a reorg); call inside a transaction. */
export function removeBlock(kv: Kv, chain: string, number: number): void {
  const key = blockKey(chain, number);
  const bytes = kv.getRaw('blocks', key);
  if (bytes !== undefined) {
    for (const t of transfersOf(decodeRecord(bytes))) {
      const keys = transferKeys(chain, t);
      // An ERC-20 key holds a row only when written before 2026-11-24: removed all the same.
      kv.remove('transfers', keys.byContract);
      if (keys.sale !== undefined) kv.remove('sales', keys.sale);
    }
  }
  removeCanonical(kv, chain, number);
}
