import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatUnits, parseUnits, toFunctionSelector, type Hex } from 'viem';
import { ServiceClock } from '../engine/clock.js';
import type { DataDeps } from '../engine/data-api/common/deps.js';
import { walletErc20, walletErc20Query } from '../engine/data-api/erc20/balances.js';
import { holdersQuery, ownersQuery, tokenHolders, tokenOwners } from '../engine/data-api/erc20/holders.js';
import { erc20TransferAt } from '../engine/data-api/erc20/index/log.js';
import { tokenMetadata } from '../engine/data-api/erc20/tokens.js';
import { tokenTransfers, tokenTransfersQuery, walletTransfers, walletTransfersQuery } from '../engine/data-api/erc20/transfers.js';
import { DataIndexer } from '../engine/data-api/common/indexer.js';
import { withIndexer } from '../engine/data-api/common/with-indexer.js';
import { dataIndexes } from '../engine/data-api/indexes.js';
import { chainReads } from '../engine/evm/chain-reads.js';
import { EvmFollower } from '../engine/evm/follower.js';
import { TokenMetadata } from '../engine/evm/token-metadata.js';
import { systemTicker } from '../app/process.js';
import { startAnvil, type Anvil } from '../http/clients/anvil.js';
import { jsonRpcUpstream } from '../http/clients/rpc.js';
import { openStore, type Store } from '../storage/env.js';
import { workerPool } from '../app/worker-pool.js';
import { DEV_ACCOUNTS, deploy, publicClient, write, type Deployed } from './contracts.js';
import { counting } from './kit/counting-kv.js';
import { tempDir } from './helpers.js';
import { quietLog } from './kit/quiet-log.js';

/**
 * The ERC-20 indexes started at a block after a token's creation, when the
 * token already has holders: the real follower stores anvil's blocks in a real
 * LMDB, and the real indexer builds from the start block on (the server will
 * take that block from CHAINPOST_START_BLOCKS; until then the indexer's
 * `startBlock` option is set here). Each pair's first balance comes from
 * balanceOf at the block before its first transfer, read once; the supply
 * likewise; the holder list says `partial`. Answers are the endpoints' own
 * functions, compared with balanceOf and totalSupply on the chain.
 */

const CHAIN = '0x539';
const [K0, K1, K2] = DEV_ACCOUNTS;
const [A0, A1, A2] = DEV_ACCOUNTS.map((a) => a.address.toLowerCase() as Hex) as [Hex, Hex, Hex];
const X = (n: number): Hex => `0x${n.toString(16).padStart(40, '0')}` as Hex;
const [X1, X3, X4] = [X(0xa1), X(0xa3), X(0xa4)];
const BALANCE_OF = toFunctionSelector('balanceOf(address)');
const TOTAL_SUPPLY = toFunctionSelector('totalSupply()');

const pool = workerPool(tempDir(), 2);
let anvil: Anvil;
let rpc: ReturnType<typeof jsonRpcUpstream>;
let store: Store;
let dir: string;
let follower: EvmFollower;
let indexer: DataIndexer;
let deps: DataDeps;
let OLD: Deployed;
let startBlock: number;
/** The node reads the indexes made: [selector, block] of each eth_call. */
const calls: Array<[string, number | 'latest']> = [];

const send = (c: Deployed, functionName: string, args: readonly unknown[], account = K0) =>
  write(anvil.url, { address: c.address, abi: c.abi, functionName, args, account });
const read = (functionName: string, args: readonly unknown[] = []) =>
  publicClient(anvil.url).readContract({ address: OLD.address, abi: OLD.abi, functionName, args }) as Promise<bigint>;
const lc = (): string => OLD.address.toLowerCase();

/** Stores anvil's new blocks and indexes them. */
async function caughtUp(): Promise<void> {
  await follower.sync();
  const head = Number(await publicClient(anvil.url).getBlockNumber());
  expect(await indexer.reached(CHAIN, head, 10_000)).toBe(true);
}

async function chainHolders(wallets: readonly string[]): Promise<Array<[string, string]>> {
  const rows = await Promise.all(wallets.map(async (w) => [w, await read('balanceOf', [w])] as const));
  return rows
    .filter(([, b]) => b > 0n)
    .sort((a, b) => (a[1] > b[1] ? -1 : 1))
    .map(([w, b]) => [w, b.toString()]);
}
const owners = async () => tokenOwners(deps, CHAIN, ownersQuery.parse({ token_address: lc() }));
const balances = async (wallet: string) =>
  (await walletErc20(deps, CHAIN, walletErc20Query.parse({ address: wallet }), [])).map((b) => [b.token_address, b.balance]);

