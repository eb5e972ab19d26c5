import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import bs58 from 'bs58';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aptosAddressOf } from '../engine/auth/signatures.js';
import { ApiKeys, hashKey } from '../engine/keys.js';
import { openStore } from '../storage/env.js';
import { lmdbKeyStore } from '../storage/keys.js';
import { DATA_PREFIX } from '../http/server/data.js';
import { unknownRoute } from '../http/server/system.js';
import { XPUB } from './kit/bitcoin-core/keys.js';
import { advance, apiCaller, startChainpost, stopAndClean, type Running } from './helpers.js';
import { startReceiver } from './receiver.js';
import { serverRoutes } from './in-process.js';

/**
 * Two tenants on one real server: tenant A holds state of every kind (streams of each family with addresses
 * and an xpub, delivered and failed webhooks, settings, sign-in profiles, pending challenges, binds and
 * unbinds, two keys), then tenant B calls every route of the server's own route list against A's ids. No
 * answer to B carries A's data, every lookup of A's things is 404, lists are B's own, and A's state reads
 * the same afterwards (and A's pending signatures still verify). A route without a row fails the test.
 */

const ENV = { CHAINPOST_TEST_CLOCK: '1', CHAINPOST_NOW: '2026-11-22T12:00:00Z', CHAINPOST_RATE_LIMIT: '0' };
type Family = 'evm' | 'bitcoin' | 'solana';
const FAMILIES: readonly Family[] = ['evm', 'bitcoin', 'solana'];
const SIGN_IN = { domain: 'tenant-a.example', uri: 'https://tenant-a.example/login', timeout: 600 };

/** An ed25519 key as Solana and Aptos use it. */
function edKey() {
  const secret = ed25519.utils.randomSecretKey();
  const pub = ed25519.getPublicKey(secret);
  return {
    sign: (text: string) => ed25519.sign(new TextEncoder().encode(text), secret),
    solana: bs58.encode(pub),
    publicKey: `0x${bytesToHex(pub)}`,
    aptos: aptosAddressOf(`0x${bytesToHex(pub)}`),
  };
}

/** An address each family takes. */
const ADDRESS: Record<Family, string> = {
  evm: '0x000000000000000000000000000000000000a11c',
  bitcoin: '1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa',
  solana: 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA',
};
const OTHER_ADDRESS: Record<Family, string> = {
  evm: '0x000000000000000000000000000000000000b0b0',
  bitcoin: '3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy',
  solana: 'Vote111111111111111111111111111111111111111',
};
const STREAM: Record<Family, Record<string, unknown>> = { evm: { chainIds: ['0x1'], includeNativeTxs: true }, bitcoin: {}, solana: {} };

const block = (n: number) => ({ number: String(n), hash: `0x${n.toString(16).padStart(64, '0')}`, timestamp: String(1_795_000_000 + n) });
const webhook = (n: number) => ({
  confirmed: false,
  chainId: '0x1',
  abi: [],
  block: block(n),
  logs: [],
  txs: [],
  txsInternal: [],
  erc20Transfers: [],
  erc20Approvals: [],
  nftTransfers: [],
  nftTokenApprovals: [],
  nftApprovals: { ERC721: [], ERC1155: [] },
  nativeBalances: [],
});

