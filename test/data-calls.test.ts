import { allPages, devnetApi } from './data-api.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeEventLog, formatEther, getAbiItem, parseAbi, parseEther, toEventSelector, zeroHash, type Abi } from 'viem';
import { rmSync } from 'node:fs';
import { parseConfig } from '../engine/config/config.js';
import { dateToBlock } from '../engine/data-api/chain/date-to-block.js';
import { chainReads } from '../engine/evm/chain-reads.js';
import { jsonRpcUpstream } from '../http/clients/rpc.js';
import { openStore } from '../storage/env.js';
import { startAnvil, type Anvil } from '../http/clients/anvil.js';
import { DEV_ACCOUNTS, deploy, publicClient, walletClient, write, type Deployed } from './contracts.js';
import { startChainpost, stopAndClean, tempDir, indexedTo, until, type Running } from './helpers.js';
import { deployEns } from './ens.js';
import { moralisFor } from './sdk.js';
import { A0, A1, A2, serverEnv } from './streams-harness.js';
import { fieldsOf, hostedOperations } from './hosted-openapi.js';

/**
 * The Data API calls answered from the chain and from logs, end to end on a
 * real anvil followed by the real server: native balances, dateToBlock, a
 * contract's logs and decoded events, runContractFunction, ENS names (on a
 * minimal ENS deployed to the devnet, CHAINPOST_ENS), endpoint weights; every
 * answer compared with anvil's own (eth_getBalance, eth_getLogs, eth_call,
 * its blocks), through a reorg, and through the official SDK.
 */

type Json = Record<string, any>;
const [K0, K1, K2] = DEV_ACCOUNTS;
const TRANSFER = 'Transfer(address,address,uint256)';
const TRANSFER_ITEM = {
  anonymous: false,
  type: 'event',
  name: 'Transfer',
  inputs: [
    { indexed: true, name: 'from', type: 'address' },
    { indexed: true, name: 'to', type: 'address' },
    { indexed: false, name: 'value', type: 'uint256' },
  ],
};
let anvil: Anvil;
let s: Running;
let token: Deployed;
let emitter: Deployed;
let registry: Deployed;

const rpc = <T>(method: string, params: unknown[]): Promise<T> =>
  publicClient(anvil.url).request({ method: method as never, params: params as never }) as Promise<T>;
const send = (c: Deployed, functionName: string, args: readonly unknown[], account = K0) =>
  write(anvil.url, { address: c.address, abi: c.abi, functionName, args, account });
/** Spreads block timestamps: the next block comes `seconds` later. */
const later = (seconds: number) => rpc('evm_increaseTime', [seconds]);
const head = async () => Number(await publicClient(anvil.url).getBlockNumber());
const hex = (n: number) => `0x${n.toString(16)}`;
const iso = (unix: number) => new Date(unix * 1000).toISOString();
const api = devnetApi;

async function indexed(): Promise<void> {
  const target = await head();
  const ok = await indexedTo(s, target);
  expect(ok, `the server ingested block ${target}`).toBe(true);
}

/** Every block's number, hash, parent hash and timestamp, from anvil. */
async function blocks(): Promise<Array<{ number: number; hash: string; parent: string; ts: number }>> {
  const out = [];
  for (let n = 0; n <= (await head()); n++) {
    const b = await rpc<Json>('eth_getBlockByNumber', [hex(n), false]);
    out.push({ number: n, hash: b['hash'], parent: b['parentHash'], ts: Number(b['timestamp']) });
  }
  return out;
}

/** The last block whose timestamp is at or before `unix`. */
const lastAtOrBefore = <B extends { ts: number }>(all: B[], unix: number): B => all.filter((b) => b.ts <= unix).at(-1)!;

/** The contract's logs as eth_getLogs has them, in the endpoint's shape, oldest first. */
async function chainLogs(address: string, filter: Json = {}): Promise<Json[]> {
  const logs = await rpc<Json[]>('eth_getLogs', [{ address, fromBlock: '0x0', toBlock: 'latest', ...filter }]);
  const times = new Map<string, number>();
  for (const l of logs)
    if (!times.has(l['blockHash']))
      times.set(l['blockHash'], Number((await rpc<Json>('eth_getBlockByHash', [l['blockHash'], false]))['timestamp']));
  return logs.map((l) => ({
    transaction_hash: l['transactionHash'],
    address: String(l['address']).toLowerCase(),
    block_timestamp: iso(times.get(l['blockHash'])!),
    block_number: String(Number(l['blockNumber'])),
    block_hash: l['blockHash'],
    transaction_index: String(Number(l['transactionIndex'])),
    log_index: String(Number(l['logIndex'])),
    data: l['data'],
    topic0: l['topics'][0] ?? null,
    topic1: l['topics'][1] ?? null,
    topic2: l['topics'][2] ?? null,
    topic3: l['topics'][3] ?? null,
  }));
}

