import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeAbiParameters, encodeEventTopics, type Hex } from 'viem';
import { FIXTURE_BLOCKS, bundle } from '../../../../kit/fixtures.js';
import { nftTransfers, nftTransfersQuery, type NftTransfersDeps } from '../../../../../engine/data-api/nft/transfers.js';
import { normalizeBlock, type BlockRecord, type StoredLog } from '../../../../../engine/evm/record.js';
import {
  removeBlock,
  transferKeys,
  transferRef,
  transfersOf,
  writeBlock,
  type StoredTransfer,
  type Transfer,
} from '../../../../../engine/evm/store.js';
import { nftRefTransferKey } from '../../../../../engine/data-api/nft/lists.js';
import { salesOf, type Sale } from '../../../../../engine/evm/sales.js';
import { TokenMetadata } from '../../../../../engine/evm/token-metadata.js';
import { validate } from '../../../../../engine/schema.js';
import { openStore, type Store } from '../../../../../storage/env.js';
import { counting } from '../../../../kit/counting-kv.js';
import { tempDir } from '../../../../helpers.js';
import { ERC20_ABI, NFT_ABI, ZERO, byPosition, paid, scan, type Json, type Scanned } from '../../../../nft-scan.js';

/**
 * The NFT transfers index and its query over a real LMDB store: the mainnet
 * fixture blocks against a plain scan of their receipts (decoded with viem, not
 * with the ingest decoder), and a token with 20,000 transfers paged through a
 * Kv that counts what it reads.
 */

/** A token has no metadata here: no node answers (the TokenMetadata of the server, on a node that refuses every call). */
const noNode = (store: Store): TokenMetadata => new TokenMetadata(store, async () => null);

const query = (contract: string, tokenId: bigint, more: Record<string, string> = {}) =>
  validate(nftTransfersQuery, { address: contract, token_id: tokenId.toString(), ...more }, 'query');

/** Every page of a token's transfers, following the cursors. */
async function allPages(
  deps: NftTransfersDeps,
  chain: string,
  contract: string,
  tokenId: bigint,
  more: Record<string, string>,
): Promise<Json[]> {
  const out: Json[] = [];
  let cursor: string | null = null;
  let page = 0;
  do {
    const r: Json = await nftTransfers(deps, chain, query(contract, tokenId, cursor === null ? more : { ...more, cursor }));
    expect(r['page']).toBe(page++);
    out.push(...r['result']);
    cursor = r['cursor'];
  } while (cursor !== null);
  return out;
}

