import { appendFileSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_BODY_BYTES } from '../engine/size-limits.js';
import { paramNames, type Area, type Route } from '../http/server/route.js';
import { startProcess } from './kit/proc.js';
import { BIN, TEST_KEY, tempDir, type Running, apiCaller } from './helpers.js';
import { startReceiver } from './receiver.js';
import { codePoint } from './fuzz-strings.js';
import { serverRoutes } from './in-process.js';

/**
 * Bad input gets a clear answer, never a crash: every route of the server, as the server
 * assembles them (createCore's list, so a route added later is fuzzed too), gets fast-check requests
 * with odd path parameters, query strings, headers and bodies, against the real server. Each answer:
 * not a 500, within REQUEST_MS, and a 400 names the bad field (see namesField). The server's RSS is
 * sampled before and after. FUZZ_RUNS (default 10) cases per route, FUZZ_SEED (default 19);
 * `npm run test:fuzz` runs 400 per route.
 */

const RUNS = Number(process.env['FUZZ_RUNS'] ?? 10);
const SEED = Number(process.env['FUZZ_SEED'] ?? 19);
/** FUZZ_TRACE=file: every case appended to it as it is sent. */
const TRACE = process.env['FUZZ_TRACE'];
/** No answer within this long is a hang (the slowest legitimate answer, a stream's test webhook, goes to a local receiver). */
const REQUEST_MS = 10_000;
/** The server's own resident memory (RssAnon) may grow by at most this much over the whole run (bodies up to 1 MiB, streams created). */
const RSS_GROWTH_MB = 192;

const AREAS: Record<Area, true> = {
  system: true,
  admin: true,
  auth: true,
  keys: true,
  streams: true,
  data: true,
  crosschain: true,
  rpc: true,
};

/** The routes exactly as the server assembles them, with the test clock's (its admin routes). */
const ROUTES = await serverRoutes({ CHAINPOST_API_KEY: TEST_KEY, CHAINPOST_TEST_CLOCK: '1' });
const keyOf = (r: Route): string => `${r.method} ${r.pattern}`;
/** The test clock's jump moves what every other route sees (removal dates, expiries): fuzzed last. */
const ORDERED = [
  ...ROUTES.filter((r) => r.pattern !== '/admin/clock/advance'),
  ...ROUTES.filter((r) => r.pattern === '/admin/clock/advance'),
];

// ---- values -------------------------------------------------------------------------------------

const ANVIL0 = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266';
const ANVIL1 = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const SOL_KEY = 'FVen3X669xLzsi6N2V91DoiyzHzg1uAgqiT8jZ9nS96Z';
const APTOS = {
  address: '0x63c5215e87770d17b9f4cd47c777e322f4eb152cfd2054c1080fd9d57c48913b',
  publicKey: '0xd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a',
};
const BTC_ADDR = 'bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq';
const XPUB = 'xpub661MyMwAqRbcFtXgS5sYJABqqG9YLmC4Q1Rdap9gSE8NqtwybGhePY2gZ29ESFjqJoCu1Rupje8YtGqsefD265TMg7usUDFdp6W1EGMcet8';
const HASH = `0x${'ab'.repeat(32)}`;
const SIWE = JSON.parse(readFileSync(new URL('./fixtures/vectors/derived/evm_personal_sign.json', import.meta.url), 'utf8')).cases[0] as {
  message: string;
  signature: string;
};
const TRANSFER = 'Transfer(address,address,uint256)';
const TRANSFER_ABI = {
  type: 'event',
  name: 'Transfer',
  anonymous: false,
  inputs: [
    { name: 'from', type: 'address', indexed: true },
    { name: 'to', type: 'address', indexed: true },
    { name: 'value', type: 'uint256', indexed: false },
  ],
};
const BALANCE_OF = {
  type: 'function',
  name: 'balanceOf',
  stateMutability: 'view',
  inputs: [{ name: 'owner', type: 'address' }],
  outputs: [{ name: '', type: 'uint256' }],
};

/** Stream ids made in beforeAll, one per family: path parameters that reach the handlers past the id check. */
const streamIds: string[] = [];
let webhookUrl = '';

