import { allPages, devnetApi } from './data-api.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatEther, parseEther, parseUnits, type Hex } from 'viem';
import { startAnvil, type Anvil } from '../http/clients/anvil.js';
import { DEV_ACCOUNTS, deploy, publicClient, walletClient, mined, write, type Deployed } from './contracts.js';
import { startChainpost, stopAndClean, indexedTo, until, type Running } from './helpers.js';
import { moralisFor } from './sdk.js';
import { A0, A1, A2, serverEnv } from './streams-harness.js';

/**
 * Native transactions, blocks and wallet activity (GET /:address, /transaction/:transaction_hash, /block/:n,
 * /wallets/:address/history|chains|stats) end to end: ether sent directly and through a forwarding contract
 * (internal transactions), token and NFT moves, on a real anvil followed by the real server with a short
 * retention (so old blocks are answered from the kept summaries and the node), every answer compared with
 * what anvil's blocks, receipts and call traces say, read here independently.
 */

type Json = Record<string, any>;
const [K0, K1, K2] = DEV_ACCOUNTS;
/** Block records older than this many blocks are pruned: most of the test's blocks are. */
const RETENTION = 4;
/** topic0 of Transfer(address,address,uint256). */
const TRANSFER = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';

let anvil: Anvil;
let s: Running;
let fwd: Deployed;
let token: Deployed;
let nft: Deployed;
let multi: Deployed;
/** Transaction hashes by what they did. */
const tx: Record<string, Hex> = {};

const rpc = <T>(method: string, params: unknown[]): Promise<T> =>
  publicClient(anvil.url).request({ method: method as never, params: params as never }) as Promise<T>;
const send = async (c: Deployed, functionName: string, args: readonly unknown[], account = K0, value?: bigint): Promise<Hex> =>
  (await write(anvil.url, { address: c.address, abi: c.abi, functionName, args, account, ...(value === undefined ? {} : { value }) }))
    .transactionHash;
const pay = async (to: Hex, value: bigint, account = K0): Promise<Hex> => {
  const hash = await (await walletClient(anvil.url, account)).sendTransaction({ to, value });
  await mined(anvil.url, hash);
  return hash;
};

/** Waits until the server has ingested anvil's head and its indexes hold it. */
async function indexed(): Promise<void> {
  const target = Number(await publicClient(anvil.url).getBlockNumber());
  const ok = await indexedTo(s, target);
  expect(ok, `the server ingested block ${target}`).toBe(true);
}

/** Whether the server pruned the block records up to `n` (its oldest record is above it), waiting a while. */
const prunedPast = (n: number): Promise<boolean> =>
  until(async () => ((await s.call('/health')).body.chains as Json[]).find((c) => c['chain'] === '0x539')?.['oldest'] > n, 10_000, 20);

const api = devnetApi;
const dec = (hex: string): string => BigInt(hex).toString();
const iso = (hex: string): string => new Date(Number(hex) * 1000).toISOString();

/** One transaction as the chain has it: the expected item, logs, internal transactions, and who took part. */
interface ChainTx {
  block: number;
  index: number;
  timestamp: number;
  item: Json;
  logs: Json[];
  internal: Json[];
  parties: Set<string>;
}

/** The call frames below a transaction's top frame, depth first. */
function frames(frame: Json): Json[] {
  return ((frame['calls'] ?? []) as Json[]).flatMap((c) => [c, ...frames(c)]);
}

