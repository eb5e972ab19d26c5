import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEther, type Hex } from 'viem';
import { ENDPOINT_REMOVALS, inEffect, type EndpointRemoval } from '../engine/chains/removals.js';
import { DEV_ACCOUNTS, deploy, mined, publicClient, walletClient, write, type Deployed } from './contracts.js';
import { addV2Liquidity, transferToken, v2RouterSwapExactIn } from './dex.js';
import { deployEns } from './ens.js';
import { errorAt, hostedOperations, hostedValidators, meaningful, type OpenApiOperation } from './hosted-openapi.js';
import { startPricedDevnet, type PricedDevnet } from './priced-devnet.js';
import { A1, A2 } from './streams-harness.js';

/**
 * The hosted service's own description of the Data API v2.2 (test/hosted-openapi.ts), walked operation by operation
 * against a devnet server holding ERC-20, NFT, native and DEX activity (the priced devnet of test/priced-devnet.ts,
 * a minimal ENS, an ERC-721 sold on a market and an ERC-1155): each operation's path and required parameters filled
 * with that devnet's values. No operation the interface keeps answers "no route" or a 5xx (501 only where the data
 * is off chain and the answer says so); removed ones answer their removal status; every 2xx body validates against
 * the hosted response schema, null allowed where a value is absent, but for the interface's deliberate differences
 * listed below (DIFFERENCES).
 */

const [, K1, K2] = DEV_ACCOUNTS;
const CHAIN = '0x539';
/** The V2 factory's name in the devnet's pricing entry. */
const EXCHANGE = 'Uniswap v2';

/** Operations that rest on data or services this server does not have: 501, saying so (docs/api.md, "Not served"). */
const OFF_CHAIN_501 = new Set<string>([
  'reviewContracts',
  // Labels of people and companies: an off-chain dataset.
  'searchEntities',
  'getEntity',
  'getEntityCategories',
  'getEntitiesByCategory',
]);

/**
 * The interface's deliberate differences from the hosted response schemas (docs/api.md, "Where the answers differ from
 * the hosted document"): each error of a 2xx body of `operation` at `field` (the instance path, items as `*`; a
 * missing property's path) is excepted, for the reason given.
 */
const DIFFERENCES: ReadonlyArray<{ operation: string; field: string; why: string }> = [
  // The NFT transfer record of the interface: "All values are strings unless noted", its boolean flags "carried as
  // strings" (docs/api.md, NFT transfers); the hosted document types these integer and boolean.
  ...['getWalletNFTTransfers', 'getNFTContractTransfers', 'getNFTTransfers'].flatMap((operation) =>
    ['transaction_index', 'log_index', 'possible_spam', 'verified_collection'].map((f) => ({
      operation,
      field: `/result/*/${f}`,
      why: 'the interface’s NFT transfer record carries its values as strings',
    })),
  ),
  // An attribute's value as the token's metadata gives it (a string or a number); the document types it `object`,
  // though its own example is the string "hazel".
  ...[
    ['getWalletNFTs', '/result/*'],
    ['getMultipleNFTs', '/*'],
    ['getContractNFTs', '/result/*'],
    ['getNFTMetadata', ''],
  ].map(([operation, at]) => ({
    operation: operation!,
    field: `${at}/normalized_metadata/attributes/*/value`,
    why: 'an attribute value is kept as the metadata has it; the document says object, its example is a string',
  })),
  {
    operation: 'getWalletTokenBalancesPrice',
    field: '/result/*/use_value_24hr_usd_change',
    why: 'the document’s required list misspells usd_value_24hr_usd_change, which the item carries as its properties name it',
  },
  {
    operation: 'getTokenPairs',
    field: '/result',
    why: 'the document requires `result` but describes the list as `pairs`: the answer has `pairs`, as described',
  },
];

/** A difference's key: its operation and field. */
const keyOf = (x: { operation: string; field: string }): string => `${x.operation} ${x.field}`;

let net: PricedDevnet;
let nft: Deployed;
let multi: Deployed;
/** A transaction of the wallet (A1): its swap through the router, with ERC-20 transfers and logs. */
let swapTx: Hex;
let swapBlock: number;
/** The first block's time (ISO): ranges from it cover the devnet's activity. */
let firstIso: string;