/** A well-formed value per path parameter name, so a case can get past one parameter to fuzz the next. */
function goodParams(name: string): string[] {
  const uuid = '00000000-0000-4000-8000-000000000000';
  const table: Record<string, string[]> = {
    id: [...streamIds, uuid],
    streamId: [...streamIds, uuid],
    historyId: [uuid],
    xpubId: [uuid],
    chain: ['0x539', 'eth', '1337'],
    apiKey: [TEST_KEY],
    chainId: ['bitcoin', 'solana', 'mainnet', '0x539'],
    blockNumber: ['0', '1', '840000'],
    hash: [HASH],
    block_number_or_hash: ['0', '1', HASH],
    token_id: ['1', '0'],
    domain: ['vitalik.eth', 'brad.crypto'],
    profileId: [HASH],
    network: ['eth', 'base', 'solana'],
    exchange: ['pumpfun'],
    exchangeName: ['pumpfun'],
    categoryId: ['defi'],
    entityId: ['binance'],
  };
  return table[name] ?? [ANVIL0, ANVIL1];
}

/** Query parameter names the data and streams APIs take; a route also learns the fields its 400s name. */
const QUERY_NAMES = [
  'chain',
  'chains',
  'limit',
  'cursor',
  'order',
  'from_block',
  'to_block',
  'from_date',
  'to_date',
  'date',
  'block',
  'format',
  'exclude_spam',
  'include',
  'normalizeMetadata',
  'media_items',
  'token_addresses',
  'contract_addresses',
  'addresses',
  'address',
  'wallet_addresses',
  'token_address',
  'owner_address',
  'spender_address',
  'timeframe',
  'currency',
  'days',
  'disable_total',
  'include_prices',
  'exclude_native',
  'token_id',
  'q',
  'query',
  'topic',
  'topic0',
  'topic1',
  'topic2',
  'topic3',
  'function_name',
  'excludePayload',
  'transactionTypes',
  'exchange',
  'mode',
  'max_token_addresses',
  'min_pair_side_liquidity_usd',
  'offset',
  'type',
  'include_internal_transactions',
  'include_input_data',
  'nft_metadata',
  'interval',
  'excludeSpam',
  'params',
  'abi',
  'resolve',
  'currencies',
];

/** Numbers past 2^53 and other numeric edges, as text. */
const numberText = fc.oneof(
  fc.bigInt({ min: 2n ** 53n, max: 2n ** 256n }).map(String),
  fc.bigInt({ min: -(2n ** 256n), max: -1n }).map(String),
  fc.constantFrom(
    '9007199254740993',
    '18446744073709551616',
    '1e400',
    '-1e400',
    '1e-400',
    '-0',
    '0.5',
    '1.5e3',
    'NaN',
    'Infinity',
    '-1',
    '00',
    '0x',
    `0x${'f'.repeat(64)}`,
    `0x${'f'.repeat(65)}`,
    '0xZZ',
    '4294967296',
    '4294967295',
  ),
);
const hexLike = fc.oneof(fc.stringMatching(/^0x[0-9a-fA-F]{0,70}$/), fc.stringMatching(/^[0-9a-f]{40,66}$/));
const specials = fc.constantFrom(
  '',
  ' ',
  '../..',
  '%',
  '%zz',
  '%E0%A4%A',
  '%00',
  '__proto__',
  'constructor',
  'toString',
  '\u0000',
  'null',
  'undefined',
  'true',
  '[]',
  '{}',
  '💥',
  '\u202e',
  '\ud800',
  'a,b,,c',
  'x'.repeat(1500),
);
/** Arbitrary text for a parameter, a header or a field. */
const text = fc.oneof(
  { weight: 3, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }) },
  { weight: 1, arbitrary: fc.string({ unit: codePoint, maxLength: 20 }) },
  { weight: 2, arbitrary: numberText },
  { weight: 2, arbitrary: hexLike },
  { weight: 2, arbitrary: specials },
);

/** UTF-8 bytes as the latin1 characters node:http writes them as (it refuses anything above U+00FF in a path or header). */
const asBytes = (s: string): string => Buffer.from(s, 'utf8').toString('latin1');
/** A header value node:http sends: UTF-8 bytes, with the control characters it refuses (all but tab) as spaces. */
const headerValue = (s: string): string => asBytes(s).replace(/[\u0000-\u0008\u000a-\u001f\u007f]/g, ' ');
/** Percent-encoding of the UTF-8 bytes (encodeURIComponent throws on a lone surrogate). */
const percent = (s: string): string =>
  [...Buffer.from(s, 'utf8')]
    .map((b) =>
      /[A-Za-z0-9\-._~]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`,
    )
    .join('');
/** A component as sent: percent-encoded, or raw bytes (spaces and controls still encoded: node refuses them in a path). */
const encoded = (s: string, raw: boolean): string =>
  raw
    ? asBytes(s).replace(/[\u0000-\u0020\u007f#?/]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`)
    : percent(s);