describe('the NFT transfers index over the mainnet fixture blocks', () => {
  let dir: string;
  let store: Store;
  let deps: NftTransfersDeps;
  const scanned: Scanned[] = [];
  const receiptsOf = new Map<number, Json[]>();

  beforeAll(() => {
    dir = tempDir();
    store = openStore(dir);
    deps = { kv: store, tokens: noNode(store), follower: () => undefined };
    for (const n of FIXTURE_BLOCKS) {
      const b = bundle(n);
      store.transact(() => writeBlock(store, '0x1', normalizeBlock(b.block, b.receipts, b.traces)));
      scanned.push(...scan(b.block, b.receipts));
      receiptsOf.set(n, b.receipts);
    }
  });
  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('holds exactly the NFT transfers a plain scan of the receipts finds, each field as the chain says', async () => {
    // The fixture README counts 104 ERC-721 Transfer logs and 5 ERC-1155 logs (a batch gives one transfer per id).
    expect(scanned.filter((s) => s.record['contract_type'] === 'ERC721')).toHaveLength(104);
    expect(store.count('transfers', { start: 'nft/', end: 'nft/\uffff' })).toBe(scanned.length);
    const tokens = new Map<string, Scanned[]>();
    for (const s of scanned) tokens.set(`${s.contract}/${s.tokenId}`, [...(tokens.get(`${s.contract}/${s.tokenId}`) ?? []), s]);
    for (const list of tokens.values()) {
      const { contract, tokenId } = list[0]!;
      const expected = list.sort(byPosition).map((s) => s.record);
      expect(await allPages(deps, '0x1', contract, tokenId, { order: 'ASC', limit: '2' })).toEqual(expected);
      expect(await allPages(deps, '0x1', contract, tokenId, { limit: '100' })).toEqual([...expected].reverse());
    }
  });

  it('keeps a sale for exactly the transfers the sale rule finds, and answers each token its last one', async () => {
    const expected = scanned.flatMap((s) => {
      const p = paid(s, receiptsOf.get(s.at[0])!);
      return p === undefined ? [] : [{ s, p }];
    });
    // The fixtures hold real marketplace sales, paid in ETH and in ERC-20 (WETH and others).
    expect(expected.filter((e) => e.p.token === null).length).toBeGreaterThan(0);
    expect(expected.filter((e) => e.p.token !== null).length).toBeGreaterThan(0);
    const stored = store.range<Sale>('sales', { start: '0x1/', end: '0x1/\uffff' });
    const key = (s: Scanned): string => `${s.contract}/${s.tokenId}/${s.at.join('/')}`;
    const fromKey = (k: string): string => {
      const [, contract, id, number, logIndex, batch] = k.split('/');
      return `${contract}/${BigInt(`0x${id}`)}/${parseInt(number!, 16)}/${parseInt(logIndex!, 16)}/${parseInt(batch!, 16)}`;
    };
    expect(stored.map((e) => fromKey(e.key)).sort()).toEqual(expected.map((e) => key(e.s)).sort());
    for (const { s, p } of expected) {
      const sale = stored.find((e) => fromKey(e.key) === key(s))!.value;
      expect(sale).toEqual({
        transactionHash: s.record['transaction_hash'],
        timestamp: Date.parse(s.record['block_timestamp']) / 1000,
        buyer: s.record['to_address'],
        seller: s.record['from_address'],
        price: `0x${p.price.toString(16)}`,
        paymentToken: p.token,
      });
    }
    const last = new Map<string, { s: Scanned; p: { price: bigint; token: string | null } }>();
    for (const e of [...expected].sort((a, b) => byPosition(a.s, b.s))) last.set(`${e.s.contract}/${e.s.tokenId}`, e);
    for (const { s, p } of last.values()) {
      const r: Json = await nftTransfers(deps, '0x1', query(s.contract, s.tokenId, { include_prices: 'true', limit: '1' }));
      expect(r['result'][0]['last_sale']).toMatchObject({
        transaction_hash: s.record['transaction_hash'],
        block_timestamp: s.record['block_timestamp'],
        buyer_address: s.record['to_address'],
        seller_address: s.record['from_address'],
        price: p.price.toString(),
        usd_price_at_sale: null,
        current_usd_value: null,
        token_address: s.contract,
        token_id: s.tokenId.toString(),
        payment_token: { token_address: p.token ?? '0xeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee', token_logo: null },
      });
    }
    // A token that was never sold: last_sale is null with include_prices, absent without.
    const unsold = scanned.find((s) => !last.has(`${s.contract}/${s.tokenId}`))!;
    const r: Json = await nftTransfers(deps, '0x1', query(unsold.contract, unsold.tokenId, { include_prices: 'true' }));
    expect(r['result'][0]['last_sale']).toBeNull();
    expect((await nftTransfers(deps, '0x1', query(unsold.contract, unsold.tokenId)))['result'][0]).not.toHaveProperty('last_sale');
  });

  it('answers the page envelope, and index_complete false for a chain this store does not follow', async () => {
    const s = scanned[0]!;
    const r: Json = await nftTransfers(deps, '0x1', query(s.contract, s.tokenId));
    expect(Object.keys(r)).toEqual(['page', 'page_size', 'cursor', 'result', 'block_exists', 'index_complete']);
    expect(r).toMatchObject({ page: 0, page_size: 100, block_exists: true, index_complete: false });
    expect((await nftTransfers(deps, '0x1', query(s.contract, s.tokenId, { limit: '0' })))['page_size']).toBe(100);
  });

  it('a reorg of the blocks removes every transfer and sale they indexed, and their hashes', () => {
    expect(store.count('sales', { start: '', end: '\uffff' })).toBeGreaterThan(0);
    expect(store.count('blockHashes', { start: '', end: '\uffff' })).toBe(FIXTURE_BLOCKS.length);
    store.transact(() => {
      for (const n of FIXTURE_BLOCKS) removeBlock(store, '0x1', n);
    });
    expect(store.count('transfers', { start: '', end: '\uffff' })).toBe(0);
    expect(store.count('sales', { start: '', end: '\uffff' })).toBe(0);
    expect(store.count('blockHashes', { start: '', end: '\uffff' })).toBe(0);
  });
});