/** Data API routes (under /api/v2.2): reads of chain data, no tenant's state behind any of them. */
const DATA_ROUTES = [
  'GET /web3/version',
  'GET /wallets/balances',
  'GET /info/endpointWeights',
  'GET /erc20/metadata',
  'GET /tokens/search',
  'POST /erc20/prices',
  'GET /nft/transfers',
  'POST /nft/getMultipleNFTs',
  'GET /dateToBlock',
  'GET /resolve/ens/:domain',
  'GET /resolve/:domain',
  'GET /resolve/:address/reverse',
  'GET /resolve/:address/domain',
  'GET /transaction/:transaction_hash',
  'GET /transaction/:transaction_hash/verbose',
  'GET /transaction/:transaction_hash/internal-transactions',
  'GET /block/:block_number_or_hash',
  'GET /block/:block_number_or_hash/stats',
  'GET /wallets/:address/history',
  'GET /wallets/:address/stats',
  'GET /wallets/:address/chains',
  'GET /wallets/:address/tokens',
  'GET /wallets/:address/approvals',
  'GET /erc20/:address/transfers',
  'GET /erc20/:token_address/owners',
  'GET /erc20/:tokenAddress/holders',
  'GET /erc20/:tokenAddress/holders/historical',
  'GET /erc20/:address/allowance',
  'GET /erc20/:address/price',
  'GET /wallets/:address/net-worth',
  'GET /wallets/:address/defi/summary',
  'GET /wallets/:address/defi/positions',
  'GET /wallets/:address/defi/:protocol/positions',
  'GET /tokens/:tokenAddress/analytics',
  'POST /tokens/analytics',
  'POST /tokens/analytics/timeseries',
  'GET /tokens/trending',
  'GET /pairs/:address/stats',
  'GET /latestBlockNumber/:chain',
  'GET /tokens/:tokenAddress/score',
  'GET /tokens/:tokenAddress/score/historical',
  'GET /wallets/:address/swaps',
  'GET /erc20/:address/swaps',
  'GET /pairs/:address/swaps',
  'GET /erc20/:token_address/pairs',
  'GET /wallets/:address/profitability',
  'GET /wallets/:address/profitability/summary',
  'GET /erc20/:address/top-gainers',
  'GET /pairs/:address/ohlcv',
  'GET /nft/:address/:token_id/transfers',
  'GET /block/:block_number_or_hash/nft/transfers',
  'GET /nft/:address',
  'GET /nft/:address/owners',
  'GET /nft/:address/metadata',
  'GET /nft/:address/transfers',
  'GET /nft/:address/trades',
  'GET /nft/:address/lowestprice',
  'GET /nft/:address/stats',
  'GET /nft/:address/price',
  'PUT /nft/:address/sync',
  'GET /nft/:address/:token_id',
  'GET /nft/:address/:token_id/owners',
  'GET /nft/:address/:token_id/trades',
  'GET /nft/:address/:token_id/stats',
  'GET /nft/:address/:token_id/price',
  'GET /nft/:address/:token_id/metadata/resync',
  'GET /wallets/:address/nfts/trades',
  'GET /nft/:address/traits',
  'GET /nft/:address/traits/paginate',
  'GET /nft/:address/traits/resync',
  'POST /nft/:address/nfts-by-traits',
  'POST /nft/metadata',
  'GET /nft/:address/floor-price',
  'GET /nft/:address/:token_id/floor-price',
  'GET /nft/:address/floor-price/historical',
  'GET /:address/balance',
  'GET /:address/logs',
  'POST /:address/events',
  'POST /:address/function',
  'GET /:address',
  'GET /:address/verbose',
  'GET /:address/erc20',
  'GET /:address/erc20/transfers',
  'GET /:pair_address/reserves',
  'GET /:token0_address/:token1_address/pairAddress',
  'GET /:token0_address/:token1_address/price',
  'GET /:address/nft',
  'GET /:address/nft/collections',
  'GET /:address/nft/transfers',
  'POST /contracts-review',
  'POST /ipfs/uploadFolder',
  'GET /entities/search',
  'GET /entities/categories',
  'GET /entities/categories/:categoryId',
  'GET /entities/:entityId',
  'POST /chat',
  'POST /discovery/tokens',
  'GET /discovery/token',
  'GET /discovery/tokens/rising-liquidity',
  'GET /discovery/tokens/buying-pressure',
  'GET /discovery/tokens/solid-performers',
  'GET /discovery/tokens/experienced-buyers',
  'GET /discovery/tokens/risky-bets',
  'GET /discovery/tokens/blue-chip',
  'GET /discovery/tokens/top-gainers',
  'GET /discovery/tokens/top-losers',
  'GET /discovery/tokens/trending',
  'ANY /discovery/*',
  'GET /volume/chains',
  'GET /volume/categories',
  'GET /volume/timeseries',
  'GET /volume/timeseries/:categoryId',
  'GET /pairs/:address/snipers',
  'GET /token/:network/pairs/:pairAddress/snipers',
  'GET /erc20/exchange/:exchangeName/new',
  'GET /erc20/exchange/:exchangeName/bonding',
  'GET /erc20/exchange/:exchangeName/graduated',
  'GET /erc20/:tokenAddress/bondingStatus',
  'GET /erc20/:address/stats',
  'GET /erc20/:token_address/pairs/stats',
  'GET /erc20/metadata/symbols',
  'GET /market-data/erc20s/top-tokens',
  'GET /market-data/erc20s/top-movers',
  'GET /market-data/nfts/top-collections',
  'GET /market-data/nfts/hottest-collections',
  'GET /market-data/global/market-cap',
  'GET /market-data/global/volume',
  'GET /token/:network/holders/:address',
  'GET /token/:network/:address/top-holders',
  'GET /token/:network/holders/:address/historical',
  'GET /token/:network/exchange/:exchange/new',
  'GET /token/:network/exchange/:exchange/bonding',
  'GET /token/:network/exchange/:exchange/graduated',
  'GET /token/:network/:address/bonding-status',
];

interface Call {
  method: string;
  path: string;
  json?: unknown;
}
interface Answer {
  status: number;
  body: any;
}

/** What tenant A holds, by id. */
interface TenantA {
  key: string;
  sameTenantKey: string;
  /** The public ids of A's two keys. */
  keyIds: string[];
  streams: Record<Family, string>;
  xpubId: string;
  failedHistoryId: string;
  /** Every history and delivery-log id of A. */
  recordIds: string[];
  profiles: { evm: string; solana: string; aptos: string; bound: string };
  secretKey: string;
  /** Signed and not yet verified: a challenge per family, a bind, an unbind. */
  pending: {
    challenge: Record<'evm' | 'solana' | 'aptos', { message: string; signature: string }>;
    bind: Array<{ message: string; signature: string }>;
    unbind: { message: string; signature: string };
  };
  /** Keys of A's bound profile, for bind/remove. */
  boundSolana: string;
  aptosKey: ReturnType<typeof edKey>;
  solanaKey: ReturnType<typeof edKey>;
  evmAddress: string;
}

/** What tenant B holds: its own streams (those it creates during the table too). */
interface TenantB {
  key: string;
  streams: Set<string>;
  evm: string;
}