/** A JSON value written as raw text (numbers past 2^53, 1e400): JSON.stringify cannot. */
class Raw {
  constructor(readonly text: string) {}
}
function toJson(v: unknown): string {
  if (v instanceof Raw) return v.text;
  if (Array.isArray(v)) return `[${v.map(toJson).join(',')}]`;
  if (v !== null && typeof v === 'object')
    return `{${Object.entries(v)
      .map(([k, x]) => `${JSON.stringify(k)}:${toJson(x)}`)
      .join(',')}}`;
  return JSON.stringify(v) ?? 'null';
}
/** A JSON array of `n` (at least 1) copies of `item` (JSON text), written as toJson writes it: for the bodies near the size limit, whose arrays of a million elements toJson built for seconds per route. */
const repeatedJson = (item: string, n: number): Raw => new Raw(`[${`${item},`.repeat(n - 1)}${item}]`);
const nested = (depth: number, kind: 'array' | 'object'): Raw =>
  new Raw(kind === 'array' ? `${'['.repeat(depth)}${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`);

/** A value of the wrong type (or the right type, oddly filled) for any field. */
const wrongValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 2, arbitrary: numberText.filter((t) => /^-?\d+(\.\d+)?(e-?\d+)?$/.test(t)).map((t) => new Raw(t)) },
  { weight: 2, arbitrary: text },
  { weight: 1, arbitrary: fc.constantFrom(null, true, false, 0, -1, 1.5, [], {}, [null], { '': null }) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.integer({ min: 1, max: 10_000 }), fc.constantFrom('array' as const, 'object' as const))
      .map(([d, k]) => nested(d, k)),
  },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 1_000, max: 30_000 }).map((n) => Array.from({ length: n }, (_, i) => (i % 2 === 0 ? ANVIL0 : i))),
  },
  { weight: 1, arbitrary: fc.integer({ min: 10_000, max: 500_000 }).map((n) => '\u00e9'.repeat(n)) },
);

// ---- bodies -------------------------------------------------------------------------------------

/** A well-formed body per body route (what the interface documents), mutated one field at a time. */
function sampleBody(route: Route): unknown {
  const evmStream = {
    webhookUrl,
    description: 'fuzz',
    tag: 'fuzz',
    chainIds: ['0x539'],
    topic0: [TRANSFER],
    includeContractLogs: true,
    includeNativeTxs: true,
    abi: [TRANSFER_ABI],
    advancedOptions: [{ topic0: TRANSFER, filter: { gt: ['value', '1000'] } }],
    getNativeBalances: [{ selectors: ['$fromAddress'], type: 'tx' }],
    allAddresses: false,
    demo: false,
    triggers: null,
  };
  const bitcoinStream = {
    webhookUrl,
    description: 'fuzz',
    tag: 'fuzz',
    network: ['mainnet'],
    includeInputs: true,
    includeOutputs: true,
    allAddresses: false,
  };
  const solanaStream = {
    webhookUrl,
    description: 'fuzz',
    tag: 'fuzz',
    network: ['mainnet'],
    programIds: [SOL_KEY],
    mintAddresses: [SOL_KEY],
    allAddresses: false,
  };
  const signIn = {
    domain: 'defi.finance',
    uri: 'https://defi.finance/',
    statement: 'Please confirm',
    timeout: 60,
    expirationTime: '2030-01-01T00:00:00.000Z',
    resources: ['https://docs.moralis.io/'],
  };
  const family = /^\/streams\/(evm|bitcoin|solana)/.exec(route.pattern)?.[1];
  const stream = family === 'bitcoin' ? bitcoinStream : family === 'solana' ? solanaStream : evmStream;
  const address = family === 'bitcoin' ? BTC_ADDR : family === 'solana' ? SOL_KEY : ANVIL0;
  const bodies: Record<string, unknown> = {
    'POST /admin/clock/advance': { seconds: 1 },
    'PUT /streams/:family': stream,
    'POST /streams/:family/:id': { description: 'changed', tag: 'changed' },
    'POST /streams/:family/:id/status': { status: 'active' },
    'POST /streams/:family/:id/address': { address: [address] },
    'DELETE /streams/:family/:id/address': { address },
    'POST /streams/bitcoin/:id/xpub': { xpub: XPUB },
    'POST /streams/bitcoin/:chainId/block/:blockNumber': {
      tag: 'fuzz',
      allAddresses: false,
      includeInputs: true,
      includeOutputs: true,
      addresses: [BTC_ADDR],
    },
    'POST /streams/solana/:chainId/block/:blockNumber': {
      tag: 'fuzz',
      allAddresses: false,
      addresses: [SOL_KEY],
      programIds: [SOL_KEY],
      mintAddresses: [],
    },
    'POST /settings': { region: 'eu-central-1' },
    'POST /keys': { name: 'fuzz-key', email: 'ops@example.com' },
    'POST /keys/:id/rotate': { graceSeconds: 60 },
    'POST /admin/streams/:id/webhooks': { webhooks: [{ chainId: '0x539', confirmed: true, block: { number: '1' } }] },
    'POST /challenge/request/evm': { ...signIn, chainId: 1, address: ANVIL0 },
    'POST /challenge/request/solana': { ...signIn, network: 'mainnet', address: SOL_KEY },
    'POST /challenge/request/aptos': { ...signIn, network: 'mainnet', ...APTOS },
    'POST /challenge/verify/evm': SIWE,
    'POST /challenge/verify/solana': SIWE,
    'POST /challenge/verify/aptos': SIWE,
    'POST /bind/request': {
      addresses: [
        { blockchainType: 'evm', address: ANVIL0 },
        { blockchainType: 'solana', address: SOL_KEY },
        { blockchainType: 'aptos', ...APTOS },
      ],
    },
    'POST /bind/request/verify': { verifications: [SIWE] },
    'POST /bind/remove': { blockchainType: 'evm', address: ANVIL0, profileId: HASH },
    'POST /bind/remove/verify': SIWE,
    'POST /api/v2.2/erc20/prices': {
      tokens: [
        { token_address: ANVIL0, to_block: 1 },
        { token_address: ANVIL1, exchange: 'uniswapv2' },
      ],
    },
    'POST /api/v2.2/nft/getMultipleNFTs': {
      tokens: [{ token_address: ANVIL0, token_id: '1' }],
      normalizeMetadata: true,
      media_items: false,
    },
    'POST /api/v2.2/tokens/analytics': { tokens: [{ chain: '0x539', tokenAddress: ANVIL0 }] },
    'POST /api/v2.2/tokens/analytics/timeseries': { tokens: [{ chain: '0x539', tokenAddress: ANVIL0 }] },
    'POST /api/v2.2/nft/:address/nfts-by-traits': { traits: { Background: 'Blue', Level: [1, '2'] } },
    'POST /api/v2.2/nft/metadata': { addresses: [ANVIL0, ANVIL1] },
    'POST /api/v2.2/:address/events': TRANSFER_ABI,
    'POST /api/v2.2/:address/function': { abi: [BALANCE_OF], params: { owner: ANVIL0 } },
    'POST /rpc/:chain/:apiKey': { jsonrpc: '2.0', id: 1, method: 'eth_getBalance', params: [ANVIL0, 'latest'] },
  };
  const key = keyOf(route).replace(/^(\w+) \/streams\/(evm|bitcoin|solana)(?=$|\/:id)/, '$1 /streams/:family');
  return bodies[key] ?? bodies[keyOf(route)] ?? {};
}