/** Every transaction of anvil's chain, from eth_getBlockByNumber, eth_getBlockReceipts and debug_traceBlockByNumber. */
async function chainTxs(): Promise<{ txs: ChainTx[]; blocks: Json[] }> {
  const head = Number(await publicClient(anvil.url).getBlockNumber());
  const txs: ChainTx[] = [];
  const blocks: Json[] = [];
  for (let n = 0; n <= head; n++) {
    const tag = `0x${n.toString(16)}`;
    const [b, receipts, traces] = await Promise.all([
      rpc<Json>('eth_getBlockByNumber', [tag, true]),
      rpc<Json[]>('eth_getBlockReceipts', [tag]),
      rpc<Json[]>('debug_traceBlockByNumber', [tag, { tracer: 'callTracer' }]),
    ]);
    blocks.push(b);
    (b['transactions'] as Json[]).forEach((t, i) => {
      const r = receipts[i]!;
      const where = { block_timestamp: iso(b['timestamp']), block_number: String(n), block_hash: b['hash'] };
      const calls = frames(traces[i]!['result']);
      txs.push({
        block: n,
        index: i,
        timestamp: Number(b['timestamp']),
        item: {
          hash: t['hash'],
          nonce: dec(t['nonce']),
          transaction_index: String(i),
          from_address_entity: null,
          from_address_entity_logo: null,
          from_address: t['from'],
          from_address_label: null,
          to_address_entity: null,
          to_address_entity_logo: null,
          to_address: t['to'] ?? null,
          to_address_label: null,
          value: dec(t['value']),
          gas: dec(t['gas']),
          gas_price: dec(r['effectiveGasPrice']),
          input: t['input'],
          receipt_cumulative_gas_used: dec(r['cumulativeGasUsed']),
          receipt_gas_used: dec(r['gasUsed']),
          receipt_contract_address: r['contractAddress'] ?? null,
          receipt_root: null,
          receipt_status: String(Number(r['status'])),
          transaction_fee: formatEther(BigInt(r['gasUsed']) * BigInt(r['effectiveGasPrice'])),
          ...where,
        },
        logs: (r['logs'] as Json[]).map((l) => ({
          log_index: dec(l['logIndex']),
          transaction_hash: t['hash'],
          transaction_index: String(i),
          address: l['address'],
          data: l['data'],
          topic0: l['topics'][0] ?? null,
          topic1: l['topics'][1] ?? null,
          topic2: l['topics'][2] ?? null,
          topic3: l['topics'][3] ?? null,
          ...where,
        })),
        internal: calls.map((c) => ({
          transaction_hash: t['hash'],
          block_number: String(n),
          block_hash: b['hash'],
          type: c['type'],
          from: c['from'],
          to: c['to'],
          value: dec(c['value'] ?? '0x0'),
          gas: dec(c['gas']),
          gas_used: dec(c['gasUsed']),
          input: null,
          output: null,
        })),
        parties: new Set(
          [t['from'], t['to'], r['contractAddress'], ...calls.flatMap((c) => [c['from'], c['to']])]
            .filter((a): a is string => typeof a === 'string')
            .map((a) => a.toLowerCase()),
        ),
      });
    });
  }
  return { txs, blocks };
}

/** The address's transactions as the chain says, newest first. */
const ofAddress = (txs: ChainTx[], a: string): ChainTx[] => txs.filter((t) => t.parties.has(a.toLowerCase())).reverse();
/** The wallet history's transactions as the chain says, newest first: the address's own, and those whose Transfer logs name it. */
const historyOf = (txs: ChainTx[], a: string): ChainTx[] =>
  txs
    .filter(
      (t) =>
        t.parties.has(a) || t.logs.some((l) => l['topic0'] === TRANSFER && [l['topic1'], l['topic2']].some((x) => x.endsWith(a.slice(2)))),
    )
    .reverse();
const withInternal = (t: ChainTx): Json => ({ ...t.item, internal_transactions: t.internal });

const pages = (path: string, query: string): Promise<Json[]> => allPages(s, path, query);

