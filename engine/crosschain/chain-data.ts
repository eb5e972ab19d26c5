import { z } from 'zod';
import type { Chain, ChainFamily } from '../chains/registry.js';
import { isUnspent } from '../bitcoin/address-index.js';
import type { BtcTransaction } from '../bitcoin/block.js';
import { BtcRecordView } from '../bitcoin/record.js';
import { txFlow } from '../bitcoin/tx-flow.js';
import { transaction, blockFields } from '../data-api/transactions/txs.js';
import type { DataDeps } from '../data-api/common/deps.js';
import { hash32 } from '../data-api/common/params.js';
import { blockNumberOf, indexedRecordOf, transferOfSummary, txOrNotFound } from '../data-api/transactions/source.js';
import { summarize, type TxSummary } from '../data-api/transactions/index/summary.js';
import { feeWei, txItem } from '../data-api/transactions/item.js';
import type { BlockRecord } from '../evm/record.js';
import { badRequest, notFound } from '../errors.js';
import { blockKey } from '../ingest/chain-store.js';
import { canonicalNumber } from '../ingest/block-hashes.js';
import { solanaTx } from '../solana/body.js';
import { SolRecordView } from '../solana/record.js';
import type { SolTransaction } from '../solana/scan.js';
import { validate } from '../schema.js';
import { v1ChainId } from './chains.js';

/**
 * GET /v1/chains/:chainAlias/blocks/:blockIdentifier and /transactions/:txHash (data-api-notes §4.1, §4.2): one
 * envelope for the three families, read from what this server stores, with the family's own fields under
 * `evmSpecific`, `bitcoinSpecific` or `solanaSpecific`. Decisions where the reference is vague:
 * - Amounts (value, fees, token amounts) are decimal strings in the chain's smallest unit (wei, satoshis,
 *   lamports); times are Unix seconds. `chainFamily` is EVM, Bitcoin or Solana, the hosted service's values (data-api-notes §4.2).
 * - A transaction's id is `txid` in every family (the Bitcoin DTO's name): the EVM hash, the Solana signature.
 * - A block answers its transactions whole, `itemsOnPage` (100) a page, `page` from 1 (the Bitcoin DTO's paging).
 * - A Bitcoin block's `height`, a Solana slot's `height` is its slot (what the path names it by; the block
 *   height is in solanaSpecific). Fields the records do not keep are null: Bitcoin's chainwork, miner, raw hex
 *   and miscJson, a Solana slot's size and a Solana transaction's value (lamport balances are not stored).
 * - tokenTransfers: the EVM transaction's ERC-20 and NFT transfers; none for Bitcoin; for Solana the changes of
 *   its token balances (post − pre per token account), the node's only record of what moved.
 * - enrich, includeMethodLabel, decodeInput, decodeLogs, includedTopicZeros and excludeFields are accepted and
 *   not applied (labels are off-chain; the v2.2 /verbose endpoints decode).
 * - A block or transaction the server does not hold is a 404 saying why: past the head, before the first block
 *   followed, or (Bitcoin, Solana) in a block pruned out of the retention window. EVM blocks past retention are
 *   read back from the node, as the v2.2 endpoints do. A Solana transaction is looked for in the slots still
 *   stored, newest first (this server keeps no signature index), at most SOLANA_SCAN_SLOTS of them.
 */

export const ITEMS_ON_PAGE = 100;
/** Stored slots a Solana signature is looked for in, newest first. */
export const SOLANA_SCAN_SLOTS = 5_000;

const BASE58 = '[1-9A-HJ-NP-Za-km-z]';
const NUMBER = '\\d{1,15}';
/** The block identifiers and transaction ids of each family, as the path takes them. */
const IDENTIFIERS: Record<Exclude<ChainFamily, 'aptos'>, { block: RegExp; blockText: string; tx: z.ZodType<string> }> = {
  evm: {
    block: new RegExp(`^(${NUMBER}|0x[0-9a-fA-F]{64})$`),
    blockText: 'a block number (decimal) or a block hash (0x and 64 hex digits)',
    tx: hash32,
  },
  bitcoin: {
    block: new RegExp(`^(${NUMBER}|[0-9a-fA-F]{64})$`),
    blockText: 'a block height (decimal) or a block hash (64 hex digits)',
    tx: z
      .string()
      .regex(/^[0-9a-fA-F]{64}$/, 'not a txid (64 hex digits)')
      .transform((h) => h.toLowerCase()),
  },
  solana: {
    block: new RegExp(`^(${NUMBER}|${BASE58}{32,44})$`),
    blockText: 'a slot (decimal) or a blockhash (base58)',
    tx: z.string().regex(new RegExp(`^${BASE58}{64,88}$`), 'not a transaction signature (base58)'),
  },
};

