import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getAbiItem, parseAbi, parseEther, toEventSelector, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { ENDPOINT_REMOVALS, inEffect } from '../engine/chains/removals.js';
import { DEV_ACCOUNTS, deploy, walletClient, write, type Deployed } from './contracts.js';
import { deployEns } from './ens.js';
import { until } from './helpers.js';
import { startPricedDevnet, type PricedDevnet } from './priced-devnet.js';
import { startReceiver } from './receiver.js';
import { moralisFor } from './sdk.js';

/**
 * Every operation of the official SDK's EvmApi, Streams and Auth modules (moralis@2.27.2), listed from the SDK
 * objects themselves, called through the SDK against a real server following a real anvil devnet that holds what
 * the calls ask about: the DEX of the price tests, its pricing entry naming the tokens before they were deployed
 * (test/priced-devnet.ts, serverFirst), an NFT sold for ether, a minimal ENS, streams with a delivered and a
 * failed webhook, signed sign-ins and binds. Each call must answer 2xx and parse in the SDK, or answer exactly the
 * status of its exemption: the removal table's 410 or 404 once its date passed (by the server's clock), 501 for
 * the two operations resting on services this server does not run, 404 for the Aptos streams. An operation
 * without arguments here fails the test, so a new SDK operation cannot pass unseen.
 */

const require = createRequire(import.meta.url);
const axios = require('axios');
const evmOperations = require('@moralisweb3/common-evm-utils');
const CHAIN = '0x539';
const [K0, K1, K2] = DEV_ACCOUNTS;
const lower = (a: string): string => a.toLowerCase();
const DEAD = '0x000000000000000000000000000000000000dEaD';
const TRANSFER = getAbiItem({
  abi: parseAbi(['event Transfer(address indexed from, address indexed to, uint256 value)']),
  name: 'Transfer',
});
/** The operations answering 501 here (engine: http/server/data.ts NOT_HERE). */
const NOT_HERE = new Set(['POST /contracts-review', 'POST /ipfs/uploadFolder']);

type Json = Record<string, any>;
type Expected = { status: '2xx' } | { status: number; why: string } | { status: 'no request' };
/** One SDK call as the walk makes it: its arguments (made right before the call, which may prepare state for it). */
type Call = () => Promise<unknown[]>;

let net: PricedDevnet;
let rx: Awaited<ReturnType<typeof startReceiver>>;
let Moralis: any;
/** The response interceptor counting answers, taken out after the file. */
let answersHook: number | undefined;
let nft: Deployed;
let sale: { hash: Hex; block: number };
let streams: { kept: string; deleted: string; failing: string; failedRecord: string; webhook: Json; signature: string };
/** Statuses of the HTTP answers the SDK received (its axios instance), in order. */
const answers: number[] = [];