/** Every page of a list from `query` on, following cursors; checks each page's number. */
const pages = (
  path: string,
  query: string,
  init: RequestInit & { json?: unknown } = {},
  cursor: string | null = null,
  first = 0,
): Promise<Json[]> => allPages(s, path, query, init, cursor, first);

beforeAll(async () => {
  anvil = await startAnvil({ chainId: 1337 });
  // A minimal ENS on the devnet: eth and addr.reverse under the root, alice.eth → A1 named back by A1, A2 claiming alice.eth too.
  const ens = await deployEns(anvil.url);
  registry = ens.registry;
  await ens.register('alice', A1);
  await ens.register('nobody', '0x0000000000000000000000000000000000000000');
  await ens.nameSelf(K1, 'alice.eth');
  await ens.nameSelf(K2, 'alice.eth');
  s = await startChainpost(serverEnv(anvil, { CHAINPOST_ENS: `0x539=${registry.address}` }));
  token = await deploy(anvil.url, 'TestToken', ['Test Token', 'TT', 18, parseEther('1000')]);
  emitter = await deploy(anvil.url, 'TestEmitter');
  const wallet = await walletClient(anvil.url);
  for (const [i, [to, amount, k]] of (
    [
      [A1, '10', K0],
      [A2, '2.5', K0],
      [A2, '1', K1],
      [A0, '0.5', K2],
    ] as const
  ).entries()) {
    await later(40 + i);
    await send(token, 'transfer', [to, parseEther(amount)], k);
    await wallet.sendTransaction({ to: A2, value: parseEther('0.1') });
  }
  await send(token, 'approve', [A2, parseEther('3')]);
  await later(100);
  await send(emitter, 'emitMany', [5n]);
  await indexed();
}, 60_000);

afterAll(async () => {
  await stopAndClean(s);
  await anvil?.stop();
});

describe('native balances', () => {
  it('GET /:address/balance answers eth_getBalance at to_block, and at the head without it', async () => {
    const top = await head();
    for (const address of [A0, A1, A2, token.address]) {
      for (const n of [1, 5, top - 3, top]) {
        const r = await s.call(api(`/${address}/balance`, `to_block=${n}`));
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        expect(r.body).toEqual({ balance: BigInt(await rpc<string>('eth_getBalance', [address, hex(n)])).toString() });
      }
      expect((await s.call(api(`/${address}/balance`))).body).toEqual({
        balance: BigInt(await rpc<string>('eth_getBalance', [address, 'latest'])).toString(),
      });
    }
    // Balances differ along the way, so the block matters.
    expect((await s.call(api(`/${A2}/balance`, 'to_block=1'))).body.balance).not.toBe((await s.call(api(`/${A2}/balance`))).body.balance);
    // A block beyond the head: the head's balance.
    expect((await s.call(api(`/${A2}/balance`, `to_block=${top + 1000}`))).body).toEqual((await s.call(api(`/${A2}/balance`))).body);
  });

  it('GET /wallets/balances answers each wallet and the total at to_block', async () => {
    const top = await head();
    const n = top - 4;
    const r = await s.call(
      api(
        '/wallets/balances',
        `to_block=${n}&wallet_addresses[]=${A0}&wallet_addresses[]=${A1.toUpperCase().replace('0X', '0x')}&wallet_addresses[]=${A2}`,
      ),
    );
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const wei = await Promise.all([A0, A1, A2].map(async (a) => BigInt(await rpc<string>('eth_getBalance', [a, hex(n)]))));
    const total = wei.reduce((x, y) => x + y, 0n);
    const block = await rpc<Json>('eth_getBlockByNumber', [hex(n), false]);
    expect(r.body).toEqual([
      {
        chain: 'devnet',
        chain_id: '0x539',
        total_balance: total.toString(),
        block_number: String(n),
        block_timestamp: iso(Number(block['timestamp'])),
        total_balance_formatted: formatEther(total),
        wallet_balances: [A0, A1, A2].map((address, i) => ({
          address,
          balance: wei[i]!.toString(),
          balance_formatted: formatEther(wei[i]!),
        })),
      },
    ]);
    // Also as repeated keys and a comma list; the head without to_block.
    const latest = await s.call(api('/wallets/balances', `wallet_addresses=${A2},${A1}`));
    expect(latest.body[0].block_number).toBe(String(top));
    expect(latest.body[0].wallet_balances.map((w: Json) => w['balance'])).toEqual(
      await Promise.all([A2, A1].map(async (a) => BigInt(await rpc<string>('eth_getBalance', [a, 'latest'])).toString())),
    );
  });
});