/** A block's query (its identifier is checked by its family's pattern). */
export const blockPageQuery = z.object({
  page: z
    .string()
    .regex(/^[1-9]\d{0,8}$/, 'a page number from 1')
    .transform(Number)
    .default(1),
});

type Family = keyof typeof IDENTIFIERS;
const familyOf = (chain: Chain): Family => chain.family as Family;

/** The block's number (height, slot) a valid identifier names, if the store holds a canonical block of that hash. */
function numberOf(deps: DataDeps, chain: Chain, identifier: string): number | undefined {
  if (chain.family === 'evm') return blockNumberOf(deps, chain.key, identifier);
  return /^\d+$/.test(identifier) ? Number(identifier) : canonicalNumber(deps.kv, chain.key, identifier);
}

/** Why block `n` (or the block `identifier` names) is not answered: a 404 saying so. */
function missingBlock(deps: DataDeps, chain: Chain, identifier: string, n: number | undefined) {
  const f = deps.follower(chain.key);
  const what = `block ${identifier} of chain ${chain.key}`;
  if (n === undefined) return notFound(`${what} is not a canonical block this server holds`);
  if (f !== undefined && n > f.head) return notFound(`${what} is past this server's head (${f.head})`);
  if (deps.kv.get<string>('canon', blockKey(chain.key, n)) !== undefined)
    return notFound(`${what} is past the retention window: its record was pruned (oldest stored: ${f?.oldest ?? 'none'})`);
  return notFound(
    `${what} is not a block this server holds${chain.family === 'solana' ? ' (a skipped slot, or' : ' (or'} before the first block it followed${f === undefined ? '' : `, ${f.oldest}`})`,
  );
}

/** The stored record bytes of block `n`, or the 404 saying why there are none. */
function storedRecord(deps: DataDeps, chain: Chain, identifier: string, n: number | undefined): Uint8Array {
  const bytes = n === undefined ? undefined : deps.kv.getRaw('blocks', blockKey(chain.key, n));
  if (bytes === undefined) throw missingBlock(deps, chain, identifier, n);
  return bytes;
}

/** The page `page` of `count` transactions: which indexes it holds, and the envelope's paging fields. */
function paging(count: number, page: number) {
  const totalPages = Math.max(1, Math.ceil(count / ITEMS_ON_PAGE));
  const from = (page - 1) * ITEMS_ON_PAGE;
  const indexes = Array.from({ length: Math.max(0, Math.min(count, from + ITEMS_ON_PAGE) - from) }, (_, i) => from + i);
  return { fields: { page, totalPages, itemsOnPage: ITEMS_ON_PAGE }, indexes };
}

// ---- EVM ----

function evmTxDto(deps: DataDeps, chain: Chain, s: TxSummary, item: ReturnType<typeof txItem>) {
  const tokenTransfers = s.transfers.flatMap((ref) => {
    const t = transferOfSummary(deps.kv, chain.key, s.blockNumber, ref);
    return t === undefined
      ? []
      : [
          {
            tokenType: t.kind,
            tokenAddress: t.contract.toLowerCase(),
            from: t.from.toLowerCase(),
            to: t.to.toLowerCase(),
            value: BigInt(t.value).toString(),
            tokenId: t.tokenId === undefined ? null : BigInt(t.tokenId).toString(),
          },
        ];
  });
  return {
    chainFamily: 'EVM' as const,
    chainId: v1ChainId(chain),
    txid: s.hash,
    blockHash: s.blockHash,
    blockHeight: s.blockNumber,
    blockTime: s.timestamp,
    value: BigInt(s.value).toString(),
    fees: feeWei(s).toString(),
    tokenTransfers,
    // The Data API's transaction item (with logs and internal transactions): what the v2.2 endpoint answers.
    evmSpecific: item,
  };
}

async function evmBlock(deps: DataDeps, chain: Chain, identifier: string, page: number) {
  const n = numberOf(deps, chain, identifier);
  const r: BlockRecord | undefined = n === undefined ? undefined : await indexedRecordOf(deps, chain.key, n);
  if (r === undefined) throw missingBlock(deps, chain, identifier, n);
  const summaries = summarize(r);
  const { fields, indexes } = paging(summaries.length, page);
  const { transaction_count: _count, ...evmSpecific } = blockFields(r);
  return {
    chainFamily: 'EVM' as const,
    chainId: v1ChainId(chain),
    hash: String(r.header['hash']).toLowerCase(),
    previousBlockHash: String(r.header['parentHash']).toLowerCase(),
    height: Number(r.header['number']),
    time: Number(r.header['timestamp']),
    size: r.header['size'] === undefined ? null : Number(r.header['size']),
    txCount: summaries.length,
    ...fields,
    txs: indexes.map((i) => evmTxDto(deps, chain, summaries[i]!, txItem(summaries[i]!, { logs: r.txs[i]!.logs, internal: true }))),
    evmSpecific,
  };
}