/** Every place in a value a mutation can land: its own path and those of everything inside. */
function paths(v: unknown, at: ReadonlyArray<string | number> = []): Array<ReadonlyArray<string | number>> {
  const inner = Array.isArray(v)
    ? v.flatMap((x, i) => paths(x, [...at, i]))
    : v !== null && typeof v === 'object'
      ? Object.entries(v).flatMap(([k, x]) => paths(x, [...at, k]))
      : [];
  return [at, ...inner];
}
function replaced(v: unknown, at: ReadonlyArray<string | number>, value: unknown, drop: boolean): unknown {
  if (at.length === 0) return value;
  const [head, ...rest] = at;
  const copy: any = Array.isArray(v) ? [...v] : { ...(v as object) };
  if (drop && rest.length === 0) {
    if (Array.isArray(copy)) copy.splice(head as number, 1);
    else delete copy[head!];
  } else copy[head!] = replaced(copy[head!], rest, value, drop);
  return copy;
}

interface BodyCase {
  text: string;
  contentType: string | undefined;
  what: string;
}

const contentType = fc.oneof(
  { weight: 8, arbitrary: fc.constant('application/json') },
  {
    weight: 2,
    arbitrary: fc.constantFrom(undefined, 'text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=latin1', '*/*'),
  },
  { weight: 1, arbitrary: text.map(headerValue) },
);