describe('GET /dateToBlock', () => {
  it('answers the last block at or before the date, as the blocks have it, by Unix seconds or ISO date', async () => {
    const all = await blocks();
    // anvil may mine several blocks in one second: the last of them is the answer.
    expect(new Set(all.map((b) => b.ts)).size).toBeGreaterThan(5);
    for (const b of all) {
      const next = all[b.number + 1];
      // Just before the next block's second, when that is a later second than this block's (anvil may mine the genesis and block 1 in one).
      for (const at of [b.ts, ...(next === undefined ? [b.ts + 1_000] : next.ts > b.ts ? [next.ts - 1] : [])]) {
        const e = lastAtOrBefore(all, at);
        const r = await s.call(api('/dateToBlock', `date=${at}`));
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        const expected = {
          block: e.number,
          date: iso(at),
          timestamp: e.ts,
          block_timestamp: iso(e.ts),
          hash: e.hash,
          parent_hash: e.parent,
        };
        expect(r.body).toEqual(expected);
        expect((await s.call(api('/dateToBlock', `date=${encodeURIComponent(iso(at))}`))).body).toEqual(expected);
      }
    }
    // Before the first block: block 0 (the server holds the chain from genesis).
    expect((await s.call(api('/dateToBlock', `date=${all[0]!.ts - 50}`))).body).toMatchObject({ block: 0, hash: all[0]!.hash });
  });
});

describe('dateToBlock below the indexed blocks', () => {
  it('searches the node for a date before the first indexed block (an index started after genesis)', async () => {
    const all = await blocks();
    const first = 8;
    // A store whose block-time index starts at block 8, as after a start block: its rows as schema version 5 wrote them (the time alone), and canon.
    const store = openStore(tempDir());
    const node = jsonRpcUpstream(anvil.url);
    try {
      store.transact(() => {
        for (const b of all.slice(first)) {
          store.put('blockTimes', `0x539/${b.number.toString(16).padStart(12, '0')}`, b.ts);
          store.put('canon', `0x539/${b.number.toString(16).padStart(12, '0')}`, b.hash);
        }
        store.put('chainState', '0x539', { head: all.length - 1, confirmed: all.length - 1, tracer: null, pruned: -1 });
      });
      const deps = { kv: store, reads: chainReads(() => node) };
      for (const b of all) {
        const e = lastAtOrBefore(all, b.ts);
        expect(await dateToBlock(deps, '0x539', { date: b.ts }), String(b.number)).toEqual({
          block: e.number,
          date: iso(b.ts),
          timestamp: e.ts,
          block_timestamp: iso(e.ts),
          hash: e.hash,
          parent_hash: e.parent,
        });
      }
      expect((await dateToBlock(deps, '0x539', { date: all[0]!.ts - 10 })).block).toBe(0);
    } finally {
      await node.close();
      await store.close();
      rmSync(store.path, { recursive: true, force: true });
    }
  });
});