/** A row: how B calls the route against A's ids, and what it must get. */
interface Row {
  calls: (a: TenantA, b: TenantB) => Call[];
  expect: (r: Answer, a: TenantA, b: TenantB, call: Call) => void;
}
/** A route that holds no tenant's state: why, and a call of it by B (its answer must still carry nothing of A's). */
interface NoTenantState {
  none: string;
  calls: (a: TenantA, b: TenantB) => Call[];
}

/** A key's public id, as GET /keys lists it. */
const keyId = (key: string): string => hashKey(key).slice(0, 12);

const notFound = (r: Answer, _a: TenantA, _b: TenantB, call: Call) =>
  expect(r.status, `${call.method} ${call.path}: ${JSON.stringify(r.body)}`).toBe(404);
const get = (path: string): Call => ({ method: 'GET', path });
const post = (path: string, json?: unknown): Call => ({ method: 'POST', path, ...(json === undefined ? {} : { json }) });
const del = (path: string, json?: unknown): Call => ({ method: 'DELETE', path, ...(json === undefined ? {} : { json }) });

/** B's list of a family: B's own streams only, and the total says so. */
const ownStreams = (r: Answer, a: TenantA, b: TenantB) => {
  expect(r.status).toBe(200);
  const ids = (r.body.result as Array<{ id: string }>).map((s) => s.id);
  for (const id of ids) expect(b.streams.has(id), id).toBe(true);
  expect(r.body.total).toBe(ids.length);
  expect(ids).not.toContain(a.streams.evm);
};

function familyRows(f: Family): Record<string, Row> {
  const base = `/streams/${f}`;
  return {
    [`PUT ${base}`]: {
      calls: () => [{ method: 'PUT', path: base, json: { webhookUrl: 'RECEIVER?tenant=b', description: 'b', ...STREAM[f] } }],
      expect: (r, a, b) => {
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        expect(Object.values(a.streams)).not.toContain(r.body.id);
        b.streams.add(r.body.id);
      },
    },
    [`GET ${base}`]: { calls: () => [get(`${base}?limit=100`)], expect: ownStreams },
    [`GET ${base}/:id`]: { calls: (a) => [get(`${base}/${a.streams[f]}`)], expect: notFound },
    [`POST ${base}/:id`]: { calls: (a) => [post(`${base}/${a.streams[f]}`, { description: 'changed by B' })], expect: notFound },
    [`DELETE ${base}/:id`]: { calls: (a) => [del(`${base}/${a.streams[f]}`)], expect: notFound },
    [`POST ${base}/:id/status`]: { calls: (a) => [post(`${base}/${a.streams[f]}/status`, { status: 'paused' })], expect: notFound },
    [`POST ${base}/:id/address`]: {
      calls: (a) => [post(`${base}/${a.streams[f]}/address`, { address: OTHER_ADDRESS[f] })],
      expect: notFound,
    },
    [`DELETE ${base}/:id/address`]: { calls: (a) => [del(`${base}/${a.streams[f]}/address`, { address: ADDRESS[f] })], expect: notFound },
    [`GET ${base}/:id/address`]: { calls: (a) => [get(`${base}/${a.streams[f]}/address`)], expect: notFound },
  };
}

/** Own-only list of history or delivery logs: B's streams' records, at least one (B's own delivery). */
const ownRecords = (r: Answer, _a: TenantA, b: TenantB) => {
  expect(r.status).toBe(200);
  expect(r.body.result.length).toBeGreaterThan(0);
  for (const h of r.body.result as Array<{ streamId: string }>) expect(b.streams.has(h.streamId), h.streamId).toBe(true);
  expect(r.body.total).toBe(r.body.result.length);
};

const CHAIN_BLOCK = 'a block of the chain matched against a definition given in the body: reads stored blocks, no stream, no tenant state';
const CHAIN_READS = "a read of chain data through the Data API (the chain's blocks and the indexes built from them): no tenant's state";