beforeAll(async () => {
  anvil = await startAnvil({ chainId: 1337 });
  s = await startChainpost(serverEnv(anvil, { CHAINPOST_RETENTION_BLOCKS: String(RETENTION) }));
  fwd = await deploy(anvil.url, 'Forwarder');
  token = await deploy(anvil.url, 'TestToken', ['Test Token', 'TT', 6, parseUnits('1000', 6)]);
  nft = await deploy(anvil.url, 'TestNFT', ['Test NFT', 'TNFT']);
  tx['send'] = await pay(A1, parseEther('1'));
  await rpc('evm_increaseTime', [1000]);
  tx['split'] = await send(fwd, 'split', [A1, A2], K0, parseEther('1') + 1n);
  tx['forward'] = await send(fwd, 'forward', [A2], K1, parseEther('0.5'));
  await rpc('evm_increaseTime', [1000]);
  tx['token'] = await send(token, 'transfer', [A1, parseUnits('10', 6)]);
  tx['approve'] = await send(token, 'approve', [A2, parseUnits('5', 6)], K1);
  tx['mint'] = await send(nft, 'mint', [A1, 1n]);
  tx['nftSend'] = await send(nft, 'transferFrom', [A1, A2, 1n], K1);
  tx['back'] = await pay(A0, parseEther('0.25'), K2);
  multi = await deploy(anvil.url, 'TestMulti');
  tx['batch'] = await send(multi, 'mintBatch', [A2, [7n, 8n], [3n, 4n]]);
  await indexed();
  // Pruning follows the indexes: wait for it, so the early blocks' answers come without their records.
  await prunedPast(5);
}, 60_000);

afterAll(async () => {
  await stopAndClean(s);
  await anvil?.stop();
});