describe('GET /:address/logs', () => {
  it('answers every log of the contract as eth_getLogs has it, newest first, oldest first with ASC', async () => {
    for (const c of [token, emitter]) {
      const expected = await chainLogs(c.address);
      expect(expected.length).toBeGreaterThan(4);
      const r = await s.call(api(`/${c.address}/logs`));
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body).toEqual({ page: 0, page_size: 100, cursor: null, result: [...expected].reverse() });
      expect((await s.call(api(`/${c.address.toLowerCase()}/logs`, 'order=ASC'))).body.result).toEqual(expected);
    }
  });

  it('filters by topic0 … topic3, by block and date range and by one block', async () => {
    const transfer = toEventSelector(TRANSFER);
    const pad = (a: string) => `0x${a.slice(2).padStart(64, '0')}`;
    const q = async (query: string) => (await s.call(api(`/${token.address}/logs`, `order=ASC&${query}`))).body.result as Json[];
    expect(await q(`topic0=${transfer}`)).toEqual(await chainLogs(token.address, { topics: [transfer] }));
    expect(await q(`topic0=${transfer}&topic1=${pad(A0)}`)).toEqual(await chainLogs(token.address, { topics: [transfer, pad(A0)] }));
    expect(await q(`topic2=${pad(A2)}`)).toEqual(await chainLogs(token.address, { topics: [null, null, pad(A2)] }));
    expect(await q(`topic1=${pad(A1)}&topic2=${pad(A2)}`)).toEqual(await chainLogs(token.address, { topics: [null, pad(A1), pad(A2)] }));
    expect(await q(`topic0=${zeroHash}`)).toEqual([]);
    const all = await chainLogs(token.address);
    const [from, to] = [Number(all[1]!['block_number']), Number(all.at(-2)!['block_number'])];
    const inRange = all.filter((l) => Number(l['block_number']) >= from && Number(l['block_number']) <= to);
    expect(inRange.length).toBeLessThan(all.length);
    expect(await q(`from_block=${from}&to_block=${to}`)).toEqual(inRange);
    expect(await q(`from_block=${hex(from)}&to_block=${hex(to)}`)).toEqual(inRange);
    // Dates: every block whose timestamp lies between them (anvil may give several blocks one second).
    const [fromDate, toDate] = [all[1]!['block_timestamp'], all.at(-2)!['block_timestamp']];
    expect(await q(`from_date=${encodeURIComponent(fromDate)}&to_date=${encodeURIComponent(toDate)}`)).toEqual(
      all.filter((l) => l['block_timestamp'] >= fromDate && l['block_timestamp'] <= toDate),
    );
    expect(await q(`block_number=${from}`)).toEqual(all.filter((l) => Number(l['block_number']) === from));
    expect(await q(`from_block=${to}&to_block=${from}`)).toEqual([]);
  });

  it('pages by cursor to the end in both orders, and a cursor stays valid while blocks arrive', async () => {
    const expected = await chainLogs(emitter.address);
    expect(await pages(`/${emitter.address}/logs`, 'limit=2&order=ASC')).toEqual(expected);
    expect(await pages(`/${emitter.address}/logs`, 'limit=2')).toEqual([...expected].reverse());
    const desc = await s.call(api(`/${emitter.address}/logs`, 'limit=2'));
    const asc = await s.call(api(`/${emitter.address}/logs`, 'limit=2&order=ASC'));
    await send(emitter, 'emitMany', [3n]);
    await indexed();
    const now = await chainLogs(emitter.address);
    expect(now).toHaveLength(expected.length + 3);
    expect(await pages(`/${emitter.address}/logs`, 'limit=2', {}, desc.body.cursor, 1)).toEqual([...expected].reverse().slice(2));
    expect([...asc.body.result, ...(await pages(`/${emitter.address}/logs`, 'limit=2&order=ASC', {}, asc.body.cursor, 1))]).toEqual(now);
    // A topic filter pages too (the filter reads on past rows it drops).
    const pad = (n: number) => `0x${n.toString(16).padStart(64, '0')}`;
    expect(await pages(`/${emitter.address}/logs`, `limit=1&order=ASC&topic1=${pad(1)}`)).toEqual(
      await chainLogs(emitter.address, { topics: [null, pad(1)] }),
    );
  });
});

describe('POST /:address/events', () => {
  it('decodes the contract’s logs of the event with its ABI, by signature or topic hash', async () => {
    const logs = await rpc<Json[]>('eth_getLogs', [
      { address: token.address, fromBlock: '0x0', toBlock: 'latest', topics: [toEventSelector(TRANSFER)] },
    ]);
    const expected = (await chainLogs(token.address, { topics: [toEventSelector(TRANSFER)] })).map((l, i) => {
      const args = decodeEventLog({ abi: [TRANSFER_ITEM] as Abi, topics: logs[i]!['topics'], data: logs[i]!['data'] }).args as unknown as {
        from: string;
        to: string;
        value: bigint;
      };
      return {
        transaction_hash: l['transaction_hash'],
        address: l['address'],
        block_timestamp: l['block_timestamp'],
        block_number: l['block_number'],
        block_hash: l['block_hash'],
        data: { from: args.from.toLowerCase(), to: args.to.toLowerCase(), value: args.value.toString() },
      };
    });
    expect(expected.length).toBeGreaterThan(3);
    for (const topic of [encodeURIComponent(TRANSFER), toEventSelector(TRANSFER)]) {
      const r = await s.call(api(`/${token.address}/events`, `topic=${topic}`), { method: 'POST', json: TRANSFER_ITEM });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body).toEqual({ page: 0, page_size: 100, cursor: null, result: [...expected].reverse() });
    }
    // The whole ABI as the body; pages; a block range.
    const abi = [
      TRANSFER_ITEM,
      {
        type: 'event',
        name: 'Approval',
        inputs: [
          { indexed: true, name: 'owner', type: 'address' },
          { indexed: true, name: 'spender', type: 'address' },
          { indexed: false, name: 'value', type: 'uint256' },
        ],
      },
    ];
    expect(
      await pages(`/${token.address}/events`, `topic=${toEventSelector(TRANSFER)}&order=ASC&limit=2`, { method: 'POST', json: abi }),
    ).toEqual(expected);
    const approval = await s.call(api(`/${token.address}/events`, `topic=${encodeURIComponent('Approval(address,address,uint256)')}`), {
      method: 'POST',
      json: abi,
    });
    expect(approval.body.result.map((e: Json) => e['data'])).toEqual([{ owner: A0, spender: A2, value: parseEther('3').toString() }]);
    const b = expected[2]!['block_number'];
    expect(
      (
        await s.call(api(`/${token.address}/events`, `topic=${toEventSelector(TRANSFER)}&from_block=${b}&to_block=${b}`), {
          method: 'POST',
          json: TRANSFER_ITEM,
        })
      ).body.result,
    ).toEqual([expected[2]]);
  });
});