async function evmTransaction(deps: DataDeps, chain: Chain, txid: string) {
  const s = await txOrNotFound(deps, chain.key, txid);
  return evmTxDto(deps, chain, s, await transaction(deps, chain.key, { transaction_hash: txid, include: 'internal_transactions' }, false));
}

// ---- Bitcoin ----

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
/** The witness commitment a coinbase output carries (BIP 141: OP_RETURN 0x24 aa21a9ed and 32 bytes), as hex. */
const WITNESS_COMMITMENT = '6a24aa21a9ed';

function btcTxDto(deps: DataDeps, chain: Chain, view: BtcRecordView, t: BtcTransaction) {
  const flow = txFlow(t);
  const addresses = (address: string | undefined) => ({
    addresses: address === undefined ? [] : [address],
    isAddress: address !== undefined,
  });
  const vin = t.vin.map((i, n) => ({
    txid: i.txid,
    vout: i.vout,
    sequence: i.sequence,
    n,
    ...addresses(flow.ins[n]!.address),
    value: flow.ins[n]!.value === undefined ? null : String(flow.ins[n]!.value),
    hex: hex(i.scriptSig),
  }));
  // Spent is known for outputs with an address (the btcUtxos index); other outputs: null.
  const vout = flow.outs.map(({ n, address, value }) => ({
    n,
    value: String(value),
    ...addresses(address),
    spent: address === undefined ? null : !isUnspent(deps.kv, chain.key, address, t.txid, n),
    hex: hex(t.vout[n]!.script),
  }));
  return {
    chainFamily: 'Bitcoin' as const,
    chainId: v1ChainId(chain),
    txid: t.txid,
    vin,
    vout,
    blockHash: view.header.hash,
    blockHeight: view.header.height,
    blockTime: view.header.time,
    value: String(flow.valueOut),
    fees: flow.fee === null ? null : String(flow.fee),
    tokenTransfers: [],
    bitcoinSpecific: {
      version: t.version,
      locktime: t.locktime,
      size: t.size,
      vsize: t.vsize,
      weight: t.weight,
      hash: t.hash,
      valueIn: flow.valueIn === null ? null : String(flow.valueIn),
      hex: null,
      miscJson: null,
    },
  };
}

function bitcoinBlock(deps: DataDeps, chain: Chain, identifier: string, page: number) {
  const view = BtcRecordView.of(storedRecord(deps, chain, identifier, numberOf(deps, chain, identifier)));
  const h = view.header;
  const { fields, indexes } = paging(view.txCount, page);
  const coinbase = view.txCount > 0 ? view.tx(0) : undefined;
  const commitment = coinbase?.vout.map((o) => hex(o.script)).findLast((s) => s.startsWith(WITNESS_COMMITMENT));
  return {
    chainFamily: 'Bitcoin' as const,
    chainId: v1ChainId(chain),
    hash: h.hash,
    previousBlockHash: h.previousblockhash,
    height: h.height,
    time: h.time,
    size: h.size,
    txCount: view.txCount,
    ...fields,
    txs: indexes.map((i) => btcTxDto(deps, chain, view, view.tx(i))),
    bitcoinSpecific: {
      bits: h.bits.toString(16).padStart(8, '0'),
      chainwork: null,
      difficulty: view.difficulty,
      merkleRoot: h.merkleroot,
      miner: null,
      nonce: h.nonce,
      version: h.version,
      strippedSize: h.strippedsize,
      weight: h.weight,
      witnessCommitment: commitment === undefined ? null : commitment.slice(WITNESS_COMMITMENT.length, WITNESS_COMMITMENT.length + 64),
    },
  };
}

function bitcoinTransaction(deps: DataDeps, chain: Chain, txid: string) {
  const height = deps.kv.get<number>('btcTxs', `${chain.key}/${txid}`);
  if (height === undefined) throw notFound(`transaction ${txid} is not in a block this server holds for chain ${chain.key}`);
  const bytes = deps.kv.getRaw('blocks', blockKey(chain.key, height));
  if (bytes === undefined)
    throw notFound(`transaction ${txid} is in block ${height} of chain ${chain.key}, past the retention window: its record was pruned`);
  const view = BtcRecordView.of(bytes);
  for (let i = 0; i < view.txCount; i++) if (view.txid(i) === txid) return btcTxDto(deps, chain, view, view.tx(i));
  throw notFound(`transaction ${txid} is not in the stored block ${height} of chain ${chain.key}`);
}

// ---- Solana ----