describe('the sale rule', () => {
  const [NFT, USDC, DAI, SELLER, BUYER, FRIEND] = ['a', 'b', 'c', '1', '2', '3'].map((c) => `0x${c.repeat(40)}` as Hex) as [
    Hex,
    Hex,
    Hex,
    Hex,
    Hex,
    Hex,
  ];
  let logIndex = 0;
  const log = (address: Hex, topics: Hex[], data: Hex = '0x'): StoredLog => ({
    address,
    topics,
    data,
    logIndex: `0x${(logIndex++).toString(16)}`,
  });
  const nft = (from: Hex, to: Hex, id: bigint): StoredLog =>
    log(NFT, encodeEventTopics({ abi: NFT_ABI, eventName: 'Transfer', args: { from, to, tokenId: id } }) as Hex[]);
  const erc20 = (token: Hex, from: Hex, to: Hex, value: bigint): StoredLog =>
    log(
      token,
      encodeEventTopics({ abi: ERC20_ABI, eventName: 'Transfer', args: { from, to } }) as Hex[],
      encodeAbiParameters([{ type: 'uint256' }], [value]),
    );
  const tx = (from: Hex, value: bigint, logs: StoredLog[]) => ({
    tx: { hash: `0x${(logIndex + 100).toString(16).padStart(64, '0')}`, from, value: `0x${value.toString(16)}` },
    receipt: {},
    logs,
  });
  const sales = (txs: BlockRecord['txs']) => {
    const r: BlockRecord = { header: { number: '0x10', hash: `0x${'f'.repeat(64)}`, timestamp: '0x64' }, txs, internal: null };
    return salesOf(r, transfersOf(r)).map(({ transfer, sale }) => ({
      tokenId: BigInt(transfer.tokenId!),
      ...sale,
      transactionHash: undefined,
      timestamp: undefined,
    }));
  };
  const sale = (tokenId: bigint, price: bigint, paymentToken: string | null, buyer: Hex = BUYER) => ({
    tokenId,
    buyer,
    seller: SELLER,
    price: `0x${price.toString(16)}`,
    paymentToken,
    transactionHash: undefined,
    timestamp: undefined,
  });

  it('native: the receiver sent the transaction, with value', () => {
    expect(sales([tx(BUYER, 5n, [nft(SELLER, BUYER, 1n)])])).toEqual([sale(1n, 5n, null)]);
    // Sent by someone else (a gift bought by a friend), or without value: no sale.
    expect(sales([tx(FRIEND, 5n, [nft(SELLER, BUYER, 1n)]), tx(BUYER, 0n, [nft(SELLER, BUYER, 2n)])])).toEqual([]);
  });

  it('ERC-20: the transfers from the receiver in one token, summed (fees included), whoever sent the transaction', () => {
    expect(
      sales([
        tx(SELLER, 0n, [
          erc20(USDC, BUYER, SELLER, 970n),
          erc20(USDC, BUYER, FRIEND, 30n),
          nft(SELLER, BUYER, 1n),
          erc20(USDC, SELLER, FRIEND, 7n),
        ]),
      ]),
    ).toEqual([sale(1n, 1_000n, USDC.toLowerCase())]);
    // Paid in two tokens: no single price.
    expect(sales([tx(BUYER, 0n, [erc20(USDC, BUYER, SELLER, 1n), erc20(DAI, BUYER, SELLER, 1n), nft(SELLER, BUYER, 1n)])])).toEqual([]);
  });

  it('no sale for a mint, a burn or a move to oneself, paid or not', () => {
    const ZERO_ADDRESS = ZERO as Hex;
    expect(
      sales([
        tx(BUYER, 5n, [nft(ZERO_ADDRESS, BUYER, 1n)]),
        tx(SELLER, 5n, [nft(SELLER, ZERO_ADDRESS, 2n)]),
        tx(SELLER, 5n, [nft(SELLER, SELLER, 3n)]),
      ]),
    ).toEqual([]);
  });

  it('a bundle: each NFT the buyer receives in the transaction is given the whole payment', () => {
    expect(sales([tx(BUYER, 9n, [nft(SELLER, BUYER, 1n), nft(SELLER, BUYER, 2n)])])).toEqual([sale(1n, 9n, null), sale(2n, 9n, null)]);
  });
});