describe('POST /:address/function', () => {
  it('calls the function by eth_call at to_block or the head and answers the decoded result', async () => {
    const abi = token.abi as unknown as Json[];
    const call = (fn: string, params: Json, query = '') =>
      s.call(api(`/${token.address}/function`, `function_name=${fn}${query}`), { method: 'POST', json: { abi, params } });
    const client = publicClient(anvil.url);
    for (const a of [A0, A1, A2]) {
      // The ABI's input of the public mapping getter has no name: given by position (its index).
      const r = await call('balanceOf', { 0: a });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body).toBe(
        String(await client.readContract({ address: token.address, abi: token.abi, functionName: 'balanceOf', args: [a] })),
      );
    }
    expect((await call('name', {})).body).toBe('Test Token');
    expect((await call('decimals', {})).body).toBe('18');
    expect((await call('allowance', { 0: A0 })).status).toBe(400);
    // An earlier block: the balance then.
    const first = Number((await chainLogs(token.address))[1]!['block_number']);
    expect((await call('balanceOf', { 0: A2 }, `&to_block=${first}`)).body).toBe(
      String(
        await client.readContract({
          address: token.address,
          abi: token.abi,
          functionName: 'balanceOf',
          args: [A2],
          blockNumber: BigInt(first),
        }),
      ),
    );
    // Named params, as the SDK sends them.
    const named = parseAbi([
      'function balanceOf(address owner) view returns (uint256)',
      'function allowance(address owner, address spender) view returns (uint256)',
    ]);
    const r = await s.call(api(`/${token.address}/function`, 'function_name=allowance'), {
      method: 'POST',
      json: { abi: named, params: { owner: A0, spender: A2 } },
    });
    expect(r.body).toBe(parseEther('3').toString());
    // A call that reverts: 400.
    const reverts = await s.call(api(`/${token.address}/function`, 'function_name=transferFrom'), {
      method: 'POST',
      json: {
        abi: parseAbi(['function transferFrom(address from, address to, uint256 value) returns (bool)']),
        params: { from: A1, to: A2, value: '1' },
      },
    });
    expect(reverts.status).toBe(400);
    expect(reverts.body.message).toMatch(/reverted/);
  });
});

describe('ENS', () => {
  it('resolves a name to its address and an address to its primary name through the registry of CHAINPOST_ENS', async () => {
    expect((await s.call('/api/v2.2/resolve/ens/alice.eth')).body).toEqual({ address: A1 });
    expect((await s.call('/api/v2.2/resolve/ens/Alice.ETH')).body).toEqual({ address: A1 });
    expect((await s.call('/api/v2.2/resolve/alice.eth?currency=eth')).body).toEqual({ address: A1 });
    expect((await s.call(`/api/v2.2/resolve/${A1}/reverse`)).body).toEqual({ name: 'alice.eth' });
    expect((await s.call(`/api/v2.2/resolve/${A1.toUpperCase().replace('0X', '0x')}/domain`)).body).toEqual({ name: 'alice.eth' });
    // A2 names alice.eth, which resolves to A1: not A2's name. A0 names nothing; bob.eth has no resolver; nobody.eth no address.
    for (const p of [
      `/resolve/${A2}/reverse`,
      `/resolve/${A0}/reverse`,
      `/resolve/${A0}/domain`,
      '/resolve/ens/bob.eth',
      '/resolve/ens/nobody.eth',
      '/resolve/bob.eth',
    ]) {
      expect((await s.call(`/api/v2.2${p}`)).status, p).toBe(404);
    }
  });

  it('answers 404 on a server that does not follow the ENS chain', async () => {
    const other = await startChainpost({ CHAINPOST_ENS: `0x539=${registry.address}` });
    try {
      for (const p of ['/resolve/ens/alice.eth', `/resolve/${A1}/reverse`]) {
        const r = await other.call(`/api/v2.2${p}`);
        expect(r.status).toBe(404);
        expect(r.body.message).toMatch(/does not follow/);
      }
    } finally {
      await stopAndClean(other);
    }
  });
});