function bodyArb(route: Route): fc.Arbitrary<BodyCase> {
  const mutated = fc.tuple(fc.nat(), wrongValue, fc.nat(5)).map(([i, value, how]) => {
    const sample = sampleBody(route);
    const all = paths(sample);
    const at = all[i % all.length]!;
    // how 0: the field dropped; 1: an unknown field added beside it; else: replaced.
    const out =
      how === 1
        ? replaced(sample, [...at.slice(0, -1), `x${i % 7}`], value, false)
        : replaced(sample, at, value, how === 0 && at.length > 0);
    return { text: toJson(out), what: `${at.join('.') || '(body)'} ${how === 0 ? 'dropped' : how === 1 ? 'unknown beside' : 'replaced'}` };
  });
  const whole = fc.oneof(
    fc.jsonValue().map((v) => ({ text: JSON.stringify(v) ?? 'null', what: 'any JSON' })),
    fc.string({ maxLength: 60 }).map((s) => ({ text: s, what: 'not JSON' })),
    fc
      .constantFrom('', 'null', '[]', '{}', '{"a":1', '\ufeff{}', '[1,]', '{"__proto__":{"x":1}}', 'NaN')
      .map((s) => ({ text: s, what: 'odd body' })),
    numberText.map((s) => ({ text: s, what: 'a number' })),
  );
  return fc
    .tuple(
      fc.oneof(
        { weight: 6, arbitrary: mutated },
        { weight: 1, arbitrary: fc.constant({ text: toJson(sampleBody(route)), what: 'sample' }) },
        { weight: 2, arbitrary: whole },
      ),
      contentType,
    )
    .map(([b, ct]) => ({ ...b, contentType: ct }));
}

// ---- requests -----------------------------------------------------------------------------------

interface Case {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: BodyCase;
}

/** A path parameter: a good value most often enough to reach the next check, else anything. */
const paramArb = (name: string): fc.Arbitrary<string> =>
  fc
    .oneof(
      { weight: 3, arbitrary: fc.constantFrom(...goodParams(name)).map((v) => ({ v, raw: false })) },
      { weight: 4, arbitrary: fc.tuple(text, fc.boolean()).map(([v, raw]) => ({ v, raw })) },
    )
    .map(({ v, raw }) => encoded(v, raw));

/** Query parameters: known names of the route (learned as it answers), others, repeated, list forms; chain 0x539 (followed) most often. */
function queryArb(learned: Set<string>): fc.Arbitrary<string> {
  const name = fc.oneof(
    {
      weight: 4,
      arbitrary: fc.nat().map((i) => {
        const all = [...learned, ...QUERY_NAMES];
        return all[i % all.length]!;
      }),
    },
    { weight: 1, arbitrary: text },
  );
  const form = fc.constantFrom('', '', '', '[]', '[0]', '[x]');
  const pair = fc.tuple(name, form, text, fc.boolean()).map(([n, f, v, raw]) => `${encoded(n, raw)}${f}=${encoded(v, raw)}`);
  const chain = fc.oneof({ weight: 4, arbitrary: fc.constant(['chain=0x539']) }, { weight: 1, arbitrary: fc.constant([] as string[]) });
  const oddRaw = fc.constantFrom('&&&', '=', '==', 'a', '%', 'a=%zz', 'a=%E0%A4%A', '&=&', 'chain=0x539&chain=0x1');
  return fc
    .tuple(chain, fc.array(pair, { maxLength: 6 }), fc.option(oddRaw, { freq: 8 }))
    .map(([c, ps, odd]) => [...c, ...ps, ...(odd === null ? [] : [odd])].join('&'));
}

/** Headers: the key in x-api-key most often; else odd keys and Authorization forms; the route's own headers and unknown ones, oddly filled. */
type Headers = Record<string, string>;

function headersArb(route: Route): fc.Arbitrary<Headers> {
  const auth: fc.Arbitrary<Headers> =
    route.auth === 'key'
      ? fc.oneof(
          { weight: 10, arbitrary: fc.constant<Headers>({ 'x-api-key': TEST_KEY }) },
          { weight: 2, arbitrary: fc.constant<Headers>({ authorization: `Bearer ${TEST_KEY}` }) },
          {
            weight: 1,
            arbitrary: fc.constantFrom<Headers>(
              { authorization: 'Bearer' },
              { authorization: 'Bearer ' },
              { authorization: `bearer   ${TEST_KEY}  ` },
              { authorization: 'Basic Zm9vOmJhcg==' },
              { 'x-api-key': '' },
              { 'x-api-key': `${TEST_KEY} ` },
              { 'x-api-key': 'k'.repeat(3000) },
            ),
          },
          { weight: 1, arbitrary: text.map((t): Headers => ({ 'x-api-key': headerValue(t) })) },
          { weight: 1, arbitrary: text.map((t): Headers => ({ authorization: `Bearer ${headerValue(t)}` })) },
        )
      : fc.constant({} as Record<string, string>);
  const names = [...(route.headers ?? []), 'x-request-id', 'accept', 'accept-encoding', 'x-forwarded-for', 'origin', 'x-unknown'];
  const extra = fc
    .array(fc.tuple(fc.constantFrom(...names), text.map(headerValue)), { maxLength: 3 })
    .map((pairs) => Object.fromEntries(pairs));
  return fc.tuple(auth, extra).map(([a, e]) => ({ ...e, ...a }));
}