const json64 = (doc: unknown): string => `data:application/json;base64,${Buffer.from(JSON.stringify(doc)).toString('base64')}`;

beforeAll(async () => {
  // Factories named as Uniswap's, so the DeFi adapters read the wallet's liquidity.
  net = await startPricedDevnet(
    async (anvil) => {
      const ens = await deployEns(anvil.url);
      await ens.register('alice', A1);
      await ens.nameSelf(K1, 'alice.eth');
      return { CHAINPOST_ENS: `${CHAIN}=${ens.registry.address}` };
    },
    { exchanges: { v2: EXCHANGE, v3: 'Uniswap v3' } },
  );
  const { anvil, dex } = net;
  const { usdc, weth, tka } = dex.tokens;
  // The wallet A1: ether and tokens from the deployer, liquidity in WETH/USDC, a swap of its own, a transfer and an
  // approval to A2.
  await (await walletClient(anvil.url)).sendTransaction({ to: A1, value: parseEther('2') }).then((h) => mined(anvil.url, h));
  await transferToken(anvil.url, usdc.address, A1, net.units('5000', usdc));
  await transferToken(anvil.url, weth.address, A1, net.units('1', weth));
  await transferToken(anvil.url, tka.address, A1, net.units('100', tka));
  const wethFirst = net.wethUsdc.token0.toLowerCase() === weth.address.toLowerCase();
  const [w, u] = [net.units('0.5', weth), net.units('1000', usdc)];
  await addV2Liquidity(anvil.url, net.wethUsdc, wethFirst ? w : u, wethFirst ? u : w, { account: K1 });
  const swap = await v2RouterSwapExactIn(anvil.url, dex, [usdc.address, weth.address, tka.address], net.units('1000', usdc), {
    account: K1,
  });
  swapTx = swap.receipt.transactionHash;
  swapBlock = Number(swap.receipt.blockNumber);
  // Some of the TKA back to WETH: a realized profit or loss (the token's top gainers).
  await v2RouterSwapExactIn(anvil.url, dex, [tka.address, weth.address], net.units('50', tka), { account: K1 });
  await transferToken(anvil.url, tka.address, A2, net.units('7', tka), K1);
  await write(anvil.url, { address: tka.address, abi: tka.abi, functionName: 'approve', args: [A2, net.units('3', tka)], account: K1 });
  await (await walletClient(anvil.url, K1)).sendTransaction({ to: A2, value: parseEther('0.25') }).then((h) => mined(anvil.url, h));
  // NFTs: three ERC-721s of A1 (one with traits in its metadata), one sold to A2 on a market for ether; an ERC-1155 of A1.
  nft = await deploy(anvil.url, 'TestNFT', ['Walk NFT', 'WALK']);
  multi = await deploy(anvil.url, 'TestMulti');
  const market = await deploy(anvil.url, 'TestMarket');
  const nftWrite = (functionName: string, args: readonly unknown[], account = DEV_ACCOUNTS[0]) =>
    write(anvil.url, { address: nft.address, abi: nft.abi, functionName, args, account });
  for (const id of [1n, 2n, 3n]) await nftWrite('mint', [A1, id]);
  await nftWrite('setTokenURI', [1n, json64({ name: 'One', attributes: [{ trait_type: 'colour', value: 'red' }] })]);
  await nftWrite('setTokenURI', [2n, json64({ name: 'Two', attributes: [{ trait_type: 'colour', value: 'blue' }] })]);
  await nftWrite('setApprovalForAll', [market.address, true], K1);
  await write(anvil.url, {
    address: market.address,
    abi: market.abi,
    functionName: 'buy',
    args: [nft.address, 2n, A1],
    account: K2,
    value: parseEther('0.5'),
  });
  await write(anvil.url, { address: multi.address, abi: multi.abi, functionName: 'mint', args: [A1, 7n, 5n] });
  const first = await publicClient(anvil.url).getBlock({ blockNumber: 1n });
  firstIso = new Date(Number(first.timestamp) * 1000).toISOString();
  await net.indexed();
}, 90_000);