describe('CHAINPOST_ENS', () => {
  it('names one chain and its registry; Ethereum’s registry by default', () => {
    expect(parseConfig({}).ens).toEqual({ chain: '0x1', registry: '0x00000000000c2e074ec69a0dfb2997ba6c7d2e1e' });
    expect(parseConfig({ CHAINPOST_ENS: `devnet=${registry.address}` }).ens).toEqual({
      chain: '0x539',
      registry: registry.address.toLowerCase(),
    });
    for (const bad of ['0x539', '0x539=0x12', `nochain=${registry.address}`, `0x539=${registry.address},0x1=${registry.address}`]) {
      expect(() => parseConfig({ CHAINPOST_ENS: bad }), bad).toThrow(/^CHAINPOST_ENS: /);
    }
  });
});

describe('GET /info/endpointWeights', () => {
  /** A request on the devnet to an operation's `{name}` path, each parameter given a value (which the handler may refuse: the route still answers). */
  const probe = (method: string, path: string) =>
    s.call(`/api/v2.2${path.replace(/\{[^}]+\}/g, A1)}?chain=0x539`, { method, ...(method === 'GET' ? {} : { json: {} }) });
  /**
   * Whether the answer came from a handler of the operation: not the fallback's "no route", not a removal, not a
   * 501, and not a 400 about a field the operation does not have (another route's handler took the path, as
   * /nft/:address/:token_id takes /nft/{address}/traits).
   */
  const served = (r: { status: number; body: any }, fields?: ReadonlySet<string>): boolean =>
    !(r.status === 404 && /^no route /.test(r.body.message)) &&
    ![410, 501].includes(r.status) &&
    !(r.status === 404 && r.body.details?.removedOn !== undefined) &&
    !(r.status === 400 && fields !== undefined && !fields.has(String(r.body.details?.field).split('.')[0]!));

  it('lists exactly the operations this server serves, removed ones left out, each with a rate-limit cost of 1 and no price', async () => {
    const r = await s.call('/api/v2.2/info/endpointWeights');
    expect(r.status).toBe(200);
    for (const w of r.body) expect(w).toEqual({ endpoint: expect.any(String), path: expect.any(String), price: '0', rateLimitCost: '1' });
    const listed = new Map<string, string>(r.body.map((w: Json) => [w['endpoint'], w['path']]));
    expect(listed.size).toBe(r.body.length);
    // Served here, though the 2.2 document does not have them.
    expect(
      Object.fromEntries(
        ['getContractLogs', 'getTokenAllowance', 'getTokenScore', 'getInternalTransactions', 'getNFTContractSalePrices'].map((e) => [
          e,
          listed.get(e),
        ]),
      ),
    ).toEqual({
      getContractLogs: '/{address}/logs',
      getTokenAllowance: '/erc20/{address}/allowance',
      getTokenScore: '/tokens/{tokenAddress}/score',
      getInternalTransactions: '/transaction/{transaction_hash}/internal-transactions',
      getNFTContractSalePrices: '/nft/{address}/price',
    });
    // The document's operations: listed when, and only when, a request reaches a handler of this server.
    const ops = hostedOperations().map(({ method, path, op }) => ({ method, path, endpoint: op.operationId, fields: fieldsOf(op) }));
    const answers = await Promise.all(
      ops.map(async ({ fields, ...op }) => ({ ...op, served: served(await probe(op.method, op.path), fields) })),
    );
    expect(answers.filter((a) => a.served !== listed.has(a.endpoint))).toEqual([]);
    expect(answers.filter((a) => !a.served).length).toBeGreaterThan(30);
    // And the ones beyond the document reach a handler by one method or another.
    const documented = new Set(ops.map((o) => o.endpoint));
    for (const [endpoint, path] of listed) {
      if (documented.has(endpoint)) continue;
      const reached = await Promise.all(['GET', 'POST'].map(async (m) => served(await probe(m, path))));
      expect(reached.some(Boolean), `${endpoint} ${path}`).toBe(true);
    }
  });
});

describe('operations resting on services this server does not run', () => {
  it('answers 501 to a contracts review and an IPFS folder upload, saying what the server does instead', async () => {
    const review = await s.call('/api/v2.2/contracts-review?chain=0x539', {
      method: 'POST',
      json: { contracts: [{ contractAddress: A1, reason: 'spam', reportType: 'erc20' }] },
    });
    expect([review.status, review.body.message]).toEqual([
      501,
      expect.stringMatching(/^POST \/api\/v2\.2\/contracts-review: this server runs no off-chain contract review service .*possible_spam/),
    ]);
    const upload = await s.call('/api/v2.2/ipfs/uploadFolder', { method: 'POST', json: [{ path: 'a.json', content: 'e30=' }] });
    expect([upload.status, upload.body.message]).toEqual([
      501,
      expect.stringMatching(/^POST \/api\/v2\.2\/ipfs\/uploadFolder: this server runs no IPFS node .*CHAINPOST_IPFS_GATEWAY/),
    ]);
  });
});