function caseArb(route: Route, learned: Set<string>): fc.Arbitrary<Case> {
  const names = paramNames(route.pattern);
  const wild = route.pattern.endsWith('/*');
  const method = route.method === 'ANY' ? fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH') : fc.constant(route.method);
  return fc
    .tuple(
      method,
      fc.tuple(...names.map(paramArb), fc.constant('')),
      wild ? fc.array(text, { maxLength: 3 }).map((ss) => ss.map((s) => encoded(s, false)).join('/')) : fc.constant(''),
      queryArb(learned),
      headersArb(route),
      route.body === true ? bodyArb(route) : fc.constant(undefined),
    )
    .map(([m, values, rest, query, headers, body]) => {
      let i = 0;
      const path = route.pattern
        .split('/')
        .map((seg) => (seg.startsWith(':') ? values[i++]! : seg === '*' ? rest : seg))
        .join('/');
      return { method: m, path: `${path}${query === '' ? '' : `?${query}`}`, headers, ...(body === undefined ? {} : { body }) };
    });
}

/** The fixed cases of a route: nesting 10,000 deep, bodies at and past the size limit, a wrong content type, oversized headers and paths. */
function edgeCases(route: Route): Case[] {
  const headers: Headers = route.auth === 'key' ? { 'x-api-key': TEST_KEY } : {};
  const path = route.pattern
    .split('/')
    .map((seg) => (seg.startsWith(':') ? encoded(goodParams(seg.slice(1))[0]!, false) : seg === '*' ? 'x' : seg))
    .join('/')
    .replace(':apiKey', TEST_KEY);
  const method = route.method === 'ANY' ? 'POST' : route.method;
  const out: Case[] = [
    { method, path: `${path}?${'a'.repeat(2000)}=${'1'.repeat(1000)}`, headers },
    { method, path: `${path}?chain=0x539&${Array.from({ length: 200 }, (_, i) => `limit=${i}`).join('&')}`, headers },
    { method, path, headers: { ...headers, 'x-unknown': 'v'.repeat(3000) } },
  ];
  if (route.body !== true) return out;
  const sample = sampleBody(route);
  const json = (text: string, what: string, ct: string | undefined = 'application/json'): Case => ({
    method,
    path: `${path}?chain=0x539`,
    headers,
    body: { text, contentType: ct, what },
  });
  const tops = sample !== null && typeof sample === 'object' && !Array.isArray(sample) ? Object.keys(sample) : [];
  const firstArray = paths(sample).find((p) => p.length > 0 && Array.isArray(p.reduce<any>((v, k) => v[k], sample)));
  const firstString = paths(sample).find((p) => typeof p.reduce<any>((v, k) => v?.[k], sample) === 'string');
  const room = MAX_BODY_BYTES - toJson(sample).length - 64;
  out.push(
    json(nested(10_000, 'array').text, 'nested arrays 10,000 deep'),
    json(nested(10_000, 'object').text, 'nested objects 10,000 deep'),
    json(toJson(sample), 'sample, text/plain', 'text/plain'),
    json(toJson(sample), 'sample, no content type', undefined),
    json(' '.repeat(MAX_BODY_BYTES + 1), 'one byte past the limit (413)'),
    ...tops.map((k) => json(toJson(replaced(sample, [k], nested(10_000, 'array'), false)), `${k} nested 10,000 deep`)),
    ...tops.map((k) => json(toJson(replaced(sample, [k], nested(5_000, 'object'), false)), `${k} nested objects 5,000 deep`)),
  );
  if (firstString !== undefined)
    out.push(
      json(toJson(replaced(sample, firstString, 'x'.repeat(room), false)), `${firstString.join('.')}: a string near the 1 MiB limit`),
    );
  if (firstArray !== undefined)
    out.push(
      json(
        toJson(replaced(sample, firstArray, repeatedJson(JSON.stringify(ANVIL0), Math.floor(room / 44)), false)),
        `${firstArray.join('.')}: an array near the 1 MiB limit`,
      ),
    );
  out.push(json(repeatedJson('1', Math.floor(room / 2)).text, 'an array of 500,000 numbers'));
  return out;
}

// ---- the checks ---------------------------------------------------------------------------------

interface Answer {
  status: number;
  text: string;
  json: any;
}

const agent = new Agent({ keepAlive: true, maxSockets: 1 });
let port = 0;

