import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { privateKeyToAccount } from 'viem/accounts';
import { formatEther, formatUnits, parseEther, parseEventLogs, parseUnits, type Hex, type TransactionReceipt } from 'viem';
import { buildBlock, coinsOf, mineBlock, owner, parentAt, payTo, spend, type Coin } from './kit/bitcoin-core/build.js';
import { prunedChain } from './kit/bitcoin-core/fixtures.js';
import { BIP84_ZPUB } from './kit/bitcoin-core/keys.js';
import { startBitcoinCore, type BitcoinCore } from './kit/bitcoin-core/server.js';
import { compileContracts, deploy, DEV_ACCOUNTS, mined, publicClient, walletClient } from './contracts.js';
import { transferToken, v2SwapExactIn } from './dex.js';
import { until, type Running } from './helpers.js';
import { decimalText, startPricedDevnet, times, type PricedDevnet, type Ratio } from './priced-devnet.js';

/**
 * The cross-chain wallet endpoints (GET /v1/wallets/:walletAddressOrPublicKey/tokens, /history, /insight) over
 * the priced devnet (anvil, chain 0x539, with pools that price WETH, TKA and TKB; TKB and TKA are both listed as
 * wrapped bitcoin, TKB's pool the deeper) and the Bitcoin Core stand-in together, with a third chain (0x1) whose
 * node never answers. Every figure is computed here from what the test sent: balances from the node
 * (eth_getBalance) and from the Bitcoin outputs built here, fees from the receipts and the built transactions,
 * USD prices from the pools' reserves (getReserves, slot0) at the transactions' blocks and swaps' amounts from their Swap logs.
 */

type Json = Record<string, any>;
const GAP = 3;
const vectors = JSON.parse(
  readFileSync(new URL('./fixtures/bitcoin/xpub-vectors/bip49-84-86-vectors.parsed.json', import.meta.url), 'utf8'),
) as { bip84_mainnet: { entries: Array<{ path: string; address?: string }> } };
const bip84 = (path: string): string => vectors.bip84_mainnet.entries.find((e) => e.path === `m/84'/0'/0'/${path}`)!.address!;

let net: PricedDevnet;
let core: BitcoinCore;
/** Until the last test stops it (its node failing). */
let coreOpen = true;
let s: Running;
const W = DEV_ACCOUNTS[2].address.toLowerCase() as Hex;
const OTHER = DEV_ACCOUNTS[1].address.toLowerCase();
const FUNDER = DEV_ACCOUNTS[0].address.toLowerCase();
/** The wallet's three transactions, oldest first: ether in, TKA in, ether out. */
const sent: Array<{ hash: string; block: number; fee: bigint }> = [];

/** A second wallet, for the insight's USD figures: ether in, a TKA→WETH swap (its transfer and its swap), ether's price moved, ether in and out. */
// anvil's fourth development account.
const W2 = privateKeyToAccount('0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6');
const w2 = W2.address.toLowerCase();
const w2Txs: {
  ins: Array<{ block: number; wei: bigint }>;
  outs: Array<{ block: number; wei: bigint }>;
  initiated: Array<{ block: number; fee: bigint }>;
  swap?: { block: number; wethOut: bigint };
} = { ins: [], outs: [], initiated: [] };
/** A Bitcoin address whose transactions are dated after the devnet's blocks (priced), and what they moved. */
const earner = owner('p2wpkh', 'v1-insight');
let earned: { coinbase: bigint; paid: bigint; fee: bigint };

/** The Bitcoin payer (a plain address) and what the test built: every output, and the ones spent. */
const payer = owner('p2wpkh', 'v1-wallets');
const outputs = new Map<string, { address: string; sats: bigint }>();
const spent = new Set<string>();
let payment: { txid: string; fee: bigint; height: number; paid: bigint };
/** What the coinbase paying the key's change 0 paid it (the block subsidy at its height). */
let changeMined: bigint;
let funding: Coin;

const call = (path: string): Promise<{ status: number; body: Json }> => s.call(path);
const ok = async (path: string): Promise<Json> => {
  const r = await call(path);
  expect(r.status, `${path}: ${JSON.stringify(r.body)}`).toBe(200);
  return r.body;
};
const enc = encodeURIComponent;

/** Ether's USD price at a block: the WETH/USDC pair's reserves then (USDC counts $1, the only pool pricing WETH). */
const ethUsd = (block: number): Promise<Ratio> => net.v2Price(net.wethUsdc, net.dex.tokens.weth.address, block);
/** An amount in smallest units at a USD price per whole coin. */
const usdOf = (raw: bigint, decimals: number, price: Ratio): Ratio => times({ num: raw, den: 10n ** BigInt(decimals) }, price);
const plus = (a: Ratio, b: Ratio): Ratio => ({ num: a.num * b.den + b.num * a.den, den: a.den * b.den });
const num = (r: Ratio): number => Number(decimalText(r, 18));
const USD_FIELDS = [
  'swapVolumeUsd',
  'totalGasSpentUsd',
  'avgGasPerTransactionUsd',
  'nativeVolumeSentUsd',
  'nativeVolumeReceivedUsd',
  'nativeNetFlowUsd',
  'largestNativeTransferInUsd',
  'largestNativeTransferOutUsd',
] as const;
/** Each USD field of the answer (and of its chain breakdown's one chain) against the figures computed here. */
function expectUsd(body: Json, expected: Record<(typeof USD_FIELDS)[number], number>): void {
  for (const k of USD_FIELDS) {
    expect(body[k], k).toBeCloseTo(expected[k], 6);
    expect(body.chainBreakdown[0][k], `chainBreakdown: ${k}`).toBeCloseTo(expected[k], 6);
  }
}