describe('a reorg', () => {
  it('takes back the logs and block times of the blocks that left the chain', async () => {
    const snapshot = await rpc<string>('evm_snapshot', []);
    const top = await head();
    await later(30);
    await send(token, 'transfer', [A1, 1n]);
    await send(emitter, 'emitMany', [2n]);
    await indexed();
    const before = await chainLogs(token.address);
    expect((await s.call(api(`/${token.address}/logs`, 'order=ASC'))).body.result).toEqual(before);
    const gone = before.at(-1)!;
    await rpc('evm_revert', [snapshot]);
    // A longer branch: other blocks at the same heights, with another transfer.
    await later(7);
    await send(token, 'transfer', [A2, 2n]);
    await rpc('anvil_mine', ['0x3']);
    expect(await head()).toBe(top + 4);
    await indexed();
    await until(
      async () =>
        (await s.call(api(`/${token.address}/logs`, 'order=ASC'))).body.result.at(-1)?.transaction_hash !== gone['transaction_hash'],
      10_000,
      20,
    );
    const after = await chainLogs(token.address);
    expect(after.map((l) => l['transaction_hash'])).not.toContain(gone['transaction_hash']);
    expect((await s.call(api(`/${token.address}/logs`, 'order=ASC'))).body.result).toEqual(after);
    expect((await s.call(api(`/${emitter.address}/logs`, 'order=ASC'))).body.result).toEqual(await chainLogs(emitter.address));
    const all = await blocks();
    for (const b of all.slice(top - 1)) {
      const e = lastAtOrBefore(all, b.ts);
      expect((await s.call(api('/dateToBlock', `date=${b.ts}`))).body).toMatchObject({
        block: e.number,
        hash: e.hash,
        parent_hash: e.parent,
      });
    }
  });
});

describe('bad parameters', () => {
  it('answers each 400 naming the field', async () => {
    const post = (json: unknown): RequestInit & { json?: unknown } => ({ method: 'POST', json });
    const bad: Array<[string, string, (RequestInit & { json?: unknown })?]> = [
      ['address', api('/0x123/balance')],
      ['to_block', api(`/${A0}/balance`, 'to_block=soon')],
      ['wallet_addresses', api('/wallets/balances')],
      ['wallet_addresses.0', api('/wallets/balances', 'wallet_addresses=0x12')],
      ['wallet_addresses', api('/wallets/balances', Array.from({ length: 26 }, () => `wallet_addresses[]=${A0}`).join('&'))],
      ['date', api('/dateToBlock')],
      ['date', api('/dateToBlock', 'date=yesterday')],
      ['address', api('/nothex/logs')],
      ['topic0', api(`/${token.address}/logs`, 'topic0=0x12')],
      ['topic3', api(`/${token.address}/logs`, 'topic3=zz')],
      ['from_block', api(`/${token.address}/logs`, 'from_block=-1')],
      ['to_date', api(`/${token.address}/logs`, 'to_date=never')],
      ['block_number', api(`/${token.address}/logs`, 'block_number=x')],
      ['limit', api(`/${token.address}/logs`, 'limit=101')],
      ['order', api(`/${token.address}/logs`, 'order=asc')],
      ['cursor', api(`/${token.address}/logs`, 'cursor=nope')],
      ['topic', api(`/${token.address}/events`), post(TRANSFER_ITEM)],
      ['topic', api(`/${token.address}/events`, 'topic=Transfer(address'), post(TRANSFER_ITEM)],
      ['abi', api(`/${token.address}/events`, `topic=${toEventSelector(TRANSFER)}`), post('x')],
      ['abi', api(`/${token.address}/events`, `topic=${encodeURIComponent('Approval(address,address,uint256)')}`), post(TRANSFER_ITEM)],
      ['function_name', api(`/${token.address}/function`), post({ abi: token.abi, params: {} })],
      ['function_name', api(`/${token.address}/function`, 'function_name=nothing'), post({ abi: token.abi, params: {} })],
      ['abi', api(`/${token.address}/function`, 'function_name=name'), post({ params: {} })],
      [
        'params.owner',
        api(`/${token.address}/function`, 'function_name=balanceOf'),
        post({ abi: parseAbi(['function balanceOf(address owner) view returns (uint256)']), params: {} }),
      ],
      [
        'params.n',
        api(`/${token.address}/function`, 'function_name=f'),
        post({ abi: parseAbi(['function f(uint256 n) view returns (uint256)']), params: { n: 'many' } }),
      ],
      // ABI items the schema must refuse rather than let a later step throw (a 500).
      [
        'abi.0.inputs.0',
        api(`/${token.address}/function`, 'function_name=f'),
        post({ abi: [{ type: 'function', name: 'f', inputs: [null] }], params: {} }),
      ],
      [
        'abi.0.inputs.0',
        api(`/${token.address}/function`, 'function_name=f'),
        post({ abi: [{ type: 'function', name: 'f', inputs: [{ type: 'tuple', name: 't' }] }], params: { t: {} } }),
      ],
      ['domain', '/api/v2.2/resolve/ens/a..eth'],
      ['currency', '/api/v2.2/resolve/alice.eth?currency=btc'],
      ['address', '/api/v2.2/resolve/0x12/reverse'],
    ];
    for (const [field, p, init] of bad) {
      const r = await s.call(p, init);
      expect(r.status, `${p} ${JSON.stringify(r.body)}`).toBe(400);
      expect(r.body.details, p).toMatchObject({ field });
      expect(r.body.message).toMatch(new RegExp(`^${field.replace('.', '\\.')}: `));
    }
    // A chain not followed (0x1 by default).
    const r = await s.call(`/api/v2.2/${A0}/balance`);
    expect(r.status).toBe(400);
    expect(r.body.details).toMatchObject({ field: 'chain' });
  });
});