const TABLE: Record<string, Row | NoTenantState> = {
  'GET /health': { none: "the server's and its chains' state, for everyone (no key)", calls: () => [get('/health')] },
  'GET /metrics': {
    none: "the operator's Prometheus text (CHAINPOST_METRICS_KEY closes it): totals, no stream id (per-stream series only with CHAINPOST_METRICS_STREAMS=1)",
    calls: () => [get('/metrics')],
  },
  'GET /openapi.json': {
    none: 'the API reference: the routes and their schemas, the same for every tenant (no key)',
    calls: () => [get('/openapi.json')],
  },
  'GET /docs': { none: 'the API reference page over /openapi.json (no key)', calls: () => [get('/docs')] },
  'GET /docs/:file': { none: "the reference page's scripts and styles (no key)", calls: () => [get('/docs/init.js')] },
  'GET /dashboard': {
    none: "the dashboard's page (no key: it asks for one, and sends it with the API calls it makes)",
    calls: () => [get('/dashboard')],
  },
  'GET /dashboard.css': { none: "the dashboard's stylesheet (no key)", calls: () => [get('/dashboard.css')] },
  'GET /dashboard/:file': { none: "the dashboard's scripts (no key)", calls: () => [get('/dashboard/app.js')] },
  'GET /admin/clock': {
    none: "the test clock (CHAINPOST_TEST_CLOCK=1 only): the server's one clock, B calling with the operator's CHAINPOST_ADMIN_KEY (apiCaller sends it)",
    calls: () => [get('/admin/clock')],
  },
  'POST /admin/clock/advance': {
    none: "the test clock (CHAINPOST_TEST_CLOCK=1 only): the server's one clock, with the operator's key; moved by 0 here, so A's retries stay where they are",
    calls: () => [post('/admin/clock/advance', { seconds: 0 })],
  },
  ...familyRows('evm'),
  ...familyRows('bitcoin'),
  ...familyRows('solana'),
  'POST /streams/solana/:chainId/block/:blockNumber': { none: CHAIN_BLOCK, calls: () => [post('/streams/solana/mainnet/block/1', {})] },
  'POST /streams/bitcoin/:chainId/block/:blockNumber': { none: CHAIN_BLOCK, calls: () => [post('/streams/bitcoin/mainnet/block/1', {})] },
  'POST /streams/solana/:chainId/block-to-webhook/:blockNumber/:streamId': {
    calls: (a) => [post(`/streams/solana/mainnet/block-to-webhook/1/${a.streams.solana}`)],
    expect: notFound,
  },
  'POST /streams/bitcoin/:chainId/block-to-webhook/:blockNumber/:streamId': {
    calls: (a) => [post(`/streams/bitcoin/mainnet/block-to-webhook/1/${a.streams.bitcoin}`)],
    expect: notFound,
  },
  'POST /streams/bitcoin/:id/xpub': {
    calls: (a) => [post(`/streams/bitcoin/${a.streams.bitcoin}/xpub`, { xpub: XPUB })],
    expect: notFound,
  },
  'GET /streams/bitcoin/:id/xpub': { calls: (a) => [get(`/streams/bitcoin/${a.streams.bitcoin}/xpub`)], expect: notFound },
  'DELETE /streams/bitcoin/:id/xpub/:xpubId': {
    calls: (a) => [del(`/streams/bitcoin/${a.streams.bitcoin}/xpub/${a.xpubId}`)],
    expect: notFound,
  },
  'GET /history': { calls: () => [get('/history?limit=100')], expect: ownRecords },
  'GET /history/logs': { calls: () => [get('/history/logs?limit=100')], expect: ownRecords },
  // A history record's id, or a stream's (every record of it replayed).
  'POST /history/replay/:historyId': {
    calls: (a) => [post(`/history/replay/${a.failedHistoryId}`), ...FAMILIES.map((f) => post(`/history/replay/${a.streams[f]}`))],
    expect: notFound,
  },
  'POST /history/replay/:streamId/:historyId': {
    calls: (a, b) => [post(`/history/replay/${a.streams.evm}/${a.failedHistoryId}`), post(`/history/replay/${b.evm}/${a.failedHistoryId}`)],
    expect: notFound,
  },
  'GET /keys': {
    calls: () => [get('/keys')],
    expect: (r, a, b) => {
      expect(r.status).toBe(200);
      const ids = (r.body.result as Array<{ id: string }>).map((k) => k.id);
      expect(ids).toContain(keyId(b.key));
      for (const id of a.keyIds) expect(ids).not.toContain(id);
      expect(r.body.total).toBe(ids.length);
    },
  },
  'POST /keys': {
    calls: () => [post('/keys', { name: 'tenant-b-made' })],
    expect: (r, a) => {
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      expect(a.keyIds).not.toContain(r.body.id);
    },
  },
  'POST /keys/:id/rotate': {
    calls: (a) => a.keyIds.flatMap((id) => [post(`/keys/${id}/rotate`), post(`/keys/${id}/rotate`, { graceSeconds: 600 })]),
    expect: notFound,
  },
  'DELETE /keys/:id': { calls: (a) => a.keyIds.map((id) => del(`/keys/${id}`)), expect: notFound },
  'GET /stats': {
    calls: () => [get('/stats')],
    expect: (r, _a, b) => {
      expect(r.status).toBe(200);
      // A's counts are 2 and 2; B's own, 1 and 1.
      expect(r.body).toMatchObject({ totalWebhooksDelivered: 1, totalWebhooksFailed: 1 });
    },
  },
  'GET /stats/:streamId': { calls: (a) => FAMILIES.map((f) => get(`/stats/${a.streams[f]}`)), expect: notFound },
  'GET /settings': {
    calls: () => [get('/settings')],
    expect: (r, a) => {
      expect(r.status).toBe(200);
      expect(r.body.secretKey).not.toBe(a.secretKey);
      expect(r.body.region).not.toBe('eu-central-1');
    },
  },
  'POST /settings': {
    calls: () => [post('/settings', { region: 'ap-southeast-1' })],
    expect: (r) => expect(r).toMatchObject({ status: 200, body: { region: 'ap-southeast-1' } }),
  },
  'POST /admin/streams/:id/webhooks': {
    calls: (a) => FAMILIES.map((f) => post(`/admin/streams/${a.streams[f]}/webhooks`, { webhooks: [webhook(99)] })),
    expect: notFound,
  },
  'POST /admin/webhooks': {
    calls: (a) => FAMILIES.map((f) => post('/admin/webhooks', { webhooks: [{ streamId: a.streams[f], payload: webhook(99) }] })),
    expect: notFound,
  },
  // B asks to sign in with A's addresses: its own challenge, under a profile id of its own.
  'POST /challenge/request/evm': {
    calls: (a) => [post('/challenge/request/evm', { ...SIGN_IN, chainId: 1, address: a.evmAddress })],
    expect: (r, a) => expect(r.status === 201 && r.body.profileId !== a.profiles.evm, JSON.stringify(r.body)).toBe(true),
  },
  'POST /challenge/request/solana': {
    calls: (a) => [post('/challenge/request/solana', { ...SIGN_IN, network: 'mainnet', address: a.solanaKey.solana })],
    expect: (r, a) => expect(r.status === 201 && r.body.profileId !== a.profiles.solana, JSON.stringify(r.body)).toBe(true),
  },
  'POST /challenge/request/aptos': {
    calls: (a) => [
      post('/challenge/request/aptos', { ...SIGN_IN, network: 'mainnet', address: a.aptosKey.aptos, publicKey: a.aptosKey.publicKey }),
    ],
    expect: (r, a) => expect(r.status === 201 && r.body.profileId !== a.profiles.aptos, JSON.stringify(r.body)).toBe(true),
  },
  // B replays A's signed, not yet verified, messages.
  'POST /challenge/verify/evm': { calls: (a) => [post('/challenge/verify/evm', a.pending.challenge.evm)], expect: notFound },
  'POST /challenge/verify/solana': { calls: (a) => [post('/challenge/verify/solana', a.pending.challenge.solana)], expect: notFound },
  'POST /challenge/verify/aptos': { calls: (a) => [post('/challenge/verify/aptos', a.pending.challenge.aptos)], expect: notFound },
  'POST /bind/request': {
    calls: (a) => [post('/bind/request', { addresses: [{ blockchainType: 'solana', address: a.boundSolana }] })],
    expect: (r) => expect(r.status).toBe(201),
  },
  'POST /bind/request/verify': { calls: (a) => [post('/bind/request/verify', { verifications: a.pending.bind })], expect: notFound },
  'POST /bind/remove': {
    calls: (a) => [post('/bind/remove', { blockchainType: 'solana', address: a.boundSolana, profileId: a.profiles.bound })],
    expect: notFound,
  },
  'POST /bind/remove/verify': { calls: (a) => [post('/bind/remove/verify', a.pending.unbind)], expect: notFound },
  'GET /profile/:profileId/addresses': {
    calls: (a) => Object.values(a.profiles).map((p) => get(`/profile/${p}/addresses`)),
    expect: notFound,
  },
  'GET /.well-known/jwks.json': {
    none: "the public keys of the server's sign-in tokens: one signing key for the server, no tenant's state",
    calls: () => [get('/.well-known/jwks.json')],
  },
  'GET /v1/defi/protocols': {
    none: "the DeFi adapters this server has and the chains their factories are registered on: no tenant's state",
    calls: () => [get('/v1/defi/protocols?chains=eth')],
  },
  'GET /v1/wallets/:walletAddress/defi/positions': {
    none: "cross-chain reads of chain data: a wallet's LP tokens and position NFTs from the indexes, their pools by eth_call",
    calls: (a) => [get(`/v1/wallets/${a.evmAddress}/defi/positions`)],
  },
  'GET /v1/wallets/:walletAddress/defi/:protocol/positions': {
    none: 'cross-chain reads of chain data: as the positions, of one protocol',
    calls: (a) => [get(`/v1/wallets/${a.evmAddress}/defi/uniswap-v3/positions`)],
  },
  'GET /v1/wallets/:walletAddress/defi/summary': {
    none: 'cross-chain reads of chain data: the positions summed',
    calls: (a) => [get(`/v1/wallets/${a.evmAddress}/defi/summary`)],
  },
  'GET /v1/chains/:chainAlias/tokens/:tokenAliasOrTokenAddress/price': {
    none: 'cross-chain reads of chain data: a price from the DEX pools indexed',
    calls: () => [get('/v1/chains/eth/tokens/native/price'), get('/v1/chains/bitcoin/tokens/native/price')],
  },
  'GET /v1/chains/:chainAlias/tokens/:tokenAliasOrTokenAddress/price/timeseries': {
    none: 'cross-chain reads of chain data: price marks',
    calls: () => [get('/v1/chains/eth/tokens/native/price/timeseries')],
  },
  'GET /v1/chains/:chainAlias/tokens/:tokenAliasOrTokenAddress/price/sparkline': {
    none: 'cross-chain reads of chain data: price marks',
    calls: () => [get('/v1/chains/eth/tokens/native/price/sparkline?range=7d')],
  },
  'GET /v1/wallets/:walletAddressOrPublicKey/tokens': {
    none: "cross-chain reads of chain data: a wallet's balances from the indexes and nodes",
    calls: (a) => [get(`/v1/wallets/${a.evmAddress}/tokens`), get(`/v1/wallets/${XPUB}/tokens`)],
  },
  'GET /v1/wallets/:walletAddressOrPublicKey/history': {
    none: "cross-chain reads of chain data: a wallet's transactions from the indexes",
    calls: (a) => [get(`/v1/wallets/${a.evmAddress}/history`), get(`/v1/wallets/${XPUB}/history`)],
  },
  'GET /v1/wallets/:walletAddress/insight': {
    none: "cross-chain reads of chain data: a wallet's activity folded from the indexes",
    calls: (a) => [get(`/v1/wallets/${a.evmAddress}/insight`)],
  },
  'GET /v1/wallets/:walletAddress/pnl': {
    none: "cross-chain reads of chain data: a wallet's swaps from the DEX index (A's followed addresses are not read)",
    calls: (a) => [get(`/v1/wallets/${a.evmAddress}/pnl`)],
  },
  'GET /v1/wallets/:walletAddress/pnl/summary': {
    none: "cross-chain reads of chain data: a wallet's swaps from the DEX index (A's followed addresses are not read)",
    calls: (a) => [get(`/v1/wallets/${a.evmAddress}/pnl/summary?period=7d`)],
  },
  'GET /v1/chains/:chainAlias/blocks/:blockIdentifier': {
    none: 'cross-chain reads of chain data: stored block records',
    calls: () => [get('/v1/chains/eth/blocks/1'), get(`/v1/chains/bitcoin/blocks/${'0'.repeat(64)}`)],
  },
  'GET /v1/chains/:chainAlias/transactions/:txHash': {
    none: 'cross-chain reads of chain data: the transaction indexes and stored records',
    calls: () => [get(`/v1/chains/eth/transactions/0x${'0'.repeat(64)}`), get(`/v1/chains/bitcoin/transactions/${'0'.repeat(64)}`)],
  },
  'GET /v1/chains/:chainAlias/tokens/:tokenAddress/swaps': {
    none: 'cross-chain reads of chain data: the DEX index',
    calls: () => [get(`/v1/chains/eth/tokens/0x${'1'.repeat(40)}/swaps`)],
  },
  'GET /v1/chains/:chainAlias/tokens/:tokenAddress/top-traders': {
    none: 'cross-chain reads of chain data: the DEX index',
    calls: () => [get(`/v1/chains/eth/tokens/0x${'1'.repeat(40)}/top-traders`)],
  },
  'GET /v1/chains/:chainAlias/pairs/:pairAddress/swaps': {
    none: 'cross-chain reads of chain data: the DEX index',
    calls: () => [get(`/v1/chains/eth/pairs/0x${'1'.repeat(40)}/swaps`)],
  },
  'GET /v1/chains/:chainAlias/pairs/:pairAddress/ohlcv': {
    none: 'cross-chain reads of chain data: the DEX candles',
    calls: () => [get(`/v1/chains/eth/pairs/0x${'1'.repeat(40)}/ohlcv?fromDate=0&toDate=1`)],
  },
  'GET /v1/chains/:chainAlias/wallets/:publicKey/addresses': {
    none: "cross-chain reads of chain data: an xpub's addresses from the Bitcoin address index (an xpub a stream watches is not read)",
    calls: () => [get(`/v1/chains/bitcoin/wallets/${XPUB}/addresses`)],
  },
  'POST /rpc/:chain/:apiKey': {
    none: "node access: JSON-RPC calls passed to (or answered from) the chain's node; the key only authenticates",
    calls: (_a, b) => [post(`/rpc/0x1/${b.key}`, { jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] })],
  },
  'ANY /*': {
    none: 'the answer to a path no route takes (404 naming it)',
    calls: (a) => [get(`/streams/evm/${a.streams.evm}/nothing-here`)],
  },
  ...Object.fromEntries(
    DATA_ROUTES.map((route) => [
      `${route.split(' ')[0]} ${DATA_PREFIX}${route.split(' ')[1]}`,
      { none: CHAIN_READS, calls: (a: TenantA) => [dataCall(route, a)] },
    ]),
  ),
};