describe('native transactions on anvil', () => {
  it('prunes the early blocks (so they are answered from summaries and the node)', async () => {
    expect(await prunedPast(5)).toBe(true);
  });

  it('GET /:address lists every transaction the address sent, received or took part in by an internal call, as the chain has it', async () => {
    const { txs } = await chainTxs();
    for (const a of [A0, A1, A2, fwd.address.toLowerCase()]) {
      const expected = ofAddress(txs, a);
      expect(expected.length).toBeGreaterThan(1);
      const r = await s.call(api(`/${a}`));
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ page: 0, page_size: 100, cursor: null, result: expected.map((t) => t.item) });
      expect((await s.call(api(`/${a}`, 'order=ASC&include=internal_transactions'))).body.result).toEqual(
        [...expected].reverse().map(withInternal),
      );
    }
    // A2 took part in the split only by an internal call, which moved ether to it.
    const split = txs.find((t) => t.item['hash'] === tx['split'])!;
    expect(split.internal.map((c) => [c.to, c.value])).toEqual([
      [A1, (parseEther('1') / 2n).toString()],
      [A2, (parseEther('1') / 2n + 1n).toString()],
    ]);
    expect(ofAddress(txs, A2).map((t) => t.item['hash'])).toContain(tx['split']);
  });

  it('GET /transaction/:transaction_hash answers the item with its logs (and internal transactions when asked), from pruned blocks too', async () => {
    const { txs } = await chainTxs();
    for (const t of txs) {
      const r = await s.call(api(`/transaction/${t.item['hash']}`));
      expect(r.status, t.item['hash']).toBe(200);
      expect(r.body).toEqual({ ...t.item, logs: t.logs });
      const full = await s.call(api(`/transaction/${t.item['hash'].toUpperCase().replace('0X', '0x')}`, 'include=internal_transactions'));
      expect(full.body).toEqual({ ...t.item, logs: t.logs, internal_transactions: t.internal });
      expect((await s.call(api(`/transaction/${t.item['hash']}/internal-transactions`))).body).toEqual(t.internal);
    }
    expect((await s.call(api(`/transaction/0x${'ab'.repeat(32)}`))).status).toBe(404);
  });

  it('GET /transaction/:transaction_hash/verbose decodes the standard token events and calls', async () => {
    const { txs } = await chainTxs();
    const t = txs.find((x) => x.item['hash'] === tx['token'])!;
    const r = await s.call(api(`/transaction/${tx['token']}/verbose`));
    expect(r.status).toBe(200);
    const value = parseUnits('10', 6).toString();
    expect(r.body).toEqual({
      ...t.item,
      logs: [
        {
          ...t.logs[0],
          decoded_event: {
            signature: 'Transfer(address,address,uint256)',
            label: 'Transfer',
            type: 'event',
            params: [
              { name: 'from', value: DEV_ACCOUNTS[0].address, type: 'address' },
              { name: 'to', value: DEV_ACCOUNTS[1].address, type: 'address' },
              { name: 'value', value, type: 'uint256' },
            ],
          },
        },
      ],
      decoded_call: {
        signature: 'transfer(address,uint256)',
        label: 'transfer',
        type: 'function',
        params: [
          { name: 'to', value: DEV_ACCOUNTS[1].address, type: 'address' },
          { name: 'value', value, type: 'uint256' },
        ],
      },
    });
    const nftLog = (await s.call(api(`/transaction/${tx['nftSend']}/verbose`))).body.logs.find(
      (l: Json) => l.decoded_event?.label === 'Transfer',
    );
    expect(nftLog.decoded_event.params.map((p: Json) => p.name)).toEqual(['from', 'to', 'tokenId']);
    const approve = (await s.call(api(`/transaction/${tx['approve']}/verbose`))).body;
    expect(approve.logs[0].decoded_event.label).toBe('Approval');
    expect(approve.decoded_call.label).toBe('approve');
    const batch = (await s.call(api(`/transaction/${tx['batch']}/verbose`))).body.logs[0].decoded_event;
    expect(batch).toEqual({
      signature: 'TransferBatch(address,address,address,uint256[],uint256[])',
      label: 'TransferBatch',
      type: 'event',
      params: [
        { name: 'operator', value: DEV_ACCOUNTS[0].address, type: 'address' },
        { name: 'from', value: '0x0000000000000000000000000000000000000000', type: 'address' },
        { name: 'to', value: DEV_ACCOUNTS[2].address, type: 'address' },
        { name: 'ids', value: '7,8', type: 'uint256[]' },
        { name: 'values', value: '3,4', type: 'uint256[]' },
      ],
    });
    // Ether alone: no call to decode.
    expect((await s.call(api(`/transaction/${tx['send']}/verbose`))).body).toMatchObject({ logs: [], decoded_call: null });
    // The sender's list, verbose: the same item.
    const list = (await s.call(api(`/${A0}/verbose`))).body.result as Json[];
    expect(list.find((x) => x['hash'] === tx['token'])).toEqual(r.body);
  });

  it('GET /block/:block_number_or_hash answers the header and every transaction with logs, by number or hash, pruned or not', async () => {
    const { txs, blocks } = await chainTxs();
    for (const b of blocks) {
      const n = Number(b['number']);
      const own = txs.filter((t) => t.block === n);
      const expected = {
        timestamp: iso(b['timestamp']),
        number: String(n),
        hash: b['hash'],
        parent_hash: b['parentHash'],
        nonce: b['nonce'],
        sha3_uncles: b['sha3Uncles'],
        logs_bloom: b['logsBloom'],
        transactions_root: b['transactionsRoot'],
        state_root: b['stateRoot'],
        receipts_root: b['receiptsRoot'],
        miner: b['miner'],
        difficulty: dec(b['difficulty']),
        total_difficulty: b['totalDifficulty'] === undefined ? '0' : dec(b['totalDifficulty']),
        size: dec(b['size']),
        extra_data: b['extraData'],
        gas_limit: dec(b['gasLimit']),
        gas_used: dec(b['gasUsed']),
        transaction_count: String(own.length),
        transactions: own.map((t) => ({ ...t.item, logs: t.logs })),
      };
      expect((await s.call(api(`/block/${n}`))).body).toEqual(expected);
      expect((await s.call(api(`/block/${b['hash']}`, 'include=internal_transactions'))).body).toEqual({
        ...expected,
        transactions: own.map((t) => ({ ...withInternal(t), logs: t.logs })),
      });
    }
    const nftBlock = txs.find((t) => t.item['hash'] === tx['nftSend'])!.block;
    expect((await s.call(api(`/block/${nftBlock}/stats`))).body).toEqual({
      transactions: { total: '1' },
      nft_transfers: { total: '1' },
      token_transfers: { total: '0' },
    });
    expect((await s.call(api(`/block/${blocks.length + 50}`))).status).toBe(404);
    expect((await s.call(api(`/block/0x${'cd'.repeat(32)}`))).status).toBe(404);
  });

  it('narrows a list to from/to block and from/to date', async () => {
    const { txs } = await chainTxs();
    const all = ofAddress(txs, A1);
    const blocksOf = all.map((t) => t.block);
    const [lo, hi] = [Math.min(...blocksOf) + 1, Math.max(...blocksOf) - 1];
    expect((await s.call(api(`/${A1}`, `from_block=${lo}&to_block=${hi}`))).body.result).toEqual(
      all.filter((t) => t.block >= lo && t.block <= hi).map((t) => t.item),
    );
    // Dates: the anvil clock jumped twice by 1000 s, so the dates split the list.
    const times = [...new Set(all.map((t) => t.timestamp))].sort();
    const from = times[1]!;
    const to = times.at(-2)!;
    const expected = all.filter((t) => t.timestamp >= from && t.timestamp <= to).map((t) => t.item);
    expect(expected.length).toBeGreaterThan(0);
    expect(expected.length).toBeLessThan(all.length);
    expect((await s.call(api(`/${A1}`, `from_date=${from}&to_date=${new Date(to * 1000).toISOString()}`))).body.result).toEqual(expected);
    expect((await s.call(api(`/${A1}`, `from_block=${hi}&to_block=${lo}`))).body.result).toEqual([]);
  });

  it('/wallets/:address/history gives each transaction its category, summary and transfers', async () => {
    const r = await s.call(api(`/wallets/${A1}/history`, 'order=ASC&include_internal_transactions=true'));
    expect(r.status).toBe(200);
    const byHash = new Map((r.body.result as Json[]).map((x) => [x['hash'], x]));
    const { txs } = await chainTxs();
    // The wallet's transactions, and the ones that moved its tokens (the token transfer and the mint to it).
    const moved = historyOf(txs, A1);
    expect(moved.length).toBe(ofAddress(txs, A1).length + 2);
    expect([...byHash.keys()]).toEqual([...moved].reverse().map((t) => t.item['hash']));
    expect(byHash.get(tx['send'])).toMatchObject({
      category: 'receive',
      native_transfers: [
        {
          from_address: A0,
          to_address: A1,
          value: parseEther('1').toString(),
          value_formatted: '1',
          direction: 'incoming',
          internal_transaction: false,
          token_symbol: 'ETH',
        },
      ],
      erc20_transfers: [],
      nft_transfers: [],
    });
    expect(byHash.get(tx['split'])).toMatchObject({
      category: 'receive',
      native_transfers: [
        {
          from_address: fwd.address.toLowerCase(),
          to_address: A1,
          value: (parseEther('1') / 2n).toString(),
          internal_transaction: true,
          direction: 'incoming',
        },
      ],
    });
    expect(byHash.get(tx['split'])!['internal_transactions']).toHaveLength(2);
    expect(byHash.get(tx['token'])).toMatchObject({
      category: 'token receive',
      erc20_transfers: [
        {
          token_name: 'Test Token',
          token_symbol: 'TT',
          token_decimals: '6',
          address: token.address.toLowerCase(),
          from_address: A0,
          to_address: A1,
          value: parseUnits('10', 6).toString(),
          value_formatted: '10',
          // The transfer's transaction in its block, as the ERC-20 transfer record has it (an integer).
          transaction_index: Number(byHash.get(tx['token'])!['transaction_index']),
          possible_spam: false,
          verified_contract: false,
        },
      ],
    });
    expect(byHash.get(tx['approve'])).toMatchObject({
      category: 'contract interaction',
      contract_interactions: {
        approvals: [
          {
            value: parseUnits('5', 6).toString(),
            value_formatted: '5',
            token: { address: token.address.toLowerCase(), token_symbol: 'TT' },
            spender: { address: A2 },
          },
        ],
      },
    });
    expect(byHash.get(tx['mint'])).toMatchObject({
      category: 'mint',
      nft_transfers: [
        {
          token_address: nft.address.toLowerCase(),
          token_id: '1',
          contract_type: 'ERC721',
          amount: '1',
          direction: 'incoming',
          verified_collection: false,
          verified: false,
        },
      ],
    });
    expect(byHash.get(tx['nftSend'])).toMatchObject({
      category: 'nft send',
      nft_transfers: [{ from_address: A1, to_address: A2, direction: 'outgoing' }],
    });
    const a0 = new Map(((await s.call(api(`/wallets/${A0}/history`))).body.result as Json[]).map((x) => [x['hash'], x]));
    expect(a0.get(tx['send'])).toMatchObject({ category: 'send' });
    expect(a0.get(tx['token'])).toMatchObject({ category: 'token send' });
    expect(a0.get(tx['back'])).toMatchObject({ category: 'receive' });
    // Ether into a contract call: sent.
    expect(a0.get(tx['split'])).toMatchObject({
      category: 'send',
      native_transfers: [{ from_address: A0, to_address: fwd.address.toLowerCase(), internal_transaction: false, direction: 'outgoing' }],
    });
  });

  it('/wallets/:address/chains and /stats answer first and last activity and counters', async () => {
    const { txs } = await chainTxs();
    const mine = historyOf(txs, A1);
    const r = await s.call(`/api/v2.2/wallets/${A1}/chains?chains=0x539`);
    expect(r.status).toBe(200);
    const at = (t: ChainTx) => ({
      block_number: String(t.block),
      block_timestamp: t.item['block_timestamp'],
      transaction_hash: t.item['hash'],
    });
    expect(r.body).toEqual({
      address: A1,
      active_chains: [{ chain: 'devnet', chain_id: '0x539', first_transaction: at(mine.at(-1)!), last_transaction: at(mine[0]!) }],
    });
    // Default: every chain followed. A wallet with nothing: no active chain.
    expect((await s.call(`/api/v2.2/wallets/${A1}/chains`)).body).toEqual(r.body);
    expect((await s.call(`/api/v2.2/wallets/0x${'12'.repeat(20)}/chains`)).body).toEqual({
      address: `0x${'12'.repeat(20)}`,
      active_chains: [],
    });
    expect((await s.call(api(`/wallets/${A1}/stats`))).body).toEqual({
      nfts: '0',
      collections: '0',
      transactions: { total: String(ofAddress(txs, A1).length) },
      nft_transfers: { total: '2' },
      token_transfers: { total: '1' },
    });
    // A2 holds TestNFT 1 (sent on by A1) and TestMulti ids 7 and 8 of its batch: three NFTs in two collections.
    expect((await s.call(api(`/wallets/${A2}/stats`))).body).toMatchObject({ nfts: '3', collections: '2' });
  });

  it('pages with limit 2 to the end in both orders, and a cursor stays valid while blocks arrive', async () => {
    let { txs } = await chainTxs();
    const expected = ofAddress(txs, A1).map((t) => t.item);
    expect(await pages(`/${A1}`, 'limit=2')).toEqual(expected);
    expect(await pages(`/${A1}`, 'limit=2&order=ASC')).toEqual([...expected].reverse());
    const first = await s.call(api(`/${A1}`, 'limit=2'));
    const asc = await s.call(api(`/${A1}`, 'limit=2&order=ASC'));
    // A date past the head: the list's end moves with each block, its cursor stays good.
    const dated = await s.call(api(`/${A1}`, 'limit=2&order=ASC&to_date=2100-01-01T00:00:00Z'));
    await pay(A1, 7n);
    await pay(A1, 8n, K2);
    await indexed();
    ({ txs } = await chainTxs());
    const now = ofAddress(txs, A1).map((t) => t.item);
    expect(now).toHaveLength(expected.length + 2);
    // DESC continues below its first page; ASC reaches the new transactions at the end.
    const rest: Json[] = [];
    let cursor: string | null = first.body.cursor;
    while (cursor !== null) {
      const r = await s.call(api(`/${A1}`, `limit=2&cursor=${cursor}`));
      rest.push(...r.body.result);
      cursor = r.body.cursor;
    }
    expect([...first.body.result, ...rest]).toEqual(expected);
    const tail: Json[] = [];
    cursor = asc.body.cursor;
    while (cursor !== null) {
      const r = await s.call(api(`/${A1}`, `limit=2&order=ASC&cursor=${cursor}`));
      tail.push(...r.body.result);
      cursor = r.body.cursor;
    }
    expect([...asc.body.result, ...tail]).toEqual([...now].reverse());
    const datedTail: Json[] = [];
    cursor = dated.body.cursor;
    while (cursor !== null) {
      const r = await s.call(api(`/${A1}`, `limit=2&order=ASC&to_date=2100-01-01T00:00:00Z&cursor=${cursor}`));
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      datedTail.push(...r.body.result);
      cursor = r.body.cursor;
    }
    expect([...dated.body.result, ...datedTail]).toEqual([...now].reverse());
    // A cursor of another list is refused.
    expect((await s.call(api(`/${A2}`, `limit=2&cursor=${first.body.cursor}`))).status).toBe(400);
  });

  it('takes back what a reorg removed: the transaction, the address lists, the counters', async () => {
    const before = (await s.call(api(`/wallets/${A2}/stats`))).body;
    const snapshot = await rpc<string>('evm_snapshot', []);
    const gone = await pay(A2, 12345n);
    await indexed();
    expect((await s.call(api(`/transaction/${gone}`))).status).toBe(200);
    expect((await s.call(api(`/${A2}`))).body.result[0].hash).toBe(gone);
    expect(Number((await s.call(api(`/wallets/${A2}/stats`))).body.transactions.total)).toBe(Number(before.transactions.total) + 1);
    await rpc('evm_revert', [snapshot]);
    // The other branch: another transaction at that height, and one block more so the follower moves to it.
    const other = await pay(A0, 54321n, K1);
    await rpc('evm_mine', []);
    await indexed();
    const ok = await until(async () => (await s.call(api(`/transaction/${gone}`))).status === 404, 10_000, 50);
    expect(ok, 'the reorged transaction is gone').toBe(true);
    expect(await rpc('eth_getTransactionByHash', [gone])).toBeNull();
    expect((await s.call(api(`/transaction/${other}`))).status).toBe(200);
    const { txs } = await chainTxs();
    expect((await s.call(api(`/${A2}`))).body.result).toEqual(ofAddress(txs, A2).map((t) => t.item));
    expect((await s.call(api(`/wallets/${A2}/stats`))).body).toEqual(before);
    expect((await s.call(api(`/${A0}`))).body.result[0]).toEqual(ofAddress(txs, A0)[0]!.item);
  });

  it('answers 400 naming each bad parameter', async () => {
    const bad: Array<[string, string, string]> = [
      [`/0x1234`, '', 'address'],
      [`/${A1}`, 'limit=101', 'limit'],
      [`/${A1}`, 'limit=x', 'limit'],
      [`/${A1}`, 'order=UP', 'order'],
      [`/${A1}`, 'from_block=-1', 'from_block'],
      [`/${A1}`, 'to_block=abc', 'to_block'],
      [`/${A1}`, 'from_date=yesterday', 'from_date'],
      [`/${A1}`, 'include=logs', 'include'],
      [`/${A1}`, 'cursor=nope', 'cursor'],
      [`/${A1}/verbose`, 'to_date=never', 'to_date'],
      [`/transaction/0x12`, '', 'hash'],
      [`/transaction/${'0x' + 'ab'.repeat(32)}`, 'include=all', 'include'],
      [`/transaction/0x12/internal-transactions`, '', 'hash'],
      [`/block/latest`, '', 'block_number_or_hash'],
      [`/block/0x12/stats`, '', 'block_number_or_hash'],
      [`/wallets/0x12/history`, '', 'address'],
      [`/wallets/${A1}/history`, 'include_internal_transactions=yes', 'include_internal_transactions'],
      [`/wallets/0x12/stats`, '', 'address'],
    ];
    for (const [path, query, field] of bad) {
      const r = await s.call(api(path, query));
      expect(r.status, `${path}?${query}`).toBe(400);
      expect(JSON.stringify(r.body), `${path}?${query}`).toContain(field);
    }
    const chains = await s.call(`/api/v2.2/wallets/${A1}/chains?chains=0x89`);
    expect(chains.status).toBe(400);
    expect(JSON.stringify(chains.body)).toContain('chain');
    expect((await s.call(`/api/v2.2/wallets/${A1}/chains?chains=nochain`)).status).toBe(400);
    // A chain not followed.
    expect((await s.call(`/api/v2.2/${A1}?chain=0x1`)).status).toBe(400);
  });

  it("answers the official SDK's transaction, block and wallet calls", async () => {
    const Moralis = await moralisFor(s.url, s.key);
    const chain = '0x539';
    const { txs } = await chainTxs();
    const t = txs.find((x) => x.item['hash'] === tx['split'])!;
    const list = await Moralis.EvmApi.transaction.getWalletTransactions({ address: A1, chain, limit: 2 });
    expect(list.result.map((x: any) => x.hash)).toEqual(
      ofAddress(txs, A1)
        .slice(0, 2)
        .map((x) => x.item['hash']),
    );
    expect(list.hasNext()).toBe(true);
    const next = await list.next();
    expect(next.result.map((x: any) => x.hash)).toEqual(
      ofAddress(txs, A1)
        .slice(2, 4)
        .map((x) => x.item['hash']),
    );
    const verbose = await Moralis.EvmApi.transaction.getWalletTransactionsVerbose({ address: A1, chain });
    expect(verbose.raw.result.length).toBe(ofAddress(txs, A1).length);
    const one = await Moralis.EvmApi.transaction.getTransaction({ transactionHash: tx['split'], chain });
    expect(one).not.toBeNull();
    expect(one.toJSON().hash).toBe(tx['split']);
    expect(one.raw).toEqual({ ...t.item, logs: t.logs });
    const v = await Moralis.EvmApi.transaction.getTransactionVerbose({ transactionHash: tx['token'], chain });
    expect(v.raw.decoded_call.label).toBe('transfer');
    const internal = await Moralis.EvmApi.transaction.getInternalTransactions({ transactionHash: tx['split'], chain });
    expect(internal.raw).toEqual(t.internal);
    expect(internal.result.map((x: any) => x.to.lowercase)).toEqual([A1, A2]);
    const b = await Moralis.EvmApi.block.getBlock({ blockNumberOrHash: String(t.block), chain });
    expect(b).not.toBeNull();
    expect(b.result.hash).toBe(t.item['block_hash']);
    const stats = await Moralis.EvmApi.block.getBlockStats({ blockNumberOrHash: String(t.block), chain });
    expect(stats.raw.transactions.total).toBe('1');
    const history = await Moralis.EvmApi.wallets.getWalletHistory({ address: A1, chain });
    expect(history.result.map((x: any) => x.hash)).toEqual(
      ((await s.call(api(`/wallets/${A1}/history`))).body.result as Json[]).map((x) => x['hash']),
    );
    expect(history.result[0].category).toEqual(expect.any(String));
    const active = await Moralis.EvmApi.wallets.getWalletActiveChains({ address: A1, chains: [chain] });
    expect(active.raw.active_chains).toHaveLength(1);
    const ws = await Moralis.EvmApi.wallets.getWalletStats({ address: A1, chain });
    expect(ws.raw.transactions.total).toBe(String(ofAddress(txs, A1).length));
  });
});