describe('a token with 20,000 transfers', () => {
  const N = 20_000;
  const CONTRACT = '0x00000000000000000000000000000000000a11ce';
  const TOKEN = 42n;
  let dir: string;
  let store: Store;

  const transfer = (i: number, tokenId = TOKEN): Transfer => ({
    kind: 'erc721',
    contract: CONTRACT,
    from: `0x${(i + 1).toString(16).padStart(40, '0')}`,
    to: `0x${(i + 2).toString(16).padStart(40, '0')}`,
    tokenId: `0x${tokenId.toString(16)}`,
    value: '0x1',
    // Two transfers a block, so keys differ by log index too.
    blockNumber: 1_000 + Math.floor(i / 2),
    logIndex: i % 2,
    transactionHash: `0x${i.toString(16).padStart(64, '0')}`,
    transactionIndex: i % 2,
  });

  beforeAll(() => {
    dir = tempDir();
    store = openStore(dir);
    store.transact(() => {
      const put = (t: Transfer): void => {
        const { blockNumber: _b, logIndex: _l, ...rest } = t;
        const stored: StoredTransfer = {
          ...rest,
          blockHash: `0x${'b'.repeat(64)}`,
          timestamp: 1_700_000_000 + t.blockNumber,
          txValue: '0x0',
        };
        store.put('transfers', transferKeys('0x1', t).byContract, stored);
      };
      for (let i = 0; i < N; i++) put(transfer(i));
      // Neighbours on both sides of the token's range, which a page must not reach into.
      for (let i = 0; i < 50; i++) {
        put(transfer(i, TOKEN - 1n));
        put(transfer(i, TOKEN + 1n));
      }
      // A sale every 1,000 transfers: the last one is what last_sale must find.
      for (let i = 0; i < N; i += 1_000) {
        const sale: Sale = {
          transactionHash: transfer(i).transactionHash,
          timestamp: 1,
          buyer: transfer(i).to,
          seller: transfer(i).from,
          price: `0x${(i + 1).toString(16)}`,
          paymentToken: null,
        };
        store.put('sales', transferKeys('0x1', transfer(i)).sale!, sale);
      }
    });
  });
  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it.each(['DESC', 'ASC'] as const)('pages it %s reading O(page) entries, every transfer once, in order', async (order) => {
    const c = counting(store);
    const deps: NftTransfersDeps = { kv: c.kv, tokens: noNode(store), follower: () => undefined };
    const seen: number[] = [];
    let cursor: string | null = null;
    let pages = 0;
    let most = 0;
    do {
      c.reset();
      const r: Json = await nftTransfers(
        deps,
        '0x1',
        query(CONTRACT, TOKEN, { order, limit: '100', ...(cursor === null ? {} : { cursor }) }),
      );
      // The page itself (100 + 2 look-ahead entries) and the chain's state for index_complete: never the token's length.
      most = Math.max(most, c.reads());
      expect(c.reads()).toBeLessThanOrEqual(103);
      for (const t of r['result']) seen.push(Number(BigInt(t['transaction_hash'])));
      cursor = r['cursor'];
      pages++;
    } while (cursor !== null);
    expect(pages).toBe(N / 100);
    const expected = Array.from({ length: N }, (_, i) => i);
    expect(seen).toEqual(order === 'ASC' ? expected : expected.reverse());
    expect(most).toBeGreaterThanOrEqual(100);
  });

  it('finds its last sale by one read', async () => {
    const c = counting(store);
    const deps: NftTransfersDeps = { kv: c.kv, tokens: noNode(store), follower: () => undefined };
    const r: Json = await nftTransfers(deps, '0x1', query(CONTRACT, TOKEN, { include_prices: 'true', limit: '1' }));
    // One transfer (and the look-ahead), one sale, the chain's state.
    expect(c.reads()).toBeLessThanOrEqual(4);
    expect(r['result'][0]['last_sale']).toMatchObject({
      transaction_hash: transfer(19_000).transactionHash,
      price: String(19_001),
      payment_token: { token_symbol: 'ETH', token_decimals: '18' },
    });
    expect(r['result'][0]['last_sale']['price_formatted']).toBe('0.000000000000019001');
    // A neighbour with no sale.
    const neighbour: Json = await nftTransfers(deps, '0x1', query(CONTRACT, TOKEN + 1n, { include_prices: 'true' }));
    expect(neighbour['result'][0]['last_sale']).toBeNull();
  });

  it('continues strictly after the last key returned: what a reorg puts before the next key is not lost', async () => {
    const deps: NftTransfersDeps = { kv: store, tokens: noNode(store), follower: () => undefined };
    const id = TOKEN + 5n;
    // Transfers 0..5, two a block (1000, 1001, 1002), at these log indexes.
    const logs = [0, 1, 3, 4, 0, 1];
    const keyOf = (i: number): string => transferKeys('0x1', { ...transfer(i, id), logIndex: logs[i]! }).byContract;
    const put = (i: number): void => {
      const { blockNumber: _b, logIndex: _l, ...rest } = transfer(i, id);
      store.put('transfers', keyOf(i), { ...rest, blockHash: '0x', timestamp: 0, txValue: '0x0' } satisfies StoredTransfer);
    };
    store.transact(() => [0, 1, 2, 3, 4, 5].forEach(put));
    const hashes = (r: Json): number[] => r['result'].map((t: Json) => Number(BigInt(t['transaction_hash'])));
    const asc: Json = await nftTransfers(deps, '0x1', query(CONTRACT, id, { order: 'ASC', limit: '2' }));
    const desc: Json = await nftTransfers(deps, '0x1', query(CONTRACT, id, { limit: '2' }));
    expect([hashes(asc), hashes(desc)]).toEqual([
      [0, 1],
      [5, 4],
    ]);
    // Block 1001 is replaced: its transfers come back at other logs, 2 before where the ASC page's next key was, 3 after the DESC one's.
    store.transact(() => {
      for (const i of [2, 3]) store.remove('transfers', keyOf(i));
      [logs[2], logs[3]] = [1, 6];
      for (const i of [2, 3]) put(i);
    });
    expect(hashes(await nftTransfers(deps, '0x1', query(CONTRACT, id, { order: 'ASC', limit: '5', cursor: asc['cursor'] })))).toEqual([
      2, 3, 4, 5,
    ]);
    expect(hashes(await nftTransfers(deps, '0x1', query(CONTRACT, id, { limit: '5', cursor: desc['cursor'] })))).toEqual([3, 2, 1, 0]);
  });

  it('refuses a cursor that is not ours, or that was made for another token or order', async () => {
    const deps: NftTransfersDeps = { kv: store, tokens: noNode(store), follower: () => undefined };
    const first: Json = await nftTransfers(deps, '0x1', query(CONTRACT, TOKEN, { limit: '2' }));
    const cursor = first['cursor'] as string;
    const refused = async (q: Record<string, string>, tokenId = TOKEN): Promise<string> => {
      try {
        await nftTransfers(deps, '0x1', query(CONTRACT, tokenId, q));
      } catch (err) {
        expect((err as { status: number; details: unknown }).status).toBe(400);
        expect((err as { details: unknown }).details).toEqual({ field: 'cursor' });
        return (err as Error).message;
      }
      throw new Error(`not refused: ${JSON.stringify(q)}`);
    };
    expect(await refused({ cursor, order: 'ASC' })).toMatch(/another query/);
    expect(await refused({ cursor }, TOKEN + 1n)).toMatch(/another query/);
    expect(await refused({ cursor: 'not-a-cursor' })).toMatch(/not a cursor/);
    // A streams-list cursor: base64url of a bare key.
    expect(await refused({ cursor: Buffer.from(transferKeys('0x1', transfer(5)).byContract).toString('base64url') })).toMatch(
      /not a cursor/,
    );
    const forged = JSON.parse(Buffer.from(cursor, 'base64url').toString()) as Json;
    expect(await refused({ cursor: Buffer.from(JSON.stringify({ ...forged, p: -1 })).toString('base64url') })).toMatch(/not a cursor/);
    // Still good with another limit or include_prices: they do not change the list.
    const next: Json = await nftTransfers(deps, '0x1', query(CONTRACT, TOKEN, { cursor, limit: '3', include_prices: 'true' }));
    expect(next['page']).toBe(1);
    expect(next['result'].map((t: Json) => t['transaction_hash'])).toEqual(
      [19_997, 19_996, 19_995].map((i) => transfer(i).transactionHash),
    );
  });
});