beforeAll(async () => {
  anvil = await startAnvil({ chainId: 1337 });
  rpc = jsonRpcUpstream(anvil.url);
  dir = tempDir();
  store = openStore(dir);
  const clock = new ServiceClock(systemTicker, Date.now());
  const log = quietLog(() => clock.now());
  const base = chainReads(() => rpc);
  const reads = {
    ...base,
    call: (chain: string, to: string, data: Hex, block: number | 'latest', from?: string) => (
      calls.push([data.slice(0, 10), block]), base.call(chain, to, data, block, from)
    ),
  };
  const tokens = new TokenMetadata(store, reads.call);
  // OLD and its holders before the start block.
  OLD = await deploy(anvil.url, 'TestToken', ['Old Token', 'OLD', 18, parseUnits('1000', 18)]);
  await send(OLD, 'transfer', [A1, parseUnits('100', 18)]);
  await send(OLD, 'transfer', [A2, parseUnits('50', 18)]);
  await send(OLD, 'transfer', [X1, parseUnits('5', 18)]);
  startBlock = Number(await publicClient(anvil.url).getBlockNumber()) + 1;
  indexer = new DataIndexer(store, dataIndexes({ reads, tokens }), clock, log, { startBlock: () => startBlock });
  const quiet = { seen: () => {}, confirmed: () => {}, reorged: () => {} };
  follower = new EvmFollower(CHAIN, rpc, store, clock, withIndexer(quiet, indexer), log, {
    confirmations: 2,
    pollMs: 50,
    pool: pool.ingest,
  });
  deps = { kv: store, tokens, reads, indexer, follower: () => follower.status() };
  // After the start: moves among holders from before it, a new holder, a mint.
  await send(OLD, 'transfer', [X3, parseUnits('40', 18)], K1);
  await send(OLD, 'transfer', [A1, parseUnits('50', 18)], K2);
  await send(OLD, 'transfer', [A2, parseUnits('1', 18)]);
  await send(OLD, 'mint', [X3, parseUnits('3', 18)]);
  await caughtUp();
}, 60_000);