function send(c: Case): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const body = c.body === undefined ? undefined : Buffer.from(c.body.text, 'utf8');
    const headers: Record<string, string | number> = { ...c.headers };
    if (c.body?.contentType !== undefined) headers['content-type'] = c.body.contentType;
    if (body !== undefined) headers['content-length'] = body.length;
    const req = request({ host: '127.0.0.1', port, method: c.method, path: c.path, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (b: Buffer) => chunks.push(b));
      res.on('end', () => {
        const t = Buffer.concat(chunks).toString('utf8');
        let parsed: unknown;
        try {
          parsed = JSON.parse(t);
        } catch {
          parsed = undefined;
        }
        resolve({ status: res.statusCode ?? 0, text: t, json: parsed });
      });
      res.on('error', reject);
    });
    req.setTimeout(REQUEST_MS, () => req.destroy(new Error(`no answer within ${REQUEST_MS} ms (a hang)`)));
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * What names the field in a 400: `details.field` is a non-empty string and the message begins with it and a colon
 * (`chain: …`, `tokens.0.token_address: …`), as engine/errors.ts's badRequest and engine/schema.ts's validate write it
 * (or, for field body, `malformed JSON body: …`).
 * Node access answers JSON-RPC errors: there the error's message begins so.
 */
function namesField(route: Route, a: Answer): string | undefined {
  const message = route.errors === 'jsonrpc' ? a.json?.error?.message : a.json?.message;
  const field =
    route.errors === 'jsonrpc'
      ? typeof message === 'string'
        ? /^(?:([^\s:]+): |malformed JSON (body): )/
            .exec(message)
            ?.slice(1)
            .find((f) => f !== undefined)
        : undefined
      : a.json?.details?.field;
  if (typeof field !== 'string' || field === '' || typeof message !== 'string') return undefined;
  // The one fixed wording that predates the rule (test/server.test.ts pins it): a body that is not JSON.
  return message.startsWith(`${field}: `) || (field === 'body' && message.startsWith('malformed JSON body: ')) ? field : undefined;
}

const describeCase = (c: Case): string =>
  `${c.method} ${c.path.length > 300 ? `${c.path.slice(0, 300)}… (${c.path.length} chars)` : c.path}\nheaders: ${JSON.stringify(c.headers).slice(0, 300)}` +
  (c.body === undefined
    ? ''
    : `\nbody (${c.body.what}, ${c.body.contentType ?? 'no content type'}, ${c.body.text.length} chars): ${c.body.text.slice(0, 400)}`);

/** Per route: cases sent, and answers by status. */
const tally = new Map<string, { cases: number; statuses: Map<number, number> }>();

async function check(route: Route, c: Case, learned: Set<string>): Promise<void> {
  const t = tally.get(keyOf(route))!;
  t.cases++;
  if (TRACE !== undefined) appendFileSync(TRACE, `${new Date().toISOString()} ${describeCase(c)}\n`);
  let a: Answer;
  try {
    a = await send(c);
  } catch (err) {
    throw new Error(`${keyOf(route)}: ${(err as Error).message}\n${describeCase(c)}`);
  }
  t.statuses.set(a.status, (t.statuses.get(a.status) ?? 0) + 1);
  if (a.status === 500) throw new Error(`${keyOf(route)} answered 500\n${describeCase(c)}\nanswer: ${a.text.slice(0, 500)}`);
  if (c.body !== undefined && c.body.text.length > MAX_BODY_BYTES && a.status !== 413 && route.auth !== 'path')
    throw new Error(`${keyOf(route)}: a body past the limit answered ${a.status}, not 413\n${describeCase(c)}`);
  if (a.status === 400) {
    const field = namesField(route, a);
    if (field === undefined) throw new Error(`${keyOf(route)}: a 400 that names no field: ${a.text.slice(0, 500)}\n${describeCase(c)}`);
    learned.add(field.split(/[.[]/)[0]!);
  }
}

// ---- the run ------------------------------------------------------------------------------------

let server: Awaited<ReturnType<typeof startProcess>> | undefined;
let receiver: Awaited<ReturnType<typeof startReceiver>> | undefined;
let dir = '';
let rssBefore = { all: 0, anon: 0 };

/**
 * The server's resident memory, MiB: all of it (VmRSS), and its own, anonymous part (RssAnon), which the bound is on:
 * the rest is LMDB's file pages, the store's data as the page cache holds it, which grows with what the run stores.
 */
const rssMb = (): { all: number; anon: number } => {
  const status = readFileSync(`/proc/${server!.child.pid}/status`, 'utf8');
  const kb = (name: string): number => Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status)![1]) / 1024;
  return { all: kb('VmRSS'), anon: kb('RssAnon') };
};