/** Records a built Bitcoin transaction's outputs and spends (what the test sums unspent outputs from). */
function record(
  tx: { getId(): string; outs: Array<{ script: Uint8Array; value: bigint }>; ins: Array<{ hash: Uint8Array; index: number }> },
  addressOf: (script: Uint8Array) => string | undefined,
): void {
  for (const i of tx.ins) spent.add(`${Buffer.from(i.hash).reverse().toString('hex')}:${i.index}`);
  tx.outs.forEach((o, n) => {
    const address = addressOf(o.script);
    if (address !== undefined) outputs.set(`${tx.getId()}:${n}`, { address, sats: o.value });
  });
}
/** The test's own sum of an address set's unspent outputs. */
const unspent = (addresses: readonly string[]): bigint =>
  [...outputs].filter(([k, o]) => !spent.has(k) && addresses.includes(o.address)).reduce((sum, [, o]) => sum + o.sats, 0n);

const bitcoinCaughtUp = async (): Promise<void> => {
  const head = async () =>
    ((await s.call('/health')).body.chains as Array<{ chain: string; head: number }>).find((c) => c.chain === 'bitcoin')?.head;
  expect(await until(async () => (await head()) === core.chain.height, 20_000)).toBe(true);
};

beforeAll(async () => {
  // A pruned node above block 880,000, as mainnet has one: the server starts at its best block.
  core = await startBitcoinCore({ chain: prunedChain() });
  // 0x1's node is a port nothing listens on: every read of it fails.
  net = await startPricedDevnet(
    (anvil) => ({
      CHAINPOST_CHAINS: `0x539=${anvil.url},0x1=http://127.0.0.1:9`,
      CHAINPOST_BITCOIN_RPC: core.url,
      CHAINPOST_BITCOIN_POLL_MS: '50',
      CHAINPOST_BITCOIN_GAP: String(GAP),
    }),
    { wrappedBtc: (t) => [t.tkb, t.tka] },
  );
  s = net.s;
  const url = net.anvil.url;
  const fee = async (hash: Hex) => {
    const r = await mined(url, hash);
    return { hash, block: Number(r.blockNumber), fee: r.gasUsed * r.effectiveGasPrice };
  };
  sent.push(await fee(await (await walletClient(url)).sendTransaction({ to: W, value: parseEther('1') })));
  sent.push(await fee((await transferToken(url, net.dex.tokens.tka.address, W, parseUnits('500', 18))).transactionHash));
  sent.push(
    await fee(await (await walletClient(url, DEV_ACCOUNTS[2])).sendTransaction({ to: DEV_ACCOUNTS[1].address, value: parseEther('0.25') })),
  );
  expect(sent.map((x) => x.block)).toEqual([...new Set(sent.map((x) => x.block))]);

  // W2: 2 ether in; 1,000 TKA in and swapped for WETH on the TKA/WETH pair; the funder buys WETH with 100,000 USDC
  // (ether's price rises); 0.5 ether in, 0.3 and 0.1 ether out.
  const { tka, usdc } = net.dex.tokens;
  const receive = async (wei: bigint) =>
    w2Txs.ins.push({ block: (await fee(await (await walletClient(url)).sendTransaction({ to: W2.address, value: wei }))).block, wei });
  const pay = async (wei: bigint) => {
    const t = await fee(await (await walletClient(url, W2)).sendTransaction({ to: DEV_ACCOUNTS[1].address, value: wei }));
    w2Txs.outs.push({ block: t.block, wei });
    w2Txs.initiated.push(t);
  };
  await receive(parseEther('2'));
  await transferToken(url, tka.address, W2.address, parseUnits('1000', 18));
  const swap = await v2SwapExactIn(url, net.tkaWeth, tka.address, parseUnits('1000', 18), { account: W2 });
  const [log] = parseEventLogs({
    abi: compileContracts().TestV2Pair.abi as never,
    logs: swap.receipt.logs,
    eventName: 'Swap' as never,
  }) as unknown as Array<{ args: Record<string, bigint> }>;
  const wethIs0 = net.tkaWeth.token0.toLowerCase() === net.dex.tokens.weth.address.toLowerCase();
  w2Txs.swap = { block: Number(swap.receipt.blockNumber), wethOut: log!.args[wethIs0 ? 'amount0Out' : 'amount1Out']! };
  const receiptFee = (r: TransactionReceipt) => ({ block: Number(r.blockNumber), fee: r.gasUsed * r.effectiveGasPrice });
  w2Txs.initiated.push(receiptFee(swap.transferReceipt), receiptFee(swap.receipt));
  await v2SwapExactIn(url, net.wethUsdc, usdc.address, parseUnits('100000', 6));
  await receive(parseEther('0.5'));
  await pay(parseEther('0.3'));
  await pay(parseEther('0.1'));

  // Bitcoin: a coinbase funds the payer; the payer pays the key's receive 0 and 1 (and its change) in one
  // transaction; a later coinbase pays the key's change 0. Mined once the server follows the node's best block.
  await bitcoinCaughtUp();
  const known = new Map(
    [payer.address, bip84('0/0'), bip84('0/1'), bip84('1/0')].map((a) => [Buffer.from(payTo(a, 0).script).toString('hex'), a]),
  );
  const addressOf = (script: Uint8Array) => known.get(Buffer.from(script).toString('hex'));
  const fund = mineBlock(core.chain, [], payer.output);
  record(fund.transactions![0]!, addressOf);
  funding = coinsOf(fund.transactions![0]!, [payer])[0]!;
  const paid = [120_000n, 30_000n];
  const tx = spend(
    [funding],
    [payTo(bip84('0/0'), paid[0]!), payTo(bip84('0/1'), paid[1]!), payTo(payer.address, funding.value - 200_000n)],
  );
  record(tx, addressOf);
  mineBlock(core.chain, [tx]);
  payment = { txid: tx.getId(), fee: 200_000n - paid[0]! - paid[1]!, height: core.chain.height, paid: paid[0]! + paid[1]! };
  const toChange = mineBlock(core.chain, [], payTo(bip84('1/0'), 0).script).transactions![0]!;
  record(toChange, addressOf);
  changeMined = toChange.outs[0]!.value;
  // The earner: a coinbase dated after the devnet's last block so far, then a payment of all of it but a 10,000-sat fee.
  const evmTime = Number((await publicClient(url).getBlock({ blockTag: 'latest' })).timestamp);
  const dated = buildBlock({ ...parentAt(core.chain), time: evmTime + 10 - 600 }, [], 0n, earner.output);
  core.chain.append(dated.toBuffer());
  const earnedCoin = coinsOf(dated.transactions![0]!, [earner])[0]!;
  mineBlock(core.chain, [spend([earnedCoin], [payTo(owner('p2wpkh', 'v1-insight-to').address, earnedCoin.value - 10_000n)])]);
  earned = { coinbase: earnedCoin.value, paid: earnedCoin.value - 10_000n, fee: 10_000n };
  await bitcoinCaughtUp();
  await net.indexed();
}, 120_000);