afterAll(async () => {
  await net?.stop();
});

/** A path parameter's value on the devnet, by its name and the operation's path. */
function pathValue(name: string, path: string): string {
  const { usdc, weth, tka } = net.dex.tokens;
  switch (name) {
    case 'address':
      if (path.startsWith('/nft/')) return nft.address;
      if (path.startsWith('/erc20/') || path === '/{address}/function') return tka.address;
      if (path.startsWith('/pairs/')) return net.wethUsdc.address;
      return A1;
    case 'token_address':
    case 'tokenAddress':
      return tka.address;
    case 'token0_address':
      return weth.address;
    case 'token1_address':
      return usdc.address;
    case 'pair_address':
      return net.wethUsdc.address;
    case 'token_id':
      return '2';
    case 'transaction_hash':
      return swapTx;
    case 'block_number_or_hash':
      return String(swapBlock);
    case 'chain':
      return CHAIN;
    case 'domain':
      return 'alice.eth';
    case 'protocol':
      return 'uniswap-v2';
    case 'exchangeName':
      return EXCHANGE;
    default:
      // An entity's or a category's id: the entities are off chain (501 whatever the id).
      return 'x';
  }
}

/** A required query parameter's values on the devnet. */
function queryValues(name: string, operation: string): string[] {
  const { usdc, tka } = net.dex.tokens;
  const later = new Date(Date.now() + 86_400_000).toISOString();
  const values: Record<string, string[]> = {
    addresses: [tka.address, usdc.address],
    symbols: ['TKA'],
    wallet_addresses: [A1, A2],
    date: [firstIso],
    function_name: ['balanceOf'],
    exchange: [EXCHANGE],
    fromDate: [firstIso],
    toDate: [later],
    timeFrame: ['1d'],
    timeframe: [operation === 'getPairCandlesticks' ? '1h' : '1d'],
    currency: ['usd'],
    interval: ['7d'],
    query: ['token'],
    token_address: [tka.address],
  };
  return values[name] ?? ['x'];
}

/** Query parameters this server needs beyond the hosted document's required ones. */
const EXTRA_QUERY: Record<string, Record<string, string>> = {
  searchTokens: { query: 'token' },
};

/** Request bodies, by operation. */
function bodyOf(operation: string): unknown {
  const { usdc, tka } = net.dex.tokens;
  switch (operation) {
    case 'getMultipleNFTs':
      return { tokens: [{ token_address: nft.address, token_id: '1' }] };
    case 'getNFTByContractTraits':
      return { traits: { colour: 'red' } };
    case 'getNFTBulkContractMetadata':
      return { addresses: [nft.address, multi.address] };
    case 'getMultipleTokenPrices':
      return { tokens: [{ token_address: tka.address }, { token_address: usdc.address }] };
    case 'runContractFunction':
      return {
        abi: [
          {
            type: 'function',
            name: 'balanceOf',
            stateMutability: 'view',
            inputs: [{ name: 'owner', type: 'address' }],
            outputs: [{ name: '', type: 'uint256' }],
          },
        ],
        params: { owner: A1 },
      };
    case 'reviewContracts':
      return { contracts: [{ contract_address: tka.address, reason: 'spam', report_type: 'spam', contract_type: 'ERC20' }] };
    case 'getMultipleTokenAnalytics':
    case 'getTimeSeriesTokenAnalytics':
      return { tokens: [{ chain: CHAIN, tokenAddress: tka.address }] };
    default:
      return {};
  }
}

/** The operation's request on the devnet: its path filled, `chain` and its required query parameters, its body. */
function requestOf(method: string, path: string, op: OpenApiOperation): { url: string; init: RequestInit & { json?: unknown } } {
  const filled = path.replace(/\{([^}]+)\}/g, (_, name: string) => encodeURIComponent(pathValue(name, path)));
  const query = new URLSearchParams({ chain: CHAIN });
  for (const p of op.parameters ?? []) {
    if (p.in !== 'query' || p.required !== true || p.name === 'chain') continue;
    const array = p.schema?.['type'] === 'array';
    for (const v of queryValues(p.name, op.operationId)) query.append(array ? `${p.name}[]` : p.name, v);
  }
  for (const [k, v] of Object.entries(EXTRA_QUERY[op.operationId] ?? {})) query.set(k, v);
  const init = op.requestBody === undefined ? { method } : { method, json: bodyOf(op.operationId) };
  return { url: `/api/v2.2${filled}?${query}`, init };
}