afterAll(async () => {
  indexer?.stop();
  follower?.stop();
  await indexer?.settled();
  await rpc?.close();
  await anvil?.stop();
  await store?.close();
  await pool.close();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe('ERC-20 indexes from a start block after the token was created', () => {
  it('reads each pair once with balanceOf at the block before its first transfer, and the supply once', async () => {
    const reads = calls.filter(([selector]) => selector === BALANCE_OF || selector === TOTAL_SUPPLY);
    // A1 and X3 first move at startBlock, A2 at startBlock + 1, A0 at startBlock + 2; the supply before the first.
    expect(reads.sort()).toEqual(
      [
        [TOTAL_SUPPLY, startBlock - 1],
        [BALANCE_OF, startBlock - 1],
        [BALANCE_OF, startBlock - 1],
        [BALANCE_OF, startBlock],
        [BALANCE_OF, startBlock + 1],
      ].sort(),
    );
    for (const wallet of [A0, A1, A2, X3])
      expect(await balances(wallet), wallet).toEqual([[lc(), (await read('balanceOf', [wallet])).toString()]]);
    // X1 held OLD before the start and never moved it since: the index does not know it.
    expect(await balances(X1)).toEqual([]);
  });

  it('says partial, and lists the holders it saw with their balances and count', async () => {
    const body = await owners();
    expect(body.partial).toBe(true);
    expect(body.result.map((o) => [o.owner_address, o.balance])).toEqual(await chainHolders([A0, A1, A2, X3]));
    const holders = await tokenHolders(deps, CHAIN, holdersQuery.parse({ tokenAddress: lc() }));
    expect(holders).toMatchObject({ partial: true, totalHolders: 4 });
  });

  it('keeps the supply as read plus mints and burns, and no creation block', async () => {
    const [meta] = await tokenMetadata(deps, CHAIN, [lc()]);
    expect(meta).toMatchObject({
      total_supply: (await read('totalSupply')).toString(),
      total_supply_formatted: '1003',
      block_number: null,
      created_at: null,
    });
  });

  it('moves known pairs without asking the node again', async () => {
    const before = calls.length;
    await send(OLD, 'transfer', [A2, 7n], K1);
    await send(OLD, 'transfer', [X3, 9n], K2);
    await caughtUp();
    expect(calls.slice(before).filter(([selector]) => selector === BALANCE_OF || selector === TOTAL_SUPPLY)).toEqual([]);
    for (const wallet of [A1, A2, X3]) expect(await balances(wallet)).toEqual([[lc(), (await read('balanceOf', [wallet])).toString()]]);
  });

  it('takes back a pair first read in blocks that left the chain, and reads it again when it reappears', async () => {
    const snapshot = await rpc.call<string>('evm_snapshot', []);
    await send(OLD, 'transfer', [X4, 5n], K1);
    await caughtUp();
    expect(await balances(X4)).toEqual([[lc(), '5']]);
    await rpc.call('evm_revert', [snapshot]);
    await send(OLD, 'transfer', [X4, 2n], K2);
    await rpc.call('anvil_mine', ['0x2']);
    await caughtUp();
    expect(await balances(X4)).toEqual([[lc(), '2']]);
    for (const wallet of [A1, A2]) expect(await balances(wallet)).toEqual([[lc(), (await read('balanceOf', [wallet])).toString()]]);
    expect((await owners()).result.map((o) => [o.owner_address, o.balance])).toEqual(await chainHolders([A0, A1, A2, X3, X4]));
    expect((await tokenHolders(deps, CHAIN, holdersQuery.parse({ tokenAddress: lc() }))).totalHolders).toBe(5);
  });

  it('reads a page of transfers touching limit + 2 index entries (and a few rows per transfer), however long the history', async () => {
    for (let i = 0; i < 24; i++) await send(OLD, 'transfer', [A1, 1n]);
    await caughtUp();
    const c = counting(store);
    const counted: DataDeps = { ...deps, kv: c.kv };
    for (const [name, run] of [
      [
        'wallet',
        (cursor?: string) =>
          walletTransfers(
            counted,
            CHAIN,
            walletTransfersQuery.parse({ address: A0, limit: '5', ...(cursor === undefined ? {} : { cursor }) }),
            [],
          ),
      ],
      [
        'token',
        (cursor?: string) =>
          tokenTransfers(
            counted,
            CHAIN,
            tokenTransfersQuery.parse({ address: lc(), limit: '5', order: 'ASC', ...(cursor === undefined ? {} : { cursor }) }),
          ),
      ],
    ] as const) {
      let cursor: string | undefined;
      let rows = 0;
      do {
        c.reset();
        const page = await run(cursor);
        // limit + 2 range entries; per transfer its log's row (at the entry's place), its block's hash (canon) and
        // time (blockTimes); the chain's state, the token's row (and the indexes' start).
        expect(c.ranges(), name).toBeLessThanOrEqual(5 + 2);
        expect(c.points(), name).toBeLessThanOrEqual(3 * 5 + 3);
        rows += page.result.length;
        cursor = page.cursor ?? undefined;
      } while (cursor !== undefined);
      expect(rows, name).toBeGreaterThanOrEqual(25);
    }
  });

  it("lists the token's transfers from the start block on: each Transfer log anvil has from there, none before", async () => {
    const TRANSFER = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';
    const logs = await rpc.call<Array<Record<string, string>>>('eth_getLogs', [
      { address: OLD.address, fromBlock: '0x0', toBlock: 'latest', topics: [TRANSFER] },
    ]);
    const place = (n: string | number, li: string | number) => `${Number(n)}/${Number(li)}`;
    expect(logs.some((l) => Number(l['blockNumber']) < startBlock)).toBe(true);
    const listed = await tokenTransfers(deps, CHAIN, tokenTransfersQuery.parse({ address: lc(), limit: '100', order: 'ASC' }));
    expect(listed.cursor).toBeNull();
    expect(listed.result.map((t) => [place(t.block_number, t.log_index), t.transaction_hash])).toEqual(
      logs
        .filter((l) => Number(l['blockNumber']) >= startBlock)
        .map((l) => [place(l['blockNumber']!, l['logIndex']!), l['transactionHash']]),
    );
  });

  it('gives each transfer its value in the token units, and value_decimal null for a token without decimals()', async () => {
    const q = tokenTransfersQuery.parse({ address: lc(), limit: '5', order: 'ASC' });
    const listed = await tokenTransfers(deps, CHAIN, q);
    expect(listed.result.length).toBeGreaterThan(0);
    for (const t of listed.result) expect(t.value_decimal).toBe(formatUnits(BigInt(t.value), 18));
    // The same token, its metadata read as a contract without decimals() answers it: token_decimals "0", value_decimal null.
    const tokens = { get: async (chain: string, address: string) => ({ ...(await deps.tokens.get(chain, address)), decimals: null }) };
    const without = await tokenTransfers({ ...deps, tokens: tokens as unknown as DataDeps['tokens'] }, CHAIN, q);
    expect(without.result.map((t) => [t.value, t.token_decimals, t.value_decimal])).toEqual(listed.result.map((t) => [t.value, '0', null]));
  });

  it("reads a wallet's transfers as a version-3 store holds them (each entry the whole transfer), with its token filter", async () => {
    const query = (contracts: string[]) =>
      walletTransfers(deps, CHAIN, walletTransfersQuery.parse({ address: A0, limit: '100' }), contracts);
    const now = await query([]);
    const filtered = await query([lc()]);
    expect(now.result.length).toBeGreaterThan(3);
    expect(filtered.result.length).toBeGreaterThan(0);
    const prefix = `${CHAIN}/${A0}/`;
    const entries = store.range<string>('erc20Wallet', { start: prefix, end: `${prefix}\uffff` });
    const rowOf = (key: string, token: string) => {
      const [n, li] = key.slice(prefix.length).split('/') as [string, string];
      return erc20TransferAt(store, CHAIN, token, parseInt(n, 16), parseInt(li, 16));
    };
    try {
      store.transact(() => {
        for (const { key, value } of entries) store.put('erc20Wallet', key, rowOf(key, value));
      });
      expect(await query([])).toEqual(now);
      expect(await query([lc()])).toEqual(filtered);
    } finally {
      store.transact(() => {
        for (const { key, value } of entries) store.put('erc20Wallet', key, value);
      });
    }
  });
});