afterAll(async () => {
  await net?.stop();
  if (coreOpen) await core?.close();
});

describe('GET /v1/wallets/:walletAddressOrPublicKey/tokens', () => {
  it("answers an EVM wallet's native and ERC-20 balances with the Data API's prices, and its failed chain beside them", async () => {
    const body = await ok(`/v1/wallets/${W}/tokens`);
    expect(body.address).toBe(W);
    expect(body.addressType).toBe('evm');
    const head = await net.indexed();
    const wei = await publicClient(net.anvil.url).getBalance({ address: W, blockNumber: BigInt(head) });
    expect(wei).toBe(parseEther('0.75') - sent[2]!.fee + parseEther('10000'));
    const v22 = (await ok(`/api/v2.2/wallets/${W}/tokens?chain=0x539`)).result as Json[];
    expect(body.result.map((r: Json) => [r.chainId, r.symbol, r.balanceRaw, r.nativeToken])).toEqual([
      ['0x539', 'ETH', wei.toString(), true],
      ['0x539', 'TKA', parseUnits('500', 18).toString(), false],
    ]);
    for (const [i, r] of (body.result as Json[]).entries()) {
      expect(r.usdPrice, r.symbol).toBe(Number(v22[i]!.usd_price));
      expect(r.usdValue, r.symbol).toBe(v22[i]!.usd_value);
      expect(r.usdPrice).toBeGreaterThan(0);
      expect(r).toMatchObject({ derivedAddress: null, derivedPath: null, logo: null, securityScore: null });
      expect(r).not.toHaveProperty('sparkline');
    }
    expect(body.result[0].balance).toBe(formatEther(wei));
    expect(body.result.reduce((sum: number, r: Json) => sum + r.portfolioPercentage, 0)).toBeCloseTo(100, 9);
    // 0x1's node is unreachable: named with its error, the devnet still answers.
    expect(body.meta.failedChains).toEqual([expect.objectContaining({ chainId: '0x1', code: 502 })]);
    expect(body.meta.syncedAt['0x539']).toBeGreaterThanOrEqual(sent[2]!.block);
    expect(body.meta.syncedAt).toHaveProperty('0x1', null);
    expect(body.meta).not.toHaveProperty('unsupportedChains');
  });

  it('takes chains by alias, puts what is not followed into unsupportedChains, and applies excludeNative, limit and cursor', async () => {
    const only = await ok(`/v1/wallets/${W}/tokens?chains=0x539,base,bitcoin&excludeNative=true&limit=1`);
    expect(only.result.map((r: Json) => r.symbol)).toEqual(['TKA']);
    expect(only.meta.unsupportedChains).toEqual(['0x2105', 'bitcoin']);
    expect(only.meta).not.toHaveProperty('failedChains');
    expect(only.cursor).toBeNull();
    const first = await ok(`/v1/wallets/${W}/tokens?chains=0x539&limit=1`);
    expect(first.result.map((r: Json) => r.symbol)).toEqual(['ETH']);
    const second = await ok(`/v1/wallets/${W}/tokens?chains=0x539&limit=1&cursor=${first.cursor}`);
    expect(second.result.map((r: Json) => r.symbol)).toEqual(['TKA']);
    expect(second.cursor).toBeNull();
    // The page size may change between pages; the wallet, a filter or the chains may not.
    expect((await ok(`/v1/wallets/${W}/tokens?chains=0x539&limit=5&cursor=${first.cursor}`)).result.map((r: Json) => r.symbol)).toEqual([
      'TKA',
    ]);
    for (const other of [
      `/v1/wallets/${OTHER}/tokens?chains=0x539`,
      `/v1/wallets/${W}/tokens?chains=0x539&excludeSpam=true`,
      `/v1/wallets/${W}/tokens?chains=0x539&tokenAddresses=${net.dex.tokens.tka.address}`,
      `/v1/wallets/${W}/tokens`,
    ]) {
      const r = await call(`${other}&limit=1&cursor=${first.cursor}`.replace('tokens&', 'tokens?'));
      expect([r.status, r.body.details?.field, r.body.message], other).toEqual([400, 'cursor', expect.stringContaining('another list')]);
    }
  });

  it("adds the 7-day sparkline of each priced token (the sparkline endpoint's), and takes includePnl", async () => {
    const body = await ok(`/v1/wallets/${W}/tokens?chains=0x539&includeSparklines=true&includePnl=true`);
    const eth = (await ok('/v1/chains/0x539/tokens/native/price/sparkline?range=7d')).result;
    const tka = (await ok(`/v1/chains/0x539/tokens/${net.dex.tokens.tka.address}/price/sparkline?range=7d`)).result;
    expect(eth.length).toBeGreaterThan(0);
    expect(body.result.map((r: Json) => r.sparkline)).toEqual([eth, tka]);
    // W never swapped: each row's pnl is null (test/pnl.test.ts checks the figures of a trader's).
    expect(body.result.map((r: Json) => r.pnl)).toEqual([null, null]);
  });

  it("answers an xpub's BTC per derived address holding any, summing to its unspent outputs, priced as wrapped bitcoin", async () => {
    const body = await ok(`/v1/wallets/${BIP84_ZPUB}/tokens`);
    expect(body.addressType).toBe('xpub');
    // The EVM chains are not the key's: unsupported for it.
    expect(body.meta.unsupportedChains).toBeUndefined();
    expect(Object.keys(body.meta.syncedAt)).toEqual(['bitcoin']);
    const mine = ['0/0', '0/1', '1/0'].map(bip84);
    expect(body.result.map((r: Json) => [r.derivedAddress, r.derivedPath, r.balanceRaw])).toEqual(
      ['0/0', '0/1', '1/0'].map((p) => [bip84(p), `m/84'/0'/0'/${p}`, unspent([bip84(p)]).toString()]),
    );
    const total = body.result.reduce((sum: bigint, r: Json) => sum + BigInt(r.balanceRaw), 0n);
    expect(total).toBe(unspent(mine));
    expect(total).toBe(payment.paid + changeMined);
    expect(changeMined).toBe(312_500_000n);
    const btc = await ok('/v1/chains/bitcoin/tokens/native/price');
    expect(btc.usdPrice).toBeGreaterThan(0);
    for (const r of body.result)
      expect(r).toMatchObject({
        chainId: 'bitcoin',
        symbol: 'BTC',
        decimals: 8,
        nativeToken: true,
        usdPrice: btc.usdPrice,
        usdValue: btc.usdPrice * Number(r.balance),
      });
    // Each row's sparkline is Bitcoin's (its wrapped bitcoin's series).
    const lines = await ok(`/v1/wallets/${BIP84_ZPUB}/tokens?includeSparklines=true`);
    const series = (await ok('/v1/chains/bitcoin/tokens/native/price/sparkline?range=7d')).result;
    expect(series.length).toBeGreaterThan(0);
    expect(lines.result.map((r: Json) => r.sparkline)).toEqual(body.result.map(() => series));
    // maxTokenInactivity=1 leaves TKB's pool out (never swapped): TKA's (swapped today) prices the rows, and their
    // sparkline is TKA's series, not the default source's: one lookup serves both.
    const tka = net.dex.tokens.tka.address;
    const idle = await ok(`/v1/wallets/${BIP84_ZPUB}/tokens?includeSparklines=true&maxTokenInactivity=1`);
    const tkaPrice = (await ok(`/v1/chains/0x539/tokens/${tka}/price?maxTokenInactivity=1`)).usdPrice;
    expect(tkaPrice).not.toBe(btc.usdPrice);
    expect(idle.result.map((r: Json) => r.usdPrice)).toEqual(body.result.map(() => tkaPrice));
    const tkaLine = (await ok(`/v1/chains/0x539/tokens/${tka}/price/sparkline?range=7d`)).result;
    expect(tkaLine.length).toBeGreaterThan(0);
    expect(tkaLine).not.toEqual(series);
    expect(idle.result.map((r: Json) => r.sparkline)).toEqual(body.result.map(() => tkaLine));
    // A plain address: one row, its own unspent outputs; the filters are EVM's and are ignored.
    const one = await ok(`/v1/wallets/${payer.address}/tokens?chains=bitcoin,eth&excludeNative=true`);
    expect(one.addressType).toBe('bitcoin');
    expect(one.meta.unsupportedChains).toEqual(['0x1']);
    expect(one.result.map((r: Json) => [r.derivedAddress, r.derivedPath, r.balanceRaw])).toEqual([
      [null, null, unspent([payer.address]).toString()],
    ]);
    expect(BigInt(one.result[0].balanceRaw)).toBe(funding.value - 200_000n);
  });

  it('leaves out a possible spam token with excludeSpam, and unprices a token whose pools are shallower than liquidityThreshold', async () => {
    // A wallet of its own (W's rows are counted above): 10 TKA, and a token whose name advertises a claim.
    const holder = '0x00000000000000000000000000000000000a11ce';
    const spam = await deploy(net.anvil.url, 'TestToken', ['Claim your reward at www.example.xyz', 'RWD', 18, parseUnits('1000', 18)]);
    await transferToken(net.anvil.url, spam.address, holder, parseUnits('100', 18));
    await transferToken(net.anvil.url, net.dex.tokens.tka.address, holder, parseUnits('10', 18));
    await net.indexed();
    const rows = async (query: string) =>
      ((await ok(`/v1/wallets/${holder}/tokens?chains=0x539&excludeNative=true${query}`)).result as Json[]).map((r) => [
        r.symbol,
        r.possibleSpam,
        r.usdPrice === null,
      ]);
    expect(await rows('')).toEqual([
      ['RWD', true, true],
      ['TKA', false, false],
    ]);
    expect(await rows('&excludeSpam=true')).toEqual([['TKA', false, false]]);
    // No TKA pool holds $10M a side: the row stays, unpriced (the Data API's balances: usd_price null).
    expect(await rows('&liquidityThreshold=10000000')).toEqual([
      ['RWD', true, true],
      ['TKA', false, true],
    ]);
    expect(await rows('&liquidityThreshold=1')).toEqual([
      ['RWD', true, true],
      ['TKA', false, false],
    ]);
  });

  it('refuses bad parameters with 400 naming the field', async () => {
    const bad: Array<[string, string]> = [
      ['/v1/wallets/0x123/tokens', 'walletAddressOrPublicKey'],
      [`/v1/wallets/${W}/tokens?chains=nowhere`, 'chains'],
      [`/v1/wallets/${W}/tokens?excludeSpam=yes`, 'excludeSpam'],
      [`/v1/wallets/${W}/tokens?liquidityThreshold=-1`, 'liquidityThreshold'],
      [`/v1/wallets/${W}/tokens?limit=101`, 'limit'],
      [`/v1/wallets/${W}/tokens?cursor=nope`, 'cursor'],
      [`/v1/wallets/${W}/tokens?tokenAddresses=0x12`, 'tokenAddresses.0'],
      [`/v1/wallets/${W}/tokens?includeSparklines=1`, 'includeSparklines'],
      [`/v1/wallets/${W}/history?order=ASC`, 'order'],
      [`/v1/wallets/${W}/history?fromBlock=x`, 'fromBlock'],
      [`/v1/wallets/${W}/history?verbose=maybe`, 'verbose'],
      [`/v1/wallets/${W}/history?cursor=abc`, 'cursor'],
      [`/v1/wallets/${enc(`${BIP84_ZPUB.slice(0, -1)}x`)}/history`, 'walletAddressOrPublicKey'],
      [`/v1/wallets/${BIP84_ZPUB}/insight`, 'walletAddress'],
      [`/v1/wallets/${W}/insight?includeChainBreakdown=2`, 'includeChainBreakdown'],
      [`/v1/wallets/${W}/insight?chains=aptos`, 'chains'],
    ];
    for (const [path, field] of bad) {
      const r = await call(path);
      expect(r.status, path).toBe(400);
      expect(r.body.details?.field, `${path}: ${JSON.stringify(r.body)}`).toBe(field);
    }
  });
});