/** A route pattern with its parameters' names left out: the removal table and the document name them differently. */
const shape = (path: string): string => path.replace(/\{[^}]+\}/g, ':').replace(/:[A-Za-z_]+/g, ':');

/** The removal in effect now of the operation, if any (engine/chains/removals.ts). */
function removalOf(method: string, path: string): EndpointRemoval | undefined {
  const now = Date.now();
  return ENDPOINT_REMOVALS.find(
    (r) =>
      inEffect(r, now) &&
      (r.method === 'ANY' || r.method === method) &&
      (r.path.endsWith('*') ? path.startsWith(r.path.slice(0, -1)) : shape(r.path) === shape(path)),
  );
}

const noRoute = (r: { status: number; body: any }): boolean => r.status === 404 && /^no route /.test(String(r.body?.message));

describe('the hosted Data API document, walked operation by operation on a devnet', () => {
  it('answers every kept operation (no "no route", no 5xx), removed ones with their removal status, 2xx bodies as the hosted schemas say', async () => {
    const validatorOf = hostedValidators();
    const counts = { operations: 0, ok: 0, removed: 0, notHere: 0, matching: 0, matchingWithDifferences: 0 };
    const failures: string[] = [];
    const excepted = new Set<string>();
    for (const { method, path, op } of hostedOperations()) {
      counts.operations++;
      const name = `${method} ${path} (${op.operationId})`;
      const { url, init } = requestOf(method, path, op);
      const r = await net.s.call(url, init).catch((err: Error) => ({ status: -1, body: { message: err.message } }));
      const said = `${name} → ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`;
      const removal = removalOf(method, path);
      if (removal !== undefined) {
        counts.removed++;
        if (r.status !== removal.status || !String(r.body?.message).includes(`was removed on ${removal.date}`))
          failures.push(`removed on ${removal.date}, not answered ${removal.status} saying so: ${said}`);
        continue;
      }
      if (r.status === 501 && OFF_CHAIN_501.has(op.operationId)) {
        counts.notHere++;
        continue;
      }
      if (noRoute(r)) failures.push(`no route: ${said}`);
      else if (r.status < 200 || r.status > 299) failures.push(`not 2xx: ${said}`);
      if (r.status < 200 || r.status > 299) continue;
      counts.ok++;
      const validate = validatorOf(method, path, r.status);
      if (validate === undefined) {
        failures.push(`the hosted document has no ${r.status} schema: ${said}`);
        continue;
      }
      if (validate(r.body)) {
        counts.matching++;
        counts.matchingWithDifferences++;
        continue;
      }
      const left = meaningful(validate.errors ?? []).filter((e) => {
        const field = errorAt(e);
        const known = DIFFERENCES.find((x) => x.operation === op.operationId && x.field === field);
        if (known !== undefined) excepted.add(keyOf(known));
        return known === undefined;
      });
      if (left.length === 0) counts.matchingWithDifferences++;
      else
        failures.push(
          `body: ${name}: ${[...new Set(left.map((e) => `${errorAt(e)} ${e.message}${e.keyword === 'enum' ? ` ${JSON.stringify(e.params)}` : ''}`))].join('; ')}`,
        );
    }
    console.log(
      `hosted Data API walk: ${counts.operations} operations: ${counts.ok} answered 2xx, ${counts.removed} removed (their removal status), ` +
        `${counts.notHere} 501 (off chain); ${counts.matching} of ${counts.ok} bodies match the ` +
        `hosted schemas outright, ${counts.matchingWithDifferences} with the ${DIFFERENCES.length} listed differences`,
    );
    expect(failures).toEqual([]);
    // Every listed difference still shows: one the server no longer has is taken off the list.
    expect(DIFFERENCES.map(keyOf).filter((x) => !excepted.has(x))).toEqual([]);
  }, 60_000);
});