beforeAll(async () => {
  let ens!: Awaited<ReturnType<typeof deployEns>>;
  net = await startPricedDevnet(
    async (anvil) => {
      ens = await deployEns(anvil.url);
      return { CHAINPOST_ENS: `${CHAIN}=${ens.registry.address}` };
    },
    { serverFirst: true },
  );
  const { anvil, s } = net;
  await ens.register('alice', K1.address);
  await ens.nameSelf(K1, 'alice.eth');
  // An NFT sold for ether through a marketplace (its payment is an internal call); WETH allowed to the router and moved.
  nft = await deploy(anvil.url, 'TestNFT', ['Walk NFT', 'WALK']);
  const market = await deploy(anvil.url, 'TestMarket');
  for (const id of [1n, 2n]) await write(anvil.url, { address: nft.address, abi: nft.abi, functionName: 'mint', args: [K0.address, id] });
  await write(anvil.url, { address: nft.address, abi: nft.abi, functionName: 'setApprovalForAll', args: [market.address, true] });
  const bought = await write(anvil.url, {
    address: market.address,
    abi: market.abi,
    functionName: 'buy',
    args: [nft.address, 1n, K0.address],
    account: K1,
    value: parseEther('0.5'),
  });
  sale = { hash: bought.transactionHash, block: Number(bought.blockNumber) };
  const { weth } = net.dex.tokens;
  await write(anvil.url, {
    address: weth.address,
    abi: weth.abi,
    functionName: 'approve',
    args: [net.dex.v2Router.address, parseEther('1000')],
  });
  await write(anvil.url, { address: weth.address, abi: weth.abi, functionName: 'transfer', args: [K2.address, parseEther('5')] });
  await net.indexed();

  rx = await startReceiver();
  // Real webhooks fail until the failed one is recorded; test webhooks pass.
  rx.state.answer = () => 500;
  const create = async (body: Json): Promise<string> => {
    const r = await s.call('/streams/evm', {
      method: 'PUT',
      json: { webhookUrl: rx.url, description: 'walk', tag: 'walk', chainIds: [CHAIN], ...body },
    });
    if (r.status !== 200) throw new Error(`stream: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body.id;
  };
  const kept = await create({ includeNativeTxs: true });
  await s.call(`/streams/evm/${kept}/address`, { method: 'POST', json: { address: [K1.address, DEAD] } });
  const deleted = await create({});
  const failing = await create({ includeNativeTxs: true });
  await s.call(`/streams/evm/${failing}/address`, { method: 'POST', json: { address: K2.address } });
  await (await walletClient(anvil.url)).sendTransaction({ to: K2.address, value: 1n });
  let history: Json[] = [];
  if (
    !(await until(
      async () => (history = (await s.call('/history?limit=10')).body.result ?? []).some((h: Json) => h['streamId'] === failing),
      15_000,
      50,
    ))
  )
    throw new Error('no failed webhook recorded');
  const record = history.find((h: Json) => h['streamId'] === failing)!;
  rx.state.answer = () => 200;
  const last = rx.webhooks().at(-1)!;
  streams = { kept, deleted, failing, failedRecord: record['id'], webhook: last.body, signature: String(last.headers['x-signature']) };

  Moralis = await moralisFor(s.url, s.key, { streamsSecret: (await s.call('/settings')).body.secretKey });
  answersHook = axios.interceptors.response.use(
    (r: { status: number }) => (answers.push(r.status), r),
    (e: { response?: { status: number } }) => {
      answers.push(e.response?.status ?? 0);
      throw e;
    },
  );
}, 120_000);

afterAll(async () => {
  // A later file in the same process (the shared project) uses the same axios.
  if (answersHook !== undefined) axios.interceptors.response.eject(answersHook);
  await net?.stop();
  await rx?.close();
});

/** Arguments of every EvmApi operation, by `group.name`, with plausible values from the devnet. */
function evmCalls(): Record<string, Call> {
  const { weth, usdc, tka } = net.dex.tokens;
  const chain = CHAIN;
  const [a0, a1] = [K0.address, K1.address];
  const address = nft.address;
  const balanceOf = getAbiItem({ abi: parseAbi(['function balanceOf(address owner) view returns (uint256)']), name: 'balanceOf' });
  /** The sale block's time, as the block endpoint answers it. */
  const saleTime = async (): Promise<string> => (await net.s.call(`/api/v2.2/block/${sale.block}?chain=${chain}`)).body.timestamp;
  const one = (x: Json) => async () => [x];
  return {
    'block.getBlock': one({ chain, blockNumberOrHash: String(sale.block) }),
    'block.getDateToBlock': async () => [{ chain, date: await saleTime() }],
    'block.getBlockStats': one({ chain, blockNumberOrHash: String(sale.block) }),
    'events.getContractEvents': one({ chain, address: weth.address, topic: toEventSelector(TRANSFER), abi: TRANSFER }),
    'events.getContractLogs': one({ chain, address: weth.address }),
    'nft.getContractNFTs': one({ chain, address }),
    'nft.getMultipleNFTs': one({ chain, tokens: [{ tokenAddress: address, tokenId: '1' }] }),
    'nft.getNFTContractMetadata': one({ chain, address }),
    'nft.getNFTContractTransfers': one({ chain, address }),
    'nft.getNFTLowestPrice': one({ chain, address }),
    'nft.getNFTMetadata': one({ chain, address, tokenId: '1' }),
    'nft.getNFTOwners': one({ chain, address }),
    'nft.getNFTTokenIdOwners': one({ chain, address, tokenId: '1' }),
    'nft.getNFTTransfersByBlock': one({ chain, blockNumberOrHash: String(sale.block) }),
    'nft.getNFTTransfersFromToBlock': one({ chain, fromBlock: 0 }),
    'nft.getNFTTransfers': one({ chain, address, tokenId: '1' }),
    'nft.getWalletNFTCollections': one({ chain, address: a1 }),
    'nft.getWalletNFTs': one({ chain, address: a1 }),
    'nft.getWalletNFTTransfers': one({ chain, address: a1 }),
    'nft.reSyncMetadata': one({ chain, address, tokenId: '1' }),
    'nft.syncNFTContract': one({ chain, address }),
    'nft.getNFTTrades': one({ chain, address }),
    'nft.getNFTTradesByToken': one({ chain, address, tokenId: '1' }),
    'nft.getNFTContractSalePrices': one({ chain, address, days: 7 }),
    'nft.getNFTSalePrices': one({ chain, address, tokenId: '1', days: 7 }),
    'nft.getNFTCollectionStats': one({ chain, address }),
    'nft.getNFTTokenStats': one({ chain, address, tokenId: '1' }),
    'transaction.getInternalTransactions': one({ chain, transactionHash: sale.hash }),
    'transaction.getTransaction': one({ chain, transactionHash: sale.hash }),
    'transaction.getTransactionVerbose': one({ chain, transactionHash: sale.hash }),
    'transaction.getWalletTransactions': one({ chain, address: a1 }),
    'transaction.getWalletTransactionsVerbose': one({ chain, address: a1 }),
    'balance.getNativeBalance': one({ chain, address: a1 }),
    'balance.getNativeBalancesForAddresses': one({ chain, walletAddresses: [a0, a1] }),
    'defi.getPairAddress': one({ chain, token0Address: weth.address, token1Address: usdc.address, exchange: 'MiniSwap' }),
    'defi.getPairReserves': one({ chain, pairAddress: net.wethUsdc.address }),
    'defi.getPairPrice': one({ chain, token0Address: tka.address, token1Address: weth.address }),
    'token.getTokenAllowance': one({ chain, address: weth.address, ownerAddress: a0, spenderAddress: net.dex.v2Router.address }),
    'token.getTokenMetadataBySymbol': one({ chain, symbols: ['WETH'] }),
    'token.getTokenMetadata': one({ chain, addresses: [weth.address, usdc.address] }),
    'token.getTokenPrice': one({ chain, address: weth.address }),
    'token.getTokenTransfers': one({ chain, address: weth.address }),
    'token.getWalletTokenBalances': one({ chain, address: a0 }),
    'token.getWalletTokenTransfers': one({ chain, address: a0 }),
    'token.getMultipleTokenPrices': async () => [{ chain }, { tokens: [{ tokenAddress: weth.address }, { tokenAddress: tka.address }] }],
    'token.getTokenOwners': one({ chain, tokenAddress: weth.address }),
    'token.getTokenStats': one({ chain, address: weth.address }),
    'token.getTopProfitableWalletPerToken': one({ chain, address: weth.address }),
    'resolve.resolveAddress': one({ address: a1 }),
    'resolve.resolveDomain': one({ domain: 'alice.eth' }),
    'resolve.resolveENSDomain': one({ domain: 'alice.eth' }),
    'resolve.resolveAddressToDomain': one({ address: a1 }),
    'utils.runContractFunction': one({ chain, address: weth.address, functionName: 'balanceOf', abi: [balanceOf], params: { owner: a0 } }),
    'utils.web3ApiVersion': async () => [],
    'utils.endpointWeights': async () => [],
    'utils.reviewContracts': async () => [
      { chain },
      { contracts: [{ contractAddress: tka.address, reason: 'spam', reportType: 'erc20', contractType: 'ERC20' }] },
    ],
    'ipfs.uploadFolder': one({ abi: [{ path: 'walk.json', content: { walk: true } }] }),
    'wallets.getWalletHistory': one({ chain, address: a1 }),
    'wallets.getWalletTokenBalancesPrice': one({ chain, address: a0 }),
    'wallets.getWalletNetWorth': one({ chains: [chain], address: a0 }),
    'wallets.getDefiSummary': one({ chain, address: a0 }),
    'wallets.getDefiPositionsByProtocol': one({ chain, address: a0, protocol: 'uniswap-v2' }),
    'wallets.getDefiPositionsSummary': one({ chain, address: a0 }),
    'wallets.getWalletActiveChains': one({ address: a0, chains: [chain] }),
    'wallets.getWalletStats': one({ chain, address: a0 }),
    'wallets.getWalletProfitabilitySummary': one({ chain, address: a0 }),
    'wallets.getWalletProfitability': one({ chain, address: a0 }),
    'marketData.getTopERC20TokensByMarketCap': async () => [],
    'marketData.getTopERC20TokensByPriceMovers': async () => [],
    'marketData.getTopNFTCollectionsByMarketCap': async () => [],
    'marketData.getHottestNFTCollectionsByTradingVolume': async () => [],
    'marketData.getTopCryptoCurrenciesByMarketCap': async () => [],
    'marketData.getTopCryptoCurrenciesByTradingVolume': async () => [],
  };
}

/** Arguments of every Streams operation; `@aptos` the Aptos stream of an operation taking a networkType. */
function streamsCalls(): Record<string, Call> {
  const evm = { networkType: 'evm' };
  const aptos = { networkType: 'aptos' };
  const stream = {
    webhookUrl: rx.url,
    description: 'walk aptos',
    tag: 'walk',
    allAddresses: false,
    includeEvents: true,
    includePayload: true,
    events: [],
    functions: [],
    network: ['mainnet'],
  };
  const { kept, deleted, failing, failedRecord, webhook, signature } = streams;
  return {
    add: async () => [{ ...evm, webhookUrl: rx.url, description: 'walk added', tag: 'walk', chains: [CHAIN], includeNativeTxs: true }],
    update: async () => [{ ...evm, id: kept, description: 'walk updated' }],
    delete: async () => [{ ...evm, id: deleted }],
    getAll: async () => [{ ...evm, limit: 10 }],
    getById: async () => [{ ...evm, id: kept }],
    updateStatus: async () => [{ ...evm, id: kept, status: 'paused' }],
    addAddress: async () => [{ ...evm, id: kept, address: [K0.address] }],
    getAddresses: async () => [{ ...evm, id: kept, limit: 10 }],
    deleteAddress: async () => [{ ...evm, id: kept, address: DEAD }],
    getHistory: async () => [{ limit: 10 }],
    getLogs: async () => [{ limit: 10 }],
    retry: async () => [{ streamId: failing, id: failedRecord }],
    getStats: async () => [],
    getStatsById: async () => [{ streamId: kept }],
    setSettings: async () => [{ region: 'us-east-1' }],
    readSettings: async () => [],
    verifySignature: async () => [{ body: webhook, signature }],
    // The stream's webhook with an ABI to decode its logs by (it has none of its own).
    parsedLogs: async () => [{ ...webhook, abi: [TRANSFER] }],
    'add@aptos': async () => [{ ...aptos, ...stream }],
    'update@aptos': async () => [{ ...aptos, id: kept, ...stream }],
    'delete@aptos': async () => [{ ...aptos, id: kept }],
    'getAll@aptos': async () => [{ ...aptos, limit: 10 }],
    'getById@aptos': async () => [{ ...aptos, id: kept }],
    'updateStatus@aptos': async () => [{ ...aptos, id: kept, status: 'paused' }],
    'addAddress@aptos': async () => [{ ...aptos, id: kept, address: ['0x1'] }],
    'getAddresses@aptos': async () => [{ ...aptos, id: kept, limit: 10 }],
    'deleteAddress@aptos': async () => [{ ...aptos, id: kept, address: '0x1' }],
  };
}

/** Arguments of every Auth operation: challenges signed by dev accounts, binds of two addresses into one profile. */
function authCalls(): Record<string, Call> {
  const s = net.s;
  const signIn = { domain: 'walk.example', uri: 'https://walk.example/login', statement: 'Walk', timeout: 60 };
  const post = async (path: string, json: Json): Promise<Json> => {
    const r = await s.call(path, { method: 'POST', json });
    if (r.status !== 201 && r.status !== 200) throw new Error(`${path}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  };
  const fresh = () => privateKeyToAccount(generatePrivateKey());
  /** Two addresses bound into one profile; the second one's unbind message. */
  const bound = async () => {
    const [x, y] = [K1, K2];
    const { messages } = await post('/bind/request', { addresses: [x, y].map((a) => ({ blockchainType: 'evm', address: a.address })) });
    const verifications = await Promise.all(
      [x, y].map(async (a, i) => ({ message: messages[i], signature: await a.signMessage({ message: messages[i] }) })),
    );
    const { profileId } = await post('/bind/request/verify', { verifications });
    return { profileId, y };
  };
  return {
    requestMessage: async () => [{ ...signIn, networkType: 'evm', chain: CHAIN, address: K0.address }],
    verify: async () => {
      const { message } = await post('/challenge/request/evm', { ...signIn, chainId: CHAIN, address: K0.address });
      return [{ networkType: 'evm', message, signature: await K0.signMessage({ message }) }];
    },
    'evm.requestChallengeEvm': async () => [{ ...signIn, chainId: CHAIN, address: K0.address }],
    'solana.requestChallengeSol': async () => [{ ...signIn, network: 'devnet', address: 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA' }],
    'evm.requestBind': async () => [{ addresses: [{ blockchainType: 'evm', address: fresh().address }] }],
    'evm.verifyRequestBind': async () => {
      const a = fresh();
      const { messages } = await post('/bind/request', { addresses: [{ blockchainType: 'evm', address: a.address }] });
      return [{ verifications: [{ message: messages[0], signature: await a.signMessage({ message: messages[0] }) }] }];
    },
    'evm.getAddresses': async () => [{ profileId: (await bound()).profileId }],
    'evm.removeBind': async () => {
      const { profileId, y } = await bound();
      return [{ blockchainType: 'evm', address: y.address, profileId }];
    },
    'evm.verifyRemoveBind': async () => {
      const { profileId, y } = await bound();
      const { message } = await post('/bind/remove', { blockchainType: 'evm', address: y.address, profileId });
      return [{ message, signature: await y.signMessage({ message }) }];
    },
  };
}

/** What an SDK module has besides its operations: its life cycle, its base URL and the factories its operations are made with. */
const NOT_OPERATIONS = new Set(['constructor', 'setup', 'start', 'createFetcher', 'createPaginatedFetcher', 'baseUrlProvider']);

/** The operations of an SDK module object (its functions and its class's methods, `_`-prefixed helpers left out), and of its nested groups. */
function operationsOf(module: Json, nested: readonly string[]): Array<[name: string, fn: (...args: unknown[]) => unknown]> {
  const fns = (o: Json, prefix: string) =>
    [
      ...new Set([
        ...Object.keys(o),
        ...(Object.getPrototypeOf(o) === Object.prototype ? [] : Object.getOwnPropertyNames(Object.getPrototypeOf(o))),
      ]),
    ]
      .filter((k) => typeof o[k] === 'function' && !k.startsWith('_') && !NOT_OPERATIONS.has(k))
      .map((k): [string, (...args: unknown[]) => unknown] => [`${prefix}${k}`, (...args) => o[k](...args)]);
  return [...fns(module, ''), ...nested.flatMap((g) => fns(module[g], `${g}.`))];
}

/** The EvmApi operation's method and path as the SDK sends it, from its operation definition. */
function evmRoute(name: string): { method: string; path: string } {
  const op = Object.values(evmOperations as Record<string, Json>).find(
    (o) =>
      o !== null &&
      typeof o === 'object' &&
      (o['name'] === name || o['operationId'] === name) &&
      (o['urlPathPattern'] ?? o['routePattern']) !== undefined,
  );
  if (op === undefined) throw new Error(`no operation definition for ${name}`);
  return { method: String(op['method'] ?? op['httpMethod']).toUpperCase(), path: String(op['urlPathPattern'] ?? op['routePattern']) };
}

/** A path with its parameters blanked, to compare the SDK's `{name}` with a route's `:name`. */
const shape = (path: string): string => path.replace(/\{[^}]+\}|:[^/]+/g, ':');

/** What the walk expects of an EvmApi operation at `now`: a removal's status once in effect, 501, else 2xx. */
function expectedOf(route: { method: string; path: string }, now: number): Expected {
  const removal = ENDPOINT_REMOVALS.find(
    (r) =>
      inEffect(r, now) &&
      (r.method === 'ANY' || r.method === route.method) &&
      (r.path.endsWith('*') ? route.path.startsWith(r.path.slice(0, -1)) : shape(r.path) === shape(route.path)),
  );
  if (removal !== undefined) return { status: removal.status, why: `removed on ${removal.date}` };
  if (NOT_HERE.has(`${route.method} ${route.path}`)) return { status: 501, why: 'a service this server does not run' };
  return { status: '2xx' };
}

interface Outcome {
  op: string;
  expected: Expected;
  statuses: number[];
  error?: string;
}

async function call(op: string, fn: (...args: unknown[]) => unknown, args: Call | undefined, expected: Expected): Promise<Outcome> {
  if (args === undefined) return { op, expected, statuses: [], error: 'no arguments in the walk for this operation' };
  const given = await args();
  answers.length = 0;
  try {
    await fn(...given);
    return { op, expected, statuses: [...answers] };
  } catch (err) {
    return { op, expected, statuses: [...answers], error: String((err as Error).message ?? err) };
  }
}

/** Why an outcome fails its expectation; undefined when it meets it. */
function failure(o: Outcome): string | undefined {
  const { expected, statuses, error } = o;
  if (expected.status === 'no request')
    return statuses.length > 0 || error !== undefined
      ? `expected no request and no error, got ${statuses.join(',')} ${error ?? ''}`
      : undefined;
  if (statuses.length === 0) return `sent no request: ${error ?? 'and returned'}`;
  if (expected.status === '2xx') {
    if (statuses.some((st) => st < 200 || st > 299)) return `answered ${statuses.join(',')}: ${error ?? ''}`;
    // Every answer 2xx and still an error: the SDK could not read the answer.
    return error === undefined ? undefined : `the SDK could not parse the answer: ${error}`;
  }
  return statuses.every((st) => st === expected.status) && error !== undefined
    ? undefined
    : `expected ${expected.status} (${expected.why}), answered ${statuses.join(',')} ${error ?? ''}`;
}

describe('every operation of the SDK against a devnet server', () => {
  it('answers each EvmApi, Streams and Auth operation 2xx with an answer the SDK reads, or exactly its exemption', async () => {
    const now = Date.parse((await net.s.call('/health')).body.now);
    const outcomes: Outcome[] = [];
    const evmArgs = evmCalls();
    // The EvmApi's operation groups: its objects of functions (core and the base URL provider aside).
    const groups = Object.keys(Moralis.EvmApi).filter(
      (g) =>
        !['core', 'logger', 'baseUrlProvider'].includes(g) && Object.values(Moralis.EvmApi[g] ?? {}).some((v) => typeof v === 'function'),
    );
    const evmOps = operationsOf(Moralis.EvmApi, groups);
    const routes = new Map<string, { method: string; path: string }>();
    for (const [name, fn] of evmOps) {
      const route = evmRoute(name.split('.')[1]!);
      routes.set(name, route);
      outcomes.push(await call(`EvmApi.${name}`, fn, evmArgs[name], expectedOf(route, now)));
    }
    const streamArgs = streamsCalls();
    for (const [name, fn] of operationsOf(Moralis.Streams, [])) {
      const local = name === 'verifySignature' || name === 'parsedLogs';
      outcomes.push(await call(`Streams.${name}`, fn, streamArgs[name], local ? { status: 'no request' } : { status: '2xx' }));
      // An operation taking a networkType refuses a made-up one before sending anything: it has an Aptos stream too.
      let takesNetwork = false;
      try {
        await fn({ networkType: 'no-such-network' });
      } catch (err) {
        takesNetwork = (err as Error).message.includes('no-such-network');
      }
      if (takesNetwork)
        outcomes.push(
          await call(`Streams.${name}@aptos`, fn, streamArgs[`${name}@aptos`], {
            status: 404,
            why: 'Aptos streams are outside the interface',
          }),
        );
    }
    const authArgs = authCalls();
    for (const [name, fn] of operationsOf(Moralis.Auth, ['evm', 'solana']))
      outcomes.push(await call(`Auth.${name}`, fn, authArgs[name], { status: '2xx' }));

    const walked = new Set(outcomes.map((o) => o.op));
    const unused = [
      ...Object.keys(evmArgs).map((k) => `EvmApi.${k}`),
      ...Object.keys(streamArgs).map((k) => `Streams.${k}`),
      ...Object.keys(authArgs).map((k) => `Auth.${k}`),
    ].filter((k) => !walked.has(k));
    expect(outcomes.filter((o) => failure(o) !== undefined).map((o) => `${o.op}: ${failure(o)}`)).toEqual([]);
    expect(unused, 'arguments for operations the SDK does not have').toEqual([]);
    expect(outcomes.length).toBeGreaterThan(100);

    // The endpoint weights list exactly the EvmApi operations served here.
    const weights = new Set(((await Moralis.EvmApi.utils.endpointWeights()).raw as Json[]).map((w) => shape(w['path'])));
    const served = outcomes.filter((o) => o.op.startsWith('EvmApi.') && o.expected.status === '2xx');
    expect(served.filter((o) => !weights.has(shape(routes.get(o.op.slice(7))!.path))).map((o) => o.op)).toEqual([]);
    expect(
      outcomes
        .filter((o) => o.op.startsWith('EvmApi.') && o.expected.status !== '2xx' && weights.has(shape(routes.get(o.op.slice(7))!.path)))
        .map((o) => o.op),
    ).toEqual([]);

    // The registry's tokens, named before they were deployed, are read again once they exist: right decimals, right prices.
    const { weth, usdc } = net.dex.tokens;
    const metadata = (await Moralis.EvmApi.token.getTokenMetadata({ chain: CHAIN, addresses: [weth.address, usdc.address] })).raw as Json[];
    expect(metadata.map((m) => [m['symbol'], m['decimals']])).toEqual([
      ['WETH', '18'],
      ['USDC', '6'],
    ]);
    expect((await Moralis.EvmApi.token.getTokenPrice({ chain: CHAIN, address: weth.address })).raw.usdPrice).toBe(2000);
    expect(lower((await Moralis.EvmApi.resolve.resolveENSDomain({ domain: 'alice.eth' })).raw.address)).toBe(lower(K1.address));
  }, 120_000);
});