beforeAll(async () => {
  receiver = await startReceiver();
  webhookUrl = receiver.url;
  dir = tempDir();
  // The embedded anvil devnet (CHAINPOST_CHAINS unset), so data and node-access routes reach a node.
  server = await startProcess(
    [BIN, 'serve'],
    {
      CHAINPOST_DATA: dir,
      CHAINPOST_PORT: '0',
      CHAINPOST_API_KEY: TEST_KEY,
      CHAINPOST_CHAINS: undefined,
      CHAINPOST_DEVNET_PORT: '0',
      CHAINPOST_TEST_CLOCK: '1',
      CHAINPOST_ACCESS_LOG: '0',
      CHAINPOST_RATE_LIMIT: '0',
      CHAINPOST_MAX_STREAMS: '200',
    },
    30_000,
  );
  port = server.port;
  const call: Running['call'] = apiCaller(`http://127.0.0.1:${port}`, TEST_KEY);
  for (const family of ['evm', 'bitcoin', 'solana']) {
    const made = await call(`/streams/${family}`, {
      method: 'PUT',
      json: sampleBody(ROUTES.find((r) => keyOf(r) === `PUT /streams/${family}`)!),
    });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    streamIds.push(made.body.id as string);
  }
  for (const r of ROUTES) tally.set(keyOf(r), { cases: 0, statuses: new Map() });
  rssBefore = rssMb();
  console.log(`fuzz: ${ROUTES.length} routes, seed ${SEED}, ${RUNS} generated cases per route (FUZZ_RUNS) plus fixed edge cases`);
}, 60_000);

afterAll(async () => {
  agent.destroy();
  await server?.stop('SIGKILL');
  await receiver?.close();
  if (dir !== '') rmSync(dir, { recursive: true, force: true });
  const lines = [...tally].map(
    ([k, t]) =>
      `${String(t.cases).padStart(6)}  ${k}  ${[...t.statuses]
        .sort(([a], [b]) => a - b)
        .map(([s, n]) => `${s}×${n}`)
        .join(' ')}`,
  );
  const total = [...tally.values()].reduce((n, t) => n + t.cases, 0);
  console.log(
    `fuzz: cases per route (seed ${SEED}, FUZZ_RUNS ${RUNS}):\n${lines.join('\n')}\nfuzz: ${total} cases over ${tally.size} routes`,
  );
});

describe('fuzzing every route', () => {
  it('enumerates the routes of every area', () => {
    expect(ROUTES.length).toBeGreaterThan(100);
    expect(new Set(ROUTES.map((r) => r.area))).toEqual(new Set(Object.keys(AREAS)));
  });

  for (const route of ORDERED) {
    it(`${keyOf(route)}`, async () => {
      const learned = new Set<string>();
      for (const c of edgeCases(route)) await check(route, c, learned);
      await fc.assert(
        fc.asyncProperty(caseArb(route, learned), (c) => check(route, c, learned)),
        { numRuns: RUNS, seed: SEED, endOnFailure: process.env['FUZZ_SHRINK'] !== '1' },
      );
    }, 120_000);
  }

  // What the fuzzer found, kept as explicit cases (each failed before its fix).
  it.each([
    [
      'node access: params nested 10,000 deep (was 500: JSON.stringify overflowed the stack)',
      'POST',
      `/rpc/0x539/${TEST_KEY}`,
      `{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":${nested(10_000, 'array').text}}`,
      400,
    ],
    [
      'a megabyte of base58 digits as a Bitcoin address (held the event loop for minutes)',
      'POST',
      '/streams/bitcoin/:id/address',
      `{"address":"${'x'.repeat(MAX_BODY_BYTES - 100)}"}`,
      400,
    ],
  ])('regression: %s', async (_what, method, path, text, status) => {
    const a = await send({
      method,
      path: path.replace(':id', streamIds[1]!),
      headers: { 'x-api-key': TEST_KEY },
      body: { text, contentType: 'application/json', what: 'regression' },
    });
    expect(a.status, a.text.slice(0, 300)).toBe(status);
  });

  it(`keeps the server's memory bounded (anonymous RSS growth below ${RSS_GROWTH_MB} MiB)`, () => {
    const after = rssMb();
    console.log(
      `fuzz: server RSS ${rssBefore.all.toFixed(0)} MiB before, ${after.all.toFixed(0)} MiB after; anonymous (the bound's) ${rssBefore.anon.toFixed(0)} → ${after.anon.toFixed(0)} MiB`,
    );
    expect(after.anon - rssBefore.anon).toBeLessThan(RSS_GROWTH_MB);
  });
});