describe('GET /v1/wallets/:walletAddressOrPublicKey/history', () => {
  it("pages an EVM wallet's transactions newest first with direction, category, fee and transfers; verbose adds raw", async () => {
    const body = await ok(`/v1/wallets/${W}/history?verbose=true&chains=0x539`);
    expect(body).toMatchObject({ address: W, addressType: 'evm', page: 0, pageSize: 100, cursor: null });
    const items = body.result as [Json, Json, Json];
    expect(items.map((i) => [i.chainId, i.transaction.hash, i.block.number, i.transaction.direction, i.transaction.category])).toEqual([
      ['0x539', sent[2]!.hash, sent[2]!.block, 'outgoing', 'send'],
      ['0x539', sent[1]!.hash, sent[1]!.block, 'incoming', 'token receive'],
      ['0x539', sent[0]!.hash, sent[0]!.block, 'incoming', 'receive'],
    ]);
    expect(items.map((i) => i.transaction.fee.amountRaw)).toEqual(sent.map((x) => x.fee.toString()).reverse());
    expect(items[0].transaction.fee.amount).toBe(formatEther(sent[2]!.fee));
    expect(items[0].transaction.nativeTransfers.items).toEqual([
      {
        fromAddress: W,
        toAddress: OTHER,
        amount: '0.25',
        amountRaw: parseEther('0.25').toString(),
        direction: 'outgoing',
        isInternal: false,
      },
    ]);
    expect(items[1].transaction.tokenTransfers.items).toEqual([
      expect.objectContaining({
        fromAddress: FUNDER,
        toAddress: W,
        value: parseUnits('500', 18).toString(),
        direction: 'incoming',
        tokenAddress: net.dex.tokens.tka.address.toLowerCase(),
        tokenSymbol: 'TKA',
        tokenDecimals: 18,
      }),
    ]);
    expect(items[2].transaction).toMatchObject({ initiatedBy: { address: FUNDER }, to: { address: W }, status: 'success' });
    expect(items[0].raw).toMatchObject({ hash: sent[2]!.hash, from_address: W, logs: [] });
    expect(items[0].transaction.confirmations).toBe(body.meta.syncedAt['0x539'] - sent[2]!.block + 1);
    // Without verbose, no raw; 0x1's node is unreachable: named with its error, the devnet's items still answered,
    // and the cursor goes on for 0x1 (its list is read on the next page).
    const plain = await ok(`/v1/wallets/${W}/history`);
    expect(plain.result.map((i: Json) => [i.transaction.hash, i.raw])).toEqual([...sent].reverse().map((x) => [x.hash, null]));
    expect(Object.keys(plain.meta.syncedAt)).toEqual(['0x539', '0x1']);
    expect(plain.meta.failedChains).toEqual([
      { chainId: '0x1', code: 502, error: expect.stringContaining('the node of chain 0x1 could not be reached') },
    ]);
    expect(plain.cursor).not.toBeNull();
    // A block range.
    const ranged = await ok(`/v1/wallets/${W}/history?fromBlock=${sent[1]!.block}&toBlock=${sent[1]!.block}`);
    expect(ranged.result.map((i: Json) => i.transaction.hash)).toEqual([sent[1]!.hash]);
  });

  it("pages a Bitcoin key's and address's transactions, each once, with the fee computed from the built outputs", async () => {
    const key = await ok(`/v1/wallets/${BIP84_ZPUB}/history`);
    const [coinbase, paid] = key.result as [Json, Json];
    expect(key.result).toHaveLength(2);
    expect(coinbase.transaction).toMatchObject({ direction: 'incoming', category: 'receive', fee: { amountRaw: '0' } });
    expect(coinbase.block.number).toBe(payment.height + 1);
    expect(paid.transaction).toMatchObject({
      hash: payment.txid,
      direction: 'incoming',
      category: 'receive',
      fee: { amountRaw: payment.fee.toString() },
      initiatedBy: { address: payer.address },
    });
    expect(paid.transaction.nativeTransfers.items.map((m: Json) => [m.toAddress, m.amountRaw, m.direction])).toEqual([
      [bip84('0/0'), '120000', 'incoming'],
      [bip84('0/1'), '30000', 'incoming'],
    ]);
    expect(paid.block).toMatchObject({ number: payment.height, hash: core.chain.at(payment.height)!.hash });
    const byAddress = await ok(`/v1/wallets/${payer.address}/history?verbose=true&limit=1`);
    expect(byAddress.result[0].transaction).toMatchObject({ hash: payment.txid, direction: 'outgoing', category: 'send' });
    expect(byAddress.result[0].transaction.nativeTransfers.items.map((m: Json) => m.direction)).toEqual(['outgoing', 'outgoing', 'self']);
    expect(byAddress.result[0].raw).toMatchObject({
      txid: payment.txid,
      vin: [{ txid: funding.txid, address: payer.address, value: Number(funding.value) }],
    });
    const next = await ok(`/v1/wallets/${payer.address}/history?verbose=true&limit=1&cursor=${byAddress.cursor}`);
    expect(next.result.map((i: Json) => [i.transaction.hash, i.transaction.direction])).toEqual([[funding.txid, 'incoming']]);
    expect(next.page).toBe(1);
  });

  it('keeps a cursor valid while blocks arrive, and refuses it for another wallet', async () => {
    const first = await ok(`/v1/wallets/${W}/history?limit=1&chains=0x539`);
    expect(first.result[0].transaction.hash).toBe(sent[2]!.hash);
    // A new transaction lands on the newest end meanwhile.
    const late = await (await walletClient(net.anvil.url)).sendTransaction({ to: W, value: 1n });
    await mined(net.anvil.url, late);
    await net.indexed();
    const second = await ok(`/v1/wallets/${W}/history?limit=1&chains=0x539&cursor=${first.cursor}`);
    expect(second.result.map((i: Json) => i.transaction.hash)).toEqual([sent[1]!.hash]);
    const third = await ok(`/v1/wallets/${W}/history?limit=1&chains=0x539&cursor=${second.cursor}`);
    expect(third.result.map((i: Json) => i.transaction.hash)).toEqual([sent[0]!.hash]);
    expect(third.cursor).toBeNull();
    expect((await ok(`/v1/wallets/${W}/history?limit=1&chains=0x539`)).result[0].transaction.hash).toBe(late);
    const other = await call(`/v1/wallets/${OTHER}/history?limit=1&chains=0x539&cursor=${first.cursor}`);
    expect(other.status).toBe(400);
    expect(other.body.details.field).toBe('cursor');
  });
});