/** A Data API route called with A's EVM address wherever it takes an address. */
function dataCall(route: string, a: TenantA): Call {
  const [method, pattern] = route.split(' ') as [string, string];
  const values: Record<string, string> = {
    hash: `0x${'ab'.repeat(32)}`,
    block_number_or_hash: '1',
    domain: 'vitalik.eth',
    token_id: '1',
    network: 'eth',
    exchange: 'uniswapv2',
    exchangeName: 'uniswapv2',
    categoryId: 'defi',
    protocol: 'uniswap-v2',
  };
  const path = pattern.replace(/:(\w+)/g, (_, name: string) => values[name] ?? a.evmAddress).replace('/*', '/anything');
  return {
    method: method === 'ANY' ? 'GET' : method,
    path: `${DATA_PREFIX}${path}`,
    ...(method === 'POST' || method === 'PUT' ? { json: {} } : {}),
  };
}

describe("tenants: every route, called by tenant B against tenant A's ids, answers nothing of A's and changes nothing of A's", () => {
  let s: Running;
  let rx: Awaited<ReturnType<typeof startReceiver>>;
  let routes: string[];
  const a = {} as TenantA;
  const b = { streams: new Set<string>() } as TenantB;
  const callA = (path: string, init?: RequestInit & { json?: unknown }) => apiCaller(s.url, a.key)(path, init);
  /** A key made in the server's key store beside it, as `chainpost keys create --name N [--tenant T]` makes it (cli/commands.ts). */
  const newKeys = async (wanted: Array<{ name: string; tenant?: string }>) => {
    const store = openStore(s.dir);
    try {
      const keys = new ApiKeys(lmdbKeyStore(store), () => Date.now());
      const made: string[] = [];
      for (const w of wanted) made.push((await keys.create(w)).key);
      return made;
    } finally {
      await store.close();
    }
  };
  /** A's state through A's other key: what must read the same after B's calls. */
  const snapshotA = async () => {
    const read = apiCaller(s.url, a.sameTenantKey);
    const paths = [
      ...FAMILIES.flatMap((f) => [
        `/streams/${f}?limit=100`,
        `/streams/${f}/${a.streams[f]}`,
        `/streams/${f}/${a.streams[f]}/address?limit=100`,
        `/stats/${a.streams[f]}`,
      ]),
      `/streams/bitcoin/${a.streams.bitcoin}/xpub?limit=100`,
      '/history?limit=100',
      '/history/logs?limit=100',
      '/stats',
      '/settings',
      '/keys',
      ...Object.values(a.profiles).map((p) => `/profile/${p}/addresses`),
    ];
    const out: Record<string, unknown> = {};
    for (const path of paths) {
      const r = await read(path);
      expect(r.status, `${path}: ${JSON.stringify(r.body)}`).toBe(200);
      // A stream without deliveries has no stats stored: its zeros are dated now (the clock runs), not state.
      if (path.startsWith('/stats/') && r.body.totalWebhooksDelivered + r.body.totalWebhooksFailed + r.body.totalLogsProcessed === 0) {
        delete r.body.createdAt;
        delete r.body.updatedAt;
      }
      out[path] = r.body;
    }
    return out;
  };

  beforeAll(async () => {
    // The route list as the server assembles it with the server's settings.
    routes = [...(await serverRoutes(ENV)), unknownRoute].map((r) => `${r.method} ${r.pattern}`);
    rx = await startReceiver();
    s = await startChainpost(ENV);
  }, 60_000);
  afterAll(async () => {
    await stopAndClean(s);
    await rx?.close();
  });

  it('has a row for every route of the server, and none for a route it does not have', () => {
    expect(routes.length).toBeGreaterThan(100);
    expect(
      routes.filter((r) => !(r in TABLE)),
      'routes without a row: classify each in TABLE',
    ).toEqual([]);
    expect(
      Object.keys(TABLE).filter((r) => !routes.includes(r)),
      'rows for routes the server does not have',
    ).toEqual([]);
  });

  it('tenant A: streams of each family, addresses, an xpub, delivered and failed webhooks, settings, profiles, pending signatures, two keys', async () => {
    [a.key, a.sameTenantKey, b.key] = (await newKeys([
      { name: 'tenant-a' },
      { name: 'tenant-a-2', tenant: 'tenant-a' },
      { name: 'tenant-b' },
    ])) as [string, string, string];
    a.keyIds = [keyId(a.key), keyId(a.sameTenantKey)];
    const ok = (r: Answer, status = 200) => {
      expect(r.status, JSON.stringify(r.body)).toBe(status);
      return r.body;
    };
    a.streams = {} as TenantA['streams'];
    for (const f of FAMILIES) {
      a.streams[f] = ok(
        await callA(`/streams/${f}`, {
          method: 'PUT',
          json: { webhookUrl: `${rx.url}?tenant=a`, description: 'tenant-a-secret', tag: 'tenant-a-tag', ...STREAM[f] },
        }),
      ).id;
      ok(await callA(`/streams/${f}/${a.streams[f]}/address`, { method: 'POST', json: { address: [ADDRESS[f], OTHER_ADDRESS[f]] } }));
    }
    a.xpubId = ok(await callA(`/streams/bitcoin/${a.streams.bitcoin}/xpub`, { method: 'POST', json: { xpub: XPUB } })).id;
    ok(await callA('/settings', { method: 'POST', json: { region: 'eu-central-1' } }));
    a.secretKey = ok(await callA('/settings')).secretKey;

    // A: two deliveries and two failures (blocks 3 and 4); B's stream: one of each of its own (block 11 fails).
    rx.state.answer = (r) => (['3', '4', '11'].includes(r.body?.block?.number) ? 500 : 200);
    ok(
      await callA(`/admin/streams/${a.streams.evm}/webhooks`, {
        method: 'POST',
        json: { webhooks: [webhook(1), webhook(2), webhook(3), webhook(4)] },
      }),
    );
    const callB = apiCaller(s.url, b.key);
    b.evm = ok(await callB('/streams/evm', { method: 'PUT', json: { webhookUrl: `${rx.url}?tenant=b`, ...STREAM.evm } })).id;
    b.streams.add(b.evm);
    ok(await callB(`/admin/streams/${b.evm}/webhooks`, { method: 'POST', json: { webhooks: [webhook(10), webhook(11)] } }));
    await advance(s, 0);
    const history = ok(await callA('/history?limit=100'));
    const failed = history.result.find(
      (h: { streamId: string; deliveredAt: string | null }) => h.streamId === a.streams.evm && h.deliveredAt === null,
    );
    expect(failed, JSON.stringify(history)).toBeDefined();
    a.failedHistoryId = failed.id;
    const logs = ok(await callA('/history/logs?limit=100'));
    a.recordIds = [...history.result, ...logs.result].map((r: { id: string }) => r.id);
    expect(ok(await callA('/stats'))).toMatchObject({ totalWebhooksDelivered: 2, totalWebhooksFailed: 2 });
    expect(ok(await callB('/stats'))).toMatchObject({ totalWebhooksDelivered: 1, totalWebhooksFailed: 1 });

    // Profiles: a sign-in with each family, a bind of two addresses; then signed messages left pending.
    const evm = privateKeyToAccount(generatePrivateKey());
    a.evmAddress = evm.address;
    a.solanaKey = edKey();
    a.aptosKey = edKey();
    const request = async (family: 'evm' | 'solana' | 'aptos') => {
      const body =
        family === 'evm'
          ? { chainId: 1, address: evm.address }
          : family === 'solana'
            ? { network: 'mainnet', address: a.solanaKey.solana }
            : { network: 'mainnet', address: a.aptosKey.aptos, publicKey: a.aptosKey.publicKey };
      const r = ok(await callA(`/challenge/request/${family}`, { method: 'POST', json: { ...SIGN_IN, ...body } }), 201);
      const signature =
        family === 'evm'
          ? await evm.signMessage({ message: r.message })
          : family === 'solana'
            ? bs58.encode(a.solanaKey.sign(r.message))
            : `0x${bytesToHex(a.aptosKey.sign(r.message))}`;
      return { message: r.message as string, signature };
    };
    a.profiles = {} as TenantA['profiles'];
    for (const family of ['evm', 'solana', 'aptos'] as const)
      a.profiles[family] = ok(await callA(`/challenge/verify/${family}`, { method: 'POST', json: await request(family) }), 201).profileId;
    a.pending = {
      challenge: { evm: await request('evm'), solana: await request('solana'), aptos: await request('aptos') },
    } as TenantA['pending'];

    const bindEvm = privateKeyToAccount(generatePrivateKey());
    const bindSol = edKey();
    a.boundSolana = bindSol.solana;
    const bind = async (evmKey: typeof bindEvm, solKey: ReturnType<typeof edKey>) => {
      const { messages } = ok(
        await callA('/bind/request', {
          method: 'POST',
          json: {
            addresses: [
              { blockchainType: 'evm', address: evmKey.address },
              { blockchainType: 'solana', address: solKey.solana },
            ],
          },
        }),
        201,
      );
      return [
        { message: messages[0], signature: await evmKey.signMessage({ message: messages[0] }) },
        { message: messages[1], signature: bs58.encode(solKey.sign(messages[1])) },
      ];
    };
    a.profiles.bound = ok(
      await callA('/bind/request/verify', { method: 'POST', json: { verifications: await bind(bindEvm, bindSol) } }),
      201,
    ).profileId;
    a.pending.bind = await bind(privateKeyToAccount(generatePrivateKey()), edKey());
    const { message } = ok(
      await callA('/bind/remove', {
        method: 'POST',
        json: { blockchainType: 'solana', address: bindSol.solana, profileId: a.profiles.bound },
      }),
      201,
    );
    a.pending.unbind = { message, signature: bs58.encode(bindSol.sign(message)) };
  });

  it("tenant B, on every route against A's ids: 404 for A's things, its own in lists, nothing of A's in any answer; A's state the same afterwards", async () => {
    const before = await snapshotA();
    const aWebhooks = () => rx.received.filter((r) => Object.values(a.streams).includes(r.body?.streamId)).length;
    const sentToA = aWebhooks();
    const callB = apiCaller(s.url, b.key);
    const secrets = [
      ...Object.values(a.streams),
      ...a.keyIds,
      a.xpubId,
      ...a.recordIds,
      ...Object.values(a.profiles),
      a.secretKey,
      'tenant=a',
      'tenant-a-secret',
      'tenant-a-tag',
    ];
    let calls = 0;
    for (const route of routes) {
      const row = TABLE[route]!;
      for (const call of row.calls(a, b)) {
        const json = JSON.stringify(call.json ?? {}).replace('RECEIVER', rx.url);
        const r = await callB(call.path, {
          method: call.method,
          ...(call.json === undefined ? {} : { body: json, headers: { 'content-type': 'application/json' } }),
        });
        calls++;
        const text = typeof r.body === 'string' ? r.body : JSON.stringify(r.body);
        // What B sent it may see again (a 404 names the id asked for); anything else of A's is a leak.
        for (const secret of secrets)
          if (!call.path.includes(secret) && !json.includes(secret))
            expect(text, `${route}: ${call.method} ${call.path} answered ${secret}`).not.toContain(secret);
        if ('none' in row) expect(r.status, `${route}: ${text}`).not.toBe(500);
        else row.expect(r, a, b, { ...call, json });
      }
    }
    expect(calls).toBeGreaterThanOrEqual(routes.length);
    expect(await snapshotA()).toEqual(before);
    expect(aWebhooks(), "webhooks of A sent during B's calls (a replay)").toBe(sentToA);
  });

  it("A's signed messages that B replayed still verify for A", async () => {
    for (const family of ['evm', 'solana', 'aptos'] as const) {
      const r = await callA(`/challenge/verify/${family}`, { method: 'POST', json: a.pending.challenge[family] });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      expect(r.body.profileId).toBe(a.profiles[family]);
    }
    expect((await callA('/bind/request/verify', { method: 'POST', json: { verifications: a.pending.bind } })).status).toBe(201);
    expect((await callA('/bind/remove/verify', { method: 'POST', json: a.pending.unbind })).body).toEqual({ profileId: a.profiles.bound });
  });
});