describe('the official SDK', () => {
  it('reads every call of this part', async () => {
    const Moralis = await moralisFor(s.url, s.key);
    const E = Moralis.EvmApi;
    const chain = '0x539';
    const native = await E.balance.getNativeBalance({ chain, address: A2 });
    expect(native.result.balance.wei).toBe(BigInt(await rpc<string>('eth_getBalance', [A2, 'latest'])).toString());
    const many = await E.balance.getNativeBalancesForAddresses({ chain, walletAddresses: [A1, A2] });
    expect(many.result[0].walletBalances.map((w: Json) => w['balance'].wei)).toEqual(
      await Promise.all([A1, A2].map(async (a) => BigInt(await rpc<string>('eth_getBalance', [a, 'latest'])).toString())),
    );
    const all = await blocks();
    const b = lastAtOrBefore(all, all[all.length - 3]!.ts);
    const date = await E.block.getDateToBlock({ chain, date: new Date(b.ts * 1000).toISOString() });
    expect([date.result.block, date.result.timestamp, date.result.hash, date.result.parentHash]).toEqual([
      b.number,
      b.ts,
      b.hash,
      b.parent,
    ]);
    const logs = await E.events.getContractLogs({ chain, address: token.address, limit: 2 });
    const expectedLogs = [...(await chainLogs(token.address))].reverse();
    const got: Json[] = [];
    for (let page = logs; ; page = await page.next()) {
      got.push(...page.result.map((l: { toJSON(): Json }) => l.toJSON()));
      if (!page.hasNext()) break;
    }
    expect(got.map((l) => [l['transactionHash'], l['logIndex'], l['blockNumber'], l['topics'][0], l['data']])).toEqual(
      expectedLogs.map((l) => [l['transaction_hash'], Number(l['log_index']), Number(l['block_number']), l['topic0'], l['data']]),
    );
    const events = await E.events.getContractEvents({
      chain,
      address: token.address,
      topic: toEventSelector(TRANSFER),
      abi: TRANSFER_ITEM,
      order: 'ASC',
    });
    const transfers = await chainLogs(token.address, { topics: [toEventSelector(TRANSFER)] });
    expect(events.result.map((e: Json) => [e['transactionHash'], e['data'].to.lowercase, e['data'].value.wei])).toEqual(
      transfers.map((l) => [l['transaction_hash'], `0x${String(l['topic2']).slice(26)}`, BigInt(l['data']).toString()]),
    );
    const fnAbi = [getAbiItem({ abi: parseAbi(['function balanceOf(address owner) view returns (uint256)']), name: 'balanceOf' })];
    const fn = await E.utils.runContractFunction({
      chain,
      address: token.address,
      functionName: 'balanceOf',
      abi: fnAbi,
      params: { owner: A1 },
    });
    expect(fn.result).toBe(
      String(await publicClient(anvil.url).readContract({ address: token.address, abi: token.abi, functionName: 'balanceOf', args: [A1] })),
    );
    expect((await E.resolve.resolveENSDomain({ domain: 'alice.eth' })).result.address.lowercase).toBe(A1);
    expect((await E.resolve.resolveDomain({ domain: 'alice.eth' })).result.address.lowercase).toBe(A1);
    expect((await E.resolve.resolveAddress({ address: A1 })).result.name).toBe('alice.eth');
    const weights = await E.utils.endpointWeights();
    expect(weights.result.length).toBeGreaterThan(50);
    expect(weights.result[0]).toMatchObject({ price: '0', rateLimitCost: '1' });
  });
});