describe('GET /v1/wallets/:walletAddress/insight', () => {
  it("folds an EVM wallet's activity: counts, first and last, counterparties, gas, with the chain breakdown", async () => {
    // Before the late transaction of the cursor test: the first three are checked one by one, the late one counted.
    const body = await ok(`/v1/wallets/${W}/insight?chains=0x539&includeChainBreakdown=true`);
    const total = (await ok(`/v1/wallets/${W}/history?chains=0x539`)).result.length;
    expect(body).toMatchObject({
      address: W,
      addressType: 'evm',
      transactionsInvolved: total,
      transactionsInitiated: 1,
      erc20Transfers: { sent: 0, received: 1, total: 1 },
      nftTransfers: { sent: 0, received: 0, total: 0 },
      uniqueCounterparties: { sentTo: 1, receivedFrom: 1 },
      uniqueTokensInteracted: 1,
      contractsCreated: 0,
      activeChains: ['0x539'],
      mostActiveChain: '0x539',
      walletAgeDays: 0,
    });
    // Its one fee at ether's price in its block.
    const gas = num(usdOf(sent[2]!.fee, 18, await ethUsd(sent[2]!.block)));
    expect(body.totalGasSpentUsd).toBeCloseTo(gas, 6);
    expect(body.avgGasPerTransactionUsd).toBeCloseTo(gas, 6);
    expect(body.nativeTransfers).toEqual({ sent: 1, received: total - 2, total: total - 1 });
    expect(body.firstActivityAt).toMatchObject({
      chain: '0x539',
      transactionHash: sent[0]!.hash,
      blockNumber: sent[0]!.block,
      direction: 'incoming',
      type: 'receive',
    });
    expect(body.firstInitiatedAt).toMatchObject({ transactionHash: sent[2]!.hash, direction: 'outgoing' });
    expect(body.lastInitiatedAt).toEqual(body.firstInitiatedAt);
    const [chain] = body.chainBreakdown as [Json];
    expect(body.chainBreakdown).toHaveLength(1);
    expect(chain).toMatchObject({
      chain: '0x539',
      transactionsInvolved: total,
      totalGasSpentNative: formatEther(sent[2]!.fee),
      avgGasPerTransactionNative: formatEther(sent[2]!.fee),
      nativeVolumeSent: '0.25',
      largestNativeTransferOut: '0.25',
      largestNativeTransferIn: '1',
    });
    const received = parseEther('1') + BigInt(total - 3);
    expect(chain.nativeVolumeReceived).toBe(formatEther(received));
    expect(chain.nativeNetFlow).toBe(formatEther(received - parseEther('0.25')));
    // Without the breakdown: an empty list; the unreachable chain is still read from the indexes.
    const all = await ok(`/v1/wallets/${W}/insight`);
    expect(all.chainBreakdown).toEqual([]);
    expect(all.transactionsInvolved).toBe(total);
  });

  it("values a wallet's native moves, fees and swaps at the prices of their own blocks; the dead chain is named", async () => {
    const valued = async (moves: Array<{ block: number; wei: bigint }>) =>
      Promise.all(moves.map(async (m) => usdOf(m.wei, 18, await ethUsd(m.block))));
    const [ins, outs] = [await valued(w2Txs.ins), await valued(w2Txs.outs)];
    // Ether's price moved between the first receipt and the rest: one price for all would miss the figures.
    expect(num(await ethUsd(w2Txs.ins[1]!.block)) - num(await ethUsd(w2Txs.ins[0]!.block))).toBeGreaterThan(100);
    const received = ins.reduce(plus);
    const sentUsd = outs.reduce(plus);
    let gas: Ratio = { num: 0n, den: 1n };
    for (const t of w2Txs.initiated) gas = plus(gas, usdOf(t.fee, 18, await ethUsd(t.block)));
    // The swap's value: its WETH leg (the pool's token that routes to USD) from the Swap log, at ether's price in its block.
    const swap = usdOf(w2Txs.swap!.wethOut, 18, await ethUsd(w2Txs.swap!.block));
    const body = await ok(`/v1/wallets/${w2}/insight?includeChainBreakdown=true`);
    expect(body).toMatchObject({ transactionsInitiated: 4, nativeTransfers: { sent: 2, received: 2, total: 4 } });
    expectUsd(body, {
      swapVolumeUsd: num(swap),
      totalGasSpentUsd: num(gas),
      avgGasPerTransactionUsd: num(gas) / 4,
      nativeVolumeSentUsd: num(sentUsd),
      nativeVolumeReceivedUsd: num(received),
      nativeNetFlowUsd: num(received) - num(sentUsd),
      largestNativeTransferInUsd: Math.max(...ins.map(num)),
      largestNativeTransferOutUsd: Math.max(...outs.map(num)),
    });
    expect(body.chainBreakdown.map((c: Json) => c.chain)).toEqual(['0x539']);
    expect(body.meta.failedChains).toEqual([expect.objectContaining({ chainId: '0x1', code: 502 })]);
  });

  it("folds a Bitcoin address's activity, its fee counted as spent", async () => {
    const body = await ok(`/v1/wallets/${payer.address}/insight?includeChainBreakdown=true`);
    expect(body).toMatchObject({
      addressType: 'bitcoin',
      transactionsInvolved: 2,
      transactionsInitiated: 1,
      nativeTransfers: { sent: 2, received: 1, total: 3 },
      uniqueCounterparties: { sentTo: 2, receivedFrom: 0 },
      activeChains: ['bitcoin'],
    });
    expect(body.firstActivityAt.transactionHash).toBe(funding.txid);
    expect(body.lastActivityAt.transactionHash).toBe(payment.txid);
    expect(body.chainBreakdown[0]).toMatchObject({
      chain: 'bitcoin',
      totalGasSpentNative: formatUnits(payment.fee, 8),
      nativeVolumeSent: formatUnits(payment.paid, 8),
      nativeVolumeReceived: formatUnits(funding.value, 8),
    });
    // Its blocks are dated 2009, before any devnet block: nothing priced, every USD field null.
    for (const k of USD_FIELDS) expect([body[k], body.chainBreakdown[0][k]], k).toEqual([null, null]);
  });

  it("values a Bitcoin address's moves and fee at wrapped bitcoin's price in the devnet block of their time", async () => {
    // TKB's V3 pool (the deepest wrapped bitcoin) never moves after it is made: one price, from its slot0.
    const btcUsd = await net.v3Price(net.tkbUsdc, net.dex.tokens.tkb.address, await net.indexed());
    const body = await ok(`/v1/wallets/${earner.address}/insight?includeChainBreakdown=true`);
    expect(body).toMatchObject({ transactionsInvolved: 2, transactionsInitiated: 1 });
    const [received, paid, fee] = [earned.coinbase, earned.paid, earned.fee].map((sats) => num(usdOf(sats, 8, btcUsd))) as [
      number,
      number,
      number,
    ];
    expectUsd(body, {
      swapVolumeUsd: 0,
      totalGasSpentUsd: fee,
      avgGasPerTransactionUsd: fee,
      nativeVolumeSentUsd: paid,
      nativeVolumeReceivedUsd: received,
      nativeNetFlowUsd: received - paid,
      largestNativeTransferInUsd: received,
      largestNativeTransferOutUsd: paid,
    });
  });
});