describe('nftRefs values', () => {
  it('name the transfers row: a reference with the key block, or (rows written before 2026-11-24) the transfers key itself', () => {
    const batch: Transfer = {
      kind: 'erc1155',
      contract: `0x${'ab'.repeat(20)}`,
      from: ZERO,
      to: `0x${'cd'.repeat(20)}`,
      tokenId: '0x2a',
      value: '0x3',
      operator: ZERO,
      blockNumber: 1234,
      logIndex: 7,
      transactionHash: `0x${'11'.repeat(32)}`,
      transactionIndex: 0,
      batchIndex: 2,
    };
    const single: Transfer = {
      ...batch,
      kind: 'erc721',
      tokenId: `0x${'f'.repeat(60)}`,
      value: '0x1',
      batchIndex: undefined,
      operator: undefined,
    };
    for (const t of [batch, single]) {
      const key = transferKeys('0x1', t).byContract;
      const refKey = `wallet/0x1/${t.to}/${(1234).toString(16).padStart(12, '0')}/000007/${(t.batchIndex ?? 0).toString(16).padStart(4, '0')}`;
      expect(nftRefTransferKey('0x1', refKey, transferRef(t))).toBe(key);
      expect(nftRefTransferKey('0x1', refKey, key)).toBe(key);
    }
  });
});
