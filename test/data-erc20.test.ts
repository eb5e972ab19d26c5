import { allPages } from './data-api.js';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { decodeEventLog, formatUnits, getContractAddress, parseUnits, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { startAnvil, type Anvil } from '../http/clients/anvil.js';
import { DEV_ACCOUNTS, deploy, ERC20_ABI, publicClient, walletClient, write, type Deployed } from './contracts.js';
import { advance, startChainpost, stopAndClean, indexedTo, until, type Running } from './helpers.js';
import { moralisFor } from './sdk.js';
import { A0, A1, A2, serverEnv } from './streams-harness.js';

const require = createRequire(import.meta.url);

/**
 * The ERC-20 endpoints of the Data API end to end, on a real anvil followed by
 * the real server from block 0: a token (OLD) with holders before the server
 * starts, and one (NEW) created after, on blocks spread over days (the holder
 * counts and their changes). Every answer is compared with what the chain
 * says: balanceOf, totalSupply, allowance, eth_getBalance, the receipts' logs.
 * (A start block after a token's creation: test/data-erc20-start.test.ts.)
 */

type Json = Record<string, any>;
const [K0, K1, K2] = DEV_ACCOUNTS;
const X = (n: number): Hex => `0x${n.toString(16).padStart(40, '0')}` as Hex;
const [X1, X2, X3, X4, X5] = [X(0xa1), X(0xa2), X(0xa3), X(0xa4), X(0xa5)];
const S1 = X(0x51);
const S2 = X(0x52);
const DAY = 86_400;

let anvil: Anvil;
let s: Running;
let OLD: Deployed;
let NEW: Deployed;
/** The server follows anvil from its first block. */
const startBlock = 0;
/** The first block after the server started. */
let started: number;
/** NEW's creation time: one hour into a day, so its first day holds its first transfers. */
let T0: number;

const rpc = <T>(method: string, params: unknown[]): Promise<T> =>
  publicClient(anvil.url).request({ method: method as never, params: params as never }) as Promise<T>;
const send = (c: Deployed, functionName: string, args: readonly unknown[], account = K0) =>
  write(anvil.url, { address: c.address, abi: c.abi, functionName, args, account });
const at = (timestamp: number) => rpc('evm_setNextBlockTimestamp', [timestamp]);
const head = async (): Promise<number> => Number(await publicClient(anvil.url).getBlockNumber());
const lc = (c: Deployed): string => c.address.toLowerCase();
const read = (c: Deployed, functionName: string, args: readonly unknown[] = [], blockNumber?: number) =>
  publicClient(anvil.url).readContract({
    address: c.address,
    abi: c.abi,
    functionName,
    args,
    ...(blockNumber === undefined ? {} : { blockNumber: BigInt(blockNumber) }),
  }) as Promise<bigint>;

/** The endpoint on the devnet (0x539). */
const api = (path: string, query = ''): Promise<{ status: number; body: any }> =>
  s.call(`/api/v2.2${path}?chain=0x539${query === '' ? '' : `&${query}`}`);
async function ok(path: string, query = ''): Promise<any> {
  const r = await api(path, query);
  expect(r.status, `${path}?${query}: ${JSON.stringify(r.body)}`).toBe(200);
  return r.body;
}

/** Waits until the server has ingested anvil's head. */
async function indexed(): Promise<void> {
  const target = await head();
  const ok = await indexedTo(s, target);
  expect(ok, `the server ingested block ${target}`).toBe(true);
}

/** Every ERC-20 transfer from the start block on, from the receipts, as the endpoints answer it; oldest first. */
async function chainTransfers(): Promise<Json[]> {
  const out: Json[] = [];
  const names = new Map([
    [lc(OLD), ['Old Token', 'OLD', 18]],
    [lc(NEW), ['New Token', 'NEW', 6]],
  ] as const);
  for (let n = startBlock; n <= (await head()); n++) {
    const tag = `0x${n.toString(16)}`;
    const [block, receipts] = await Promise.all([
      rpc<Json>('eth_getBlockByNumber', [tag, false]),
      rpc<Json[]>('eth_getBlockReceipts', [tag]),
    ]);
    for (const r of receipts) {
      for (const l of r['logs'] as Json[]) {
        if (l['topics'].length !== 3) continue;
        const e = decodeEventLog({ abi: ERC20_ABI, data: l['data'], topics: l['topics'] });
        if (e.eventName !== 'Transfer') continue;
        const [name, symbol, decimals] = names.get(l['address'])!;
        const a = e.args as { from: string; to: string; value: bigint };
        out.push({
          token_name: name,
          token_symbol: symbol,
          token_logo: null,
          token_decimals: String(decimals),
          transaction_hash: r['transactionHash'],
          address: l['address'],
          block_timestamp: new Date(Number(block['timestamp']) * 1000).toISOString(),
          block_number: String(n),
          block_hash: block['hash'],
          to_address_entity: null,
          to_address_entity_logo: null,
          to_address: a.to.toLowerCase(),
          to_address_label: null,
          from_address_entity: null,
          from_address_entity_logo: null,
          from_address: a.from.toLowerCase(),
          from_address_label: null,
          value: a.value.toString(),
          value_decimal: formatUnits(a.value, decimals),
          transaction_index: Number(r['transactionIndex']),
          log_index: Number(l['logIndex']),
          possible_spam: false,
          verified_contract: false,
        });
      }
    }
  }
  return out;
}

const pages = (path: string, query: string): Promise<Json[]> => allPages(s, path, query);

/** What the chain says a wallet holds of OLD and NEW (above 0), in the index's token order. */
async function chainBalances(wallet: string): Promise<Array<[string, string]>> {
  const out: Array<[string, string]> = [];
  for (const c of [OLD, NEW].sort((a, b) => (lc(a) < lc(b) ? -1 : 1))) {
    const b = await read(c, 'balanceOf', [wallet]);
    if (b > 0n) out.push([lc(c), b.toString()]);
  }
  return out;
}

/** The chain's holders of a token among `wallets`, balance descending (ties by address). */
async function chainHolders(c: Deployed, wallets: readonly string[]): Promise<Array<[string, string]>> {
  const rows = await Promise.all(wallets.map(async (w) => [w, await read(c, 'balanceOf', [w])] as const));
  return rows
    .filter(([, b]) => b > 0n)
    .sort((a, b) => (a[1] === b[1] ? (a[0] < b[0] ? -1 : 1) : a[1] > b[1] ? -1 : 1))
    .map(([w, b]) => [w, b.toString()]);
}

const EVERYONE = [A0, A1, A2, X1, X2, X3, X4, X5];

beforeAll(async () => {
  anvil = await startAnvil({ chainId: 1337 });
  // OLD and its first holders, before the server starts.
  OLD = await deploy(anvil.url, 'TestToken', ['Old Token', 'OLD', 18, parseUnits('1000', 18)]);
  await send(OLD, 'transfer', [A1, parseUnits('100', 18)]);
  await send(OLD, 'transfer', [A2, parseUnits('50', 18)]);
  await send(OLD, 'transfer', [X1, parseUnits('5', 18)]);
  await send(OLD, 'approve', [S1, 7n]);
  // Before 2026-07-31, when /holders/historical goes (the test clock moves past it at the end).
  s = await startChainpost(
    serverEnv(anvil, { CHAINPOST_TEST_CLOCK: '1', CHAINPOST_NOW: '2026-07-30T00:00:00Z', CHAINPOST_START_BLOCKS: '0x539=0' }),
  );
  await indexed();
  started = (await head()) + 1;
  // OLD moves among holders from before the server started, and a mint changes its supply.
  await send(OLD, 'transfer', [X3, parseUnits('40', 18)], K1);
  await send(OLD, 'transfer', [A1, parseUnits('50', 18)], K2);
  await send(OLD, 'transfer', [A2, parseUnits('1', 18)]);
  await send(OLD, 'mint', [X3, parseUnits('3', 18)]);
  await send(OLD, 'approve', [S1, 9n]);
  await send(OLD, 'approve', [S2, 2n ** 256n - 1n], K1);
  // NEW from its creation, on days of its own: 1 holder at T0, 2 a minute on, 3 two minutes on, 4 two days on, 3 three hours later.
  const now = Number((await publicClient(anvil.url).getBlock()).timestamp);
  T0 = (Math.floor(now / DAY) + 1) * DAY + 3600;
  await at(T0);
  NEW = await deploy(anvil.url, 'TestToken', ['New Token', 'NEW', 6, parseUnits('1000', 6)]);
  await at(T0 + 60);
  await send(NEW, 'transfer', [A1, parseUnits('10', 6)]);
  await at(T0 + 120);
  await send(NEW, 'transfer', [A2, parseUnits('20', 6)]);
  await at(T0 + 2 * DAY);
  await send(NEW, 'transfer', [X2, parseUnits('30', 6)]);
  await at(T0 + 2 * DAY + 3 * 3600);
  await send(NEW, 'transfer', [A2, parseUnits('10', 6)], K1);
  await send(NEW, 'approve', [S2, 100n]);
  await send(NEW, 'approve', [S1, 5n], K1);
  await send(NEW, 'approve', [S1, 0n], K1);
  // A contract among OLD's holders.
  await send(OLD, 'transfer', [NEW.address, 2n]);
  await indexed();
}, 90_000);

afterAll(async () => {
  await stopAndClean(s);
  await anvil?.stop();
});

describe('ERC-20 balances (GET /:address/erc20, /wallets/:address/tokens)', () => {
  it('answers every wallet as balanceOf says, including holders from before the server started', async () => {
    for (const wallet of [A0, A1, A2, X1, X2, X3]) {
      const body = await ok(`/${wallet}/erc20`);
      expect(
        body.map((b: Json) => [b.token_address, b.balance]),
        wallet,
      ).toEqual(await chainBalances(wallet));
    }
    const [old] = await ok(`/${A1}/erc20`, `token_addresses[]=${lc(OLD)}`);
    expect(old).toEqual({
      token_address: lc(OLD),
      name: 'Old Token',
      symbol: 'OLD',
      logo: null,
      thumbnail: null,
      decimals: 18,
      balance: parseUnits('110', 18).toString(),
      possible_spam: false,
      verified_contract: false,
      total_supply: parseUnits('1003', 18).toString(),
      total_supply_formatted: '1003',
      percentage_relative_to_total_supply: expect.closeTo((110 / 1003) * 100, 6),
    });
  });

  it('answers an earlier to_block by balanceOf at that block', async () => {
    const before = started + 1;
    const body = await ok(`/${A1}/erc20`, `to_block=${before}`);
    expect(body.map((b: Json) => [b.token_address, b.balance])).toEqual([
      [lc(OLD), (await read(OLD, 'balanceOf', [A1], before)).toString()],
    ]);
  });

  it('puts the native balance first (eth_getBalance at the block) and pages the rest', async () => {
    const body = await ok(`/wallets/${A1}/tokens`);
    const wei = await publicClient(anvil.url).getBalance({ address: A1 });
    expect(body.result[0]).toMatchObject({
      token_address: '0xeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee',
      native_token: true,
      balance: wei.toString(),
      decimals: 18,
    });
    expect(body.block_number).toBe(String(await head()));
    expect(body.result.slice(1).map((b: Json) => [b.token_address, b.balance, b.native_token])).toEqual(
      (await chainBalances(A1)).map(([t, b]) => [t, b, false]),
    );
    expect(body.result[1]).toMatchObject({ balance_formatted: expect.any(String), usd_price: null, usd_value: null });
    expect(await pages(`/wallets/${A1}/tokens`, 'limit=1')).toEqual(body.result);
    expect((await ok(`/wallets/${A1}/tokens`, 'exclude_native=true')).result).toEqual(body.result.slice(1));
  });
});

describe('ERC-20 holders (GET /erc20/:token_address/owners, /holders, /holders/historical)', () => {
  it('lists every holder of a token created in range, balance descending, exact', async () => {
    const body = await ok(`/erc20/${NEW.address}/owners`);
    expect(body.partial).toBe(false);
    expect(body.total_supply).toBe(parseUnits('1000', 6).toString());
    expect(body.result.map((o: Json) => [o.owner_address, o.balance])).toEqual(await chainHolders(NEW, EVERYONE));
    expect(body.result[0]).toMatchObject({
      owner_address: A0,
      balance_formatted: '940',
      percentage_relative_to_total_supply: 94,
      usd_value: null,
    });
    expect(await pages(`/erc20/${NEW.address}/owners`, 'limit=1')).toEqual(body.result);
    expect(await pages(`/erc20/${NEW.address}/owners`, 'limit=2&order=ASC')).toEqual([...body.result].reverse());
  });

  it('lists the holders of a token that had them before the server started, exact (its creation is indexed)', async () => {
    const body = await ok(`/erc20/${OLD.address}/owners`);
    expect(body.partial).toBe(false);
    expect(body.result.map((o: Json) => [o.owner_address, o.balance])).toEqual(await chainHolders(OLD, [...EVERYONE, lc(NEW)]));
    expect((await ok(`/erc20/${OLD.address}/holders`)).totalHolders).toBe(body.result.length);
    // eth_getCode: the NEW contract holds code, the accounts none.
    expect(body.result.filter((o: Json) => o.is_contract).map((o: Json) => o.owner_address)).toEqual([lc(NEW)]);
    expect(body.result.every((o: Json) => typeof o.is_contract === 'boolean')).toBe(true);
  });

  it('counts holders and their change over each window back from the last indexed block', async () => {
    const body = await ok(`/erc20/${NEW.address}/holders`);
    expect(body.totalHolders).toBe(3);
    expect(body.partial).toBe(false);
    // Four holders until three hours ago, three before that day since T0 + 2 min, none before T0.
    expect(body.holderChange).toEqual({
      '5min': { change: -1, changePercent: -25 },
      '1h': { change: -1, changePercent: -25 },
      '6h': { change: 0, changePercent: 0 },
      '24h': { change: 0, changePercent: 0 },
      '3d': { change: 3, changePercent: 0 },
      '7d': { change: 3, changePercent: 0 },
      '30d': { change: 3, changePercent: 0 },
    });
    expect(body.holderSupply.top10).toEqual({ supply: '1000', supplyPercent: 100 });
    expect(body.holderSupply.top500).toEqual({ supply: '1000', supplyPercent: 100 });
  });

  it('answers the daily and hourly holder series, then 404 once the removal date passed', async () => {
    const day0 = Math.floor(T0 / DAY) * DAY;
    const iso = (t: number) => new Date(t * 1000).toISOString();
    const daily = await ok(
      `/erc20/${NEW.address}/holders/historical`,
      `fromDate=${iso(day0)}&toDate=${iso(day0 + 2 * DAY + 1)}&timeFrame=1d`,
    );
    expect(daily.result.map((r: Json) => [r.timestamp, r.totalHolders, r.netHolderChange])).toEqual([
      [iso(day0 + 2 * DAY), 3, 0],
      [iso(day0 + DAY), 3, 0],
      [iso(day0), 3, 3],
    ]);
    expect(daily).toMatchObject({ page: 0, pageSize: 100, cursor: null, partial: false });
    const hours = await pages(
      `/erc20/${NEW.address}/holders/historical`,
      `fromDate=${T0 + 2 * DAY - 3600}&toDate=${T0 + 2 * DAY + 3 * 3600}&timeFrame=1h&limit=2`,
    );
    expect(hours.map((r: Json) => [r.timestamp, r.totalHolders, r.netHolderChange])).toEqual([
      [iso(T0 + 2 * DAY + 3 * 3600), 3, -1],
      [iso(T0 + 2 * DAY + 2 * 3600), 4, 0],
      [iso(T0 + 2 * DAY + 3600), 4, 0],
      [iso(T0 + 2 * DAY), 4, 1],
      [iso(T0 + 2 * DAY - 3600), 3, 0],
    ]);
  });
});

describe('ERC-20 transfers (GET /:address/erc20/transfers, /erc20/:address/transfers)', () => {
  it("answers a wallet's and a token's transfers as the receipts have them, newest first, ASC on request", async () => {
    const all = await chainTransfers();
    const mine = all.filter((t) => t.from_address === A1 || t.to_address === A1);
    expect(mine.length).toBeGreaterThan(3);
    expect((await ok(`/${A1}/erc20/transfers`)).result).toEqual([...mine].reverse());
    expect((await ok(`/${A1}/erc20/transfers`, 'order=ASC')).result).toEqual(mine);
    for (const c of [OLD, NEW]) {
      const of = all.filter((t) => t.address === lc(c));
      expect((await ok(`/erc20/${c.address}/transfers`)).result).toEqual([...of].reverse());
      expect(await pages(`/erc20/${c.address}/transfers`, 'order=ASC&limit=2')).toEqual(of);
    }
    expect((await ok(`/${A1}/erc20/transfers`, `contract_addresses[]=${lc(NEW)}&limit=1`)).result).toEqual([
      mine.filter((t) => t.address === lc(NEW)).at(-1),
    ]);
    expect(await pages(`/${A1}/erc20/transfers`, `contract_addresses[0]=${lc(OLD)}&limit=1&order=ASC`)).toEqual(
      mine.filter((t) => t.address === lc(OLD)),
    );
  });

  it('keeps to a block or date range', async () => {
    const all = await chainTransfers();
    const from = started + 1;
    const to = started + 3;
    const inBlocks = all.filter((t) => Number(t.block_number) >= from && Number(t.block_number) <= to && t.address === lc(OLD));
    expect(inBlocks.length).toBeGreaterThan(0);
    expect((await ok(`/erc20/${OLD.address}/transfers`, `from_block=${from}&to_block=${to}&order=ASC`)).result).toEqual(inBlocks);
    const day2 = all.filter((t) => t.address === lc(NEW) && Date.parse(t.block_timestamp) / 1000 >= T0 + 2 * DAY);
    expect((await ok(`/erc20/${NEW.address}/transfers`, `from_date=${T0 + 2 * DAY}&order=ASC`)).result).toEqual(day2);
    const firstDay = all.filter((t) => t.address === lc(NEW) && Date.parse(t.block_timestamp) / 1000 <= T0 + DAY);
    expect(firstDay).toHaveLength(3);
    expect((await ok(`/erc20/${NEW.address}/transfers`, `to_date=${new Date((T0 + DAY) * 1000).toISOString()}&order=ASC`)).result).toEqual(
      firstDay,
    );
  });
});

describe('ERC-20 approvals, allowance, metadata, search', () => {
  it("lists a wallet's live approvals as allowance() says, revoked ones gone", async () => {
    const a0 = await ok(`/wallets/${A0}/approvals`);
    const rows = a0.result.map((r: Json) => [r.token.address, r.spender.address, r.value]);
    const expected = [
      [lc(OLD), S1, '9'],
      [lc(NEW), S2, '100'],
    ].sort((a, b) => (a[0]! < b[0]! ? -1 : 1));
    expect(rows).toEqual(expected);
    for (const [token, spender, value] of expected)
      expect((await read(token === lc(OLD) ? OLD : NEW, 'allowance', [A0, spender])).toString()).toBe(value);
    expect(a0.result.find((r: Json) => r.token.address === lc(OLD))).toMatchObject({
      token: { name: 'Old Token', symbol: 'OLD', current_balance: (await read(OLD, 'balanceOf', [A0])).toString(), usd_at_risk: null },
      value_formatted: formatUnits(9n, 18),
    });
    // K1 approved NEW to S1 and took it back: only its OLD approval is left.
    expect((await ok(`/wallets/${A1}/approvals`)).result.map((r: Json) => [r.token.address, r.spender.address, r.value])).toEqual([
      [lc(OLD), S2, (2n ** 256n - 1n).toString()],
    ]);
    expect(await pages(`/wallets/${A0}/approvals`, 'limit=1')).toEqual(a0.result);
  });

  it('reads an allowance', async () => {
    expect(await ok(`/erc20/${OLD.address}/allowance`, `owner_address=${A0}&spender_address=${S1}`)).toEqual({ allowance: '9' });
    expect(await ok(`/erc20/${OLD.address}/allowance`, `owner_address=${A0}&spender_address=${S2}`)).toEqual({ allowance: '0' });
  });

  it('answers metadata with the supply the chain has and the creation the index saw, as a top-level array', async () => {
    const body = await ok('/erc20/metadata', `addresses[]=${OLD.address}&addresses[]=${NEW.address}`);
    expect(body).toHaveLength(2);
    expect(body[0]).toMatchObject({
      address: lc(OLD),
      name: 'Old Token',
      symbol: 'OLD',
      decimals: '18',
      total_supply: (await read(OLD, 'totalSupply')).toString(),
      total_supply_formatted: '1003',
      block_number: String(OLD.receipt.blockNumber),
      possible_spam: false,
    });
    const created = await publicClient(anvil.url).getBlock({ blockNumber: NEW.receipt.blockNumber });
    expect(body[1]).toMatchObject({
      address: lc(NEW),
      decimals: '6',
      total_supply: (await read(NEW, 'totalSupply')).toString(),
      block_number: String(NEW.receipt.blockNumber),
      created_at: new Date(Number(created.timestamp) * 1000).toISOString(),
    });
    // Every platform of the hosted service's links, each null: the server keeps no off-chain links.
    for (const token of body)
      expect(token.links).toEqual(
        Object.fromEntries(
          [
            'bitbucket',
            'discord',
            'facebook',
            'github',
            'instagram',
            'linkedin',
            'medium',
            'reddit',
            'telegram',
            'tiktok',
            'twitter',
            'website',
            'youtube',
          ].map((p) => [p, null]),
        ),
      );
  });

  it('searches names, symbols and addresses, ranked by holders', async () => {
    const both = await ok('/tokens/search', 'query=token&chains=0x539');
    expect(both.result.map((r: Json) => [r.tokenAddress, r.totalHolders])).toEqual([
      [lc(OLD), 6],
      [lc(NEW), 3],
    ]);
    expect(both.total).toBe(2);
    expect((await ok('/tokens/search', 'query=NE&chains=0x539')).result.map((r: Json) => r.symbol)).toEqual(['NEW']);
    expect((await ok('/tokens/search', `query=${lc(NEW).slice(0, 12)}&chains=0x539`)).result.map((r: Json) => r.name)).toEqual([
      'New Token',
    ]);
    expect((await ok('/tokens/search', 'query=nothing-like-it&chains=0x539')).result).toEqual([]);
  });
});

describe('ERC-20 requests: bad parameters, the SDK, new blocks, a reorg', () => {
  it('answers every bad parameter 400 naming it', async () => {
    const cases: Array<[string, string, string]> = [
      [`/0x12/erc20`, '', 'address'],
      [`/${A1}/erc20`, 'to_block=x', 'to_block'],
      [`/${A1}/erc20`, 'token_addresses[]=0x1', 'token_addresses.0'],
      [`/${A1}/erc20`, 'exclude_spam=maybe', 'exclude_spam'],
      [`/wallets/${A1}/tokens`, 'limit=101', 'limit'],
      [`/wallets/${A1}/tokens`, 'cursor=nope', 'cursor'],
      [`/${A1}/erc20/transfers`, 'order=UP', 'order'],
      [`/${A1}/erc20/transfers`, 'from_date=yesterday', 'from_date'],
      [`/${A1}/erc20/transfers`, 'cursor=abc', 'cursor'],
      [`/erc20/${OLD.address}/transfers`, 'from_block=-1', 'from_block'],
      [`/erc20/0xzz/owners`, '', 'token_address'],
      [`/erc20/${OLD.address}/owners`, 'limit=1000', 'limit'],
      [`/erc20/0x1/holders`, '', 'tokenAddress'],
      [`/erc20/${OLD.address}/holders/historical`, 'toDate=2026-01-01', 'fromDate'],
      [`/erc20/${OLD.address}/holders/historical`, 'fromDate=2026-01-01&toDate=2026-01-02&timeFrame=2d', 'timeFrame'],
      [`/erc20/${OLD.address}/holders/historical`, 'fromDate=2026-01-02&toDate=2026-01-01', 'toDate'],
      ['/erc20/metadata', '', 'addresses'],
      ['/erc20/metadata', `addresses[]=${A1}`.repeat(1) + Array.from({ length: 10 }, () => `&addresses[]=${A1}`).join(''), 'addresses'],
      [`/wallets/${A1}/approvals`, 'limit=x', 'limit'],
      [`/erc20/${OLD.address}/allowance`, `owner_address=${A0}`, 'spender_address'],
      ['/tokens/search', 'chains=0x539', 'query'],
      ['/tokens/search', 'query=a&chains=0x1', 'chains'],
    ];
    for (const [path, query, field] of cases) {
      const r = await api(path, query);
      expect(r.status, `${path}?${query}: ${JSON.stringify(r.body)}`).toBe(400);
      expect(r.body.details?.field ?? r.body.message, `${path}?${query}`).toBe(field);
    }
    // A chain this server does not follow.
    const r = await s.call(`/api/v2.2/${A1}/erc20?chain=0x1`);
    expect(r.status).toBe(400);
    expect(r.body.message).toMatch(/^chain: /);
  });

  it("answers the official SDK's ERC-20 calls with what the chain holds", async () => {
    const Moralis = await moralisFor(s.url, s.key);
    // The SDK's wallets group asks with a path alone (its V3 resolver drops evmApiBaseUrl): this server's base goes in front.
    // Taken out after the test: a later file in the same process (the shared project) has a server of its own.
    const { interceptors } = require('axios');
    const prefix = interceptors.request.use((c: { url?: string }) => {
      if (c.url?.startsWith('/')) c.url = `${s.url}/api/v2.2${c.url}`;
      return c;
    });
    onTestFinished(() => interceptors.request.eject(prefix));
    const balances = await Moralis.EvmApi.token.getWalletTokenBalances({ chain: '0x539', address: A1 });
    expect(balances.raw.map((b: Json) => [b.token_address, b.balance])).toEqual(await chainBalances(A1));
    const only = await Moralis.EvmApi.token.getWalletTokenBalances({
      chain: '0x539',
      address: A1,
      tokenAddresses: [NEW.address, OLD.address],
    });
    expect(only.raw).toEqual(balances.raw);
    const priced = await Moralis.EvmApi.wallets.getWalletTokenBalancesPrice({ chain: '0x539', address: A1 });
    expect(priced.json.result.map((b: Json) => b.balance)).toEqual([
      (await publicClient(anvil.url).getBalance({ address: A1 })).toString(),
      ...(await chainBalances(A1)).map(([, b]) => b),
    ]);
    const all = await chainTransfers();
    const mine = await Moralis.EvmApi.token.getWalletTokenTransfers({ chain: '0x539', address: A1 });
    expect(mine.raw.result).toEqual(all.filter((t) => t.from_address === A1 || t.to_address === A1).reverse());
    const ofNew = await Moralis.EvmApi.token.getTokenTransfers({ chain: '0x539', address: NEW.address, limit: 2 });
    expect(ofNew.raw.result).toEqual(
      all
        .filter((t) => t.address === lc(NEW))
        .reverse()
        .slice(0, 2),
    );
    const next = await ofNew.next();
    expect(next.raw.result).toEqual(
      all
        .filter((t) => t.address === lc(NEW))
        .reverse()
        .slice(2, 4),
    );
    const owners = await Moralis.EvmApi.token.getTokenOwners({ chain: '0x539', tokenAddress: NEW.address });
    expect(owners.json.result.map((o: Json) => [o.owner_address, o.balance])).toEqual(await chainHolders(NEW, EVERYONE));
    const meta = await Moralis.EvmApi.token.getTokenMetadata({ chain: '0x539', addresses: [NEW.address, OLD.address] });
    expect(meta.raw.map((m: Json) => [m.symbol, m.total_supply])).toEqual([
      ['NEW', (await read(NEW, 'totalSupply')).toString()],
      ['OLD', (await read(OLD, 'totalSupply')).toString()],
    ]);
    const allowance = await Moralis.EvmApi.token.getTokenAllowance({
      chain: '0x539',
      address: OLD.address,
      ownerAddress: A0,
      spenderAddress: S1,
    });
    expect(allowance.raw).toEqual({ allowance: '9' });
  });

  it('keeps a cursor valid while blocks arrive: DESC goes on below its page, ASC reaches the new transfers', async () => {
    const first = await ok(`/${A2}/erc20/transfers`, 'limit=2');
    const asc = await ok(`/${A2}/erc20/transfers`, 'limit=2&order=ASC');
    await send(NEW, 'transfer', [X2, 1n], K2);
    await send(OLD, 'transfer', [X2, 1n], K2);
    await indexed();
    const all = (await chainTransfers()).filter((t) => t.from_address === A2 || t.to_address === A2);
    const rest: Json[] = [];
    let cursor: string | null = first.cursor;
    while (cursor !== null) {
      const body = await ok(`/${A2}/erc20/transfers`, `limit=2&cursor=${cursor}`);
      rest.push(...body.result);
      cursor = body.cursor;
    }
    expect([...first.result, ...rest]).toEqual(all.slice(0, -2).reverse());
    const more: Json[] = [...asc.result];
    cursor = asc.cursor;
    while (cursor !== null) {
      const body = await ok(`/${A2}/erc20/transfers`, `limit=2&order=ASC&cursor=${cursor}`);
      more.push(...body.result);
      cursor = body.cursor;
    }
    expect(more).toEqual(all);
  });

  it('takes back what blocks that left the chain wrote: balances, holders, counts, transfers, approvals', async () => {
    const before = {
      owners: await ok(`/erc20/${NEW.address}/owners`),
      holders: await ok(`/erc20/${NEW.address}/holders`),
      a1: await ok(`/${A1}/erc20`),
      approvals: await ok(`/wallets/${A0}/approvals`),
    };
    const snapshot = await rpc<string>('evm_snapshot', []);
    await send(NEW, 'transfer', [X4, 7n]);
    await send(OLD, 'transfer', [X4, 5n], K1);
    await send(NEW, 'approve', [S2, 0n]);
    await indexed();
    expect((await ok(`/${X4}/erc20`)).map((b: Json) => b.balance)).toHaveLength(2);
    expect((await ok(`/erc20/${NEW.address}/holders`)).totalHolders).toBe(before.holders.totalHolders + 1);
    await rpc('evm_revert', [snapshot]);
    // A longer chain without those transfers.
    await send(NEW, 'transfer', [X5, 1n]);
    await rpc('anvil_mine', ['0x3']);
    await indexed();
    expect(await until(async () => (await ok(`/${X4}/erc20`)).length === 0, 10_000, 50)).toBe(true);
    expect(await ok(`/${X5}/erc20`)).toEqual([expect.objectContaining({ token_address: lc(NEW), balance: '1' })]);
    expect((await ok(`/erc20/${NEW.address}/owners`)).result.map((o: Json) => [o.owner_address, o.balance])).toEqual(
      await chainHolders(NEW, EVERYONE),
    );
    expect((await ok(`/erc20/${NEW.address}/holders`)).totalHolders).toBe(before.holders.totalHolders + 1);
    expect(await ok(`/${A1}/erc20`)).toEqual(before.a1);
    // The approval of 0 left with its block: NEW's approval to S2 is back.
    const approvals = (body: Json) =>
      body.result.map((r: Json) => [r.token.address, r.spender.address, r.value, r.block_number, r.transaction_hash]);
    expect(approvals(await ok(`/wallets/${A0}/approvals`))).toEqual(approvals(before.approvals));
    expect(approvals(before.approvals)).toContainEqual([lc(NEW), S2, '100', expect.any(String), expect.any(String)]);
    const all = await chainTransfers();
    expect((await ok(`/erc20/${OLD.address}/transfers`)).result).toEqual(all.filter((t) => t.address === lc(OLD)).reverse());
    expect((await ok(`/${X4}/erc20/transfers`)).result).toEqual([]);
  });

  it('answers GET /erc20/:tokenAddress/holders/historical 404 from 2026-07-31', async () => {
    await advance(s, 2 * DAY);
    const r = await api(`/erc20/${NEW.address}/holders/historical`, 'fromDate=2026-01-01&toDate=2026-01-02&timeFrame=1d');
    expect(r.status).toBe(404);
    expect(r.body.message).toMatch(/removed on 2026-07-31/);
  });
});

describe('a token asked about before its contract exists', () => {
  it('answers its metadata once the contract is deployed at that address and moves tokens, the read made before it had code not kept', async () => {
    // A fresh deployer: its first contract's address is known before it is deployed.
    const deployer = privateKeyToAccount(generatePrivateKey());
    await (await walletClient(anvil.url)).sendTransaction({ to: deployer.address, value: parseUnits('1', 18) });
    const late = getContractAddress({ from: deployer.address, nonce: 0n });
    await indexed();
    expect(await ok('/erc20/metadata', `addresses=${late}`)).toMatchObject([
      { address: late.toLowerCase(), name: '', symbol: '', decimals: '0' },
    ]);
    const token = await deploy(anvil.url, 'TestToken', ['Late Token', 'LATE', 6, parseUnits('1000', 6)], deployer);
    expect(token.address).toBe(late);
    await send(token, 'transfer', [X(0x5e), parseUnits('2.5', 6)], deployer);
    await indexed();
    expect(await ok('/erc20/metadata', `addresses=${late}`)).toMatchObject([
      { address: late.toLowerCase(), name: 'Late Token', symbol: 'LATE', decimals: '6', total_supply_formatted: '1000' },
    ]);
    expect((await ok(`/${X(0x5e)}/erc20`)).find((b: Json) => b.token_address === late.toLowerCase())).toMatchObject({
      name: 'Late Token',
      decimals: 6,
      balance: parseUnits('2.5', 6).toString(),
    });
  });
});