// Last in the file: it stops the Bitcoin Core stand-in.
describe('a Bitcoin chain whose node fails', () => {
  it('is in meta.failedChains of the wallet endpoints (502, its error) while the EVM chains still answer', async () => {
    await core.close();
    coreOpen = false;
    const upstream = async () => ((await s.call('/health')).body.chains as Json[]).find((c) => c.chain === 'bitcoin')?.upstream;
    expect(await until(async () => (await upstream()) === 'failing', 20_000)).toBe(true);
    const dead = [{ chainId: 'bitcoin', code: 502, error: expect.stringContaining('the node of chain bitcoin could not be reached') }];
    // Its stored transactions and balances are not answered as if current: the chain is named instead.
    for (const wallet of [payer.address, BIP84_ZPUB]) {
      for (const endpoint of ['history', 'tokens']) {
        const body = await ok(`/v1/wallets/${wallet}/${endpoint}`);
        expect(body.result, `${endpoint} ${wallet}`).toEqual([]);
        expect(body.meta.failedChains, `${endpoint} ${wallet}`).toEqual(dead);
      }
    }
    const insight = await ok(`/v1/wallets/${payer.address}/insight`);
    expect(insight).toMatchObject({ transactionsInvolved: 0, activeChains: [] });
    // Its price is read on the EVM chains first: 0x1's failure too.
    expect(insight.meta.failedChains).toEqual([...dead, expect.objectContaining({ chainId: '0x1', code: 502 })]);
    // The EVM wallet's rows on the devnet are still there; only 0x1 (its node never answers) is named.
    const tokens = await ok(`/v1/wallets/${W}/tokens`);
    expect(tokens.result.map((r: Json) => [r.chainId, r.symbol])).toEqual([
      ['0x539', 'ETH'],
      ['0x539', 'TKA'],
    ]);
    expect(tokens.meta.failedChains.map((f: Json) => f.chainId)).toEqual(['0x1']);
    const history = await ok(`/v1/wallets/${W}/history`);
    expect(history.result.map((i: Json) => i.transaction.hash)).toEqual(expect.arrayContaining(sent.map((x) => x.hash)));
    expect(new Set(history.result.map((i: Json) => i.chainId))).toEqual(new Set(['0x539']));
    expect(history.meta.failedChains.map((f: Json) => f.chainId)).toEqual(['0x1']);
  });
});