/** The token balances a transaction changed: post − pre per token account (an account absent on one side holds 0 there). */
function tokenChanges(t: SolTransaction) {
  const rows = new Map<number, { mint: string; owner: string | null; decimals: number; pre: bigint; post: bigint }>();
  const add = (side: 'pre' | 'post', list: SolTransaction['preTokenBalances']): void => {
    for (const b of list ?? []) {
      const row = rows.get(b.accountIndex) ?? {
        mint: b.mint,
        owner: b.owner ?? null,
        decimals: b.uiTokenAmount.decimals,
        pre: 0n,
        post: 0n,
      };
      row[side] = BigInt(b.uiTokenAmount.amount);
      rows.set(b.accountIndex, row);
    }
  };
  add('pre', t.preTokenBalances);
  add('post', t.postTokenBalances);
  return [...rows]
    .filter(([, r]) => r.post !== r.pre)
    .map(([accountIndex, r]) => ({
      tokenAddress: r.mint,
      account: t.accountKeys[accountIndex] ?? null,
      owner: r.owner,
      decimals: r.decimals,
      change: (r.post - r.pre).toString(),
    }));
}

function solTxDto(chain: Chain, view: SolRecordView, index: number) {
  const h = view.header;
  const t = view.tx(index);
  const { signature: _sig, slot: _slot, blockTime: _time, fee: _fee, ...solanaSpecific } = solanaTx(t, String(h.slot), h.blockTime);
  return {
    chainFamily: 'Solana' as const,
    chainId: v1ChainId(chain),
    txid: t.signature,
    blockHash: h.blockhash,
    blockHeight: h.slot,
    blockTime: h.blockTime,
    value: null,
    fees: String(t.fee),
    tokenTransfers: tokenChanges(t),
    solanaSpecific: { ...solanaSpecific, version: t.version, isVote: view.isVote(index) },
  };
}

function solanaBlock(deps: DataDeps, chain: Chain, identifier: string, page: number) {
  const view = SolRecordView.of(storedRecord(deps, chain, identifier, numberOf(deps, chain, identifier)));
  const h = view.header;
  const { fields, indexes } = paging(view.txCount, page);
  return {
    chainFamily: 'Solana' as const,
    chainId: v1ChainId(chain),
    hash: h.blockhash,
    previousBlockHash: h.previousBlockhash,
    height: h.slot,
    time: h.blockTime,
    size: null,
    txCount: view.txCount,
    ...fields,
    txs: indexes.map((i) => solTxDto(chain, view, i)),
    solanaSpecific: { slot: h.slot, parentSlot: h.parentSlot, blockHeight: h.blockHeight },
  };
}

function solanaTransaction(deps: DataDeps, chain: Chain, signature: string) {
  const prefix = `${chain.key}/`;
  // The canonical slots newest first (`canon` outlives pruning): their records while stored.
  for (const { key } of deps.kv.range<string>('canon', {
    start: `${prefix}\uffff`,
    end: prefix,
    reverse: true,
    limit: SOLANA_SCAN_SLOTS,
  })) {
    const bytes = deps.kv.getRaw('blocks', key);
    if (bytes === undefined) break;
    const view = SolRecordView.of(bytes);
    for (let i = 0; i < view.txCount; i++) if (view.signature(i) === signature) return solTxDto(chain, view, i);
  }
  throw notFound(
    `transaction ${signature} is not in the slots this server stores for chain ${chain.key} (the newest ${SOLANA_SCAN_SLOTS} at most; older slots are past the retention window)`,
  );
}

// ---- the endpoints ----

/** GET /v1/chains/:chainAlias/blocks/:blockIdentifier: `chain` resolved by pathChain. */
export async function v1Block(deps: DataDeps, chain: Chain, params: Record<string, string>) {
  const family = familyOf(chain);
  const id = IDENTIFIERS[family];
  const identifier = params['blockIdentifier'] ?? '';
  if (!id.block.test(identifier)) throw badRequest('blockIdentifier', `${id.blockText} on chain ${chain.key}`);
  const { page } = validate(blockPageQuery, params, 'query');
  if (family === 'evm') return evmBlock(deps, chain, identifier.toLowerCase(), page);
  return family === 'bitcoin' ? bitcoinBlock(deps, chain, identifier.toLowerCase(), page) : solanaBlock(deps, chain, identifier, page);
}

/** GET /v1/chains/:chainAlias/transactions/:txHash. */
export async function v1Transaction(deps: DataDeps, chain: Chain, params: Record<string, string>) {
  const family = familyOf(chain);
  const { txHash } = validate(z.object({ txHash: IDENTIFIERS[family].tx }), params, 'path');
  if (family === 'evm') return evmTransaction(deps, chain, txHash);
  return family === 'bitcoin' ? bitcoinTransaction(deps, chain, txHash) : solanaTransaction(deps, chain, txHash);
}
