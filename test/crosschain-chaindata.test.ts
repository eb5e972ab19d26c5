import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEther, parseUnits, type Hex } from 'viem';
import { startAnvil, type Anvil } from '../http/clients/anvil.js';
import { coinsOf, mineBlock, owner, payTo, spend } from './kit/bitcoin-core/build.js';
import { PRUNED_HEIGHT, prunedChain } from './kit/bitcoin-core/fixtures.js';
import { startBitcoinCore, type BitcoinCore } from './kit/bitcoin-core/server.js';
import { DEV_ACCOUNTS, deploy, mined, publicClient, walletClient, write } from './contracts.js';
import { startChainpost, stopAndClean, until, type Running } from './helpers.js';
import { addressOf } from './kit/solana-rpc/build.js';
import { SolanaChain } from './kit/solana-rpc/chain.js';
import { entryOf, fixtureBlock, fixtureTransaction, FIXTURE_BLOCK_SLOT, FIXTURE_TRANSACTIONS } from './kit/solana-rpc/fixtures.js';
import { startSolanaRpc, type SolanaRpc } from './kit/solana-rpc/server.js';
import { A1, A2, serverEnv } from './streams-harness.js';

/**
 * GET /v1/chains/:chainAlias/blocks/:blockIdentifier and /transactions/:txHash for the three families, one server
 * following anvil, the Bitcoin Core stand-in and the Solana RPC stand-in. Every DTO is checked against what the
 * node itself answers (eth_getBlockByNumber and receipts; getblock verbosity 3; getBlock json of the mainnet
 * fixtures), read here, not through the server's code. A short retention prunes the early Bitcoin blocks.
 */

type Json = Record<string, any>;
const RETENTION = 8;
/** Bitcoin blocks mined after the spending one (fewer than RETENTION: it and its funding block stay stored). */
const AFTER = 2;
const TRANSFER = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';

let anvil: Anvil;
let core: BitcoinCore;
let sol: SolanaRpc;
let s: Running;
const solChain = new SolanaChain({ firstSlot: FIXTURE_BLOCK_SLOT - 1 });

const health = async (chain: string): Promise<Json | undefined> =>
  ((await s.call('/health')).body.chains as Json[]).find((c) => c['chain'] === chain);
const at = async (chain: string, target: number): Promise<void> => {
  expect(await until(async () => (await health(chain))?.['head'] === target, 20_000, 20), `${chain} at ${target}`).toBe(true);
};
const evmRpc = <T>(method: string, params: unknown[]): Promise<T> =>
  publicClient(anvil.url).request({ method: method as never, params: params as never }) as Promise<T>;
async function btcRpc(method: string, ...params: unknown[]): Promise<any> {
  const url = new URL(core.url);
  const res = await fetch(`http://${url.host}/`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64')}`,
    },
    body: JSON.stringify({ jsonrpc: '1.0', id: 't', method, params }),
  });
  return ((await res.json()) as { result: unknown }).result;
}
async function solRpc(method: string, params: unknown[]): Promise<any> {
  const res = await fetch(sol.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return ((await res.json()) as { result: unknown }).result;
}
const get = (path: string) => s.call(`/v1/chains/${path}`);
/** BTC amounts of Core's JSON, in satoshis. */
const sats = (btc: number): string => String(Math.round(btc * 1e8));

const tx: Record<string, Hex> = {};
let btcSpend: { txid: string; funding: string };
let solSlots: number[];

beforeAll(async () => {
  [anvil, core] = await Promise.all([startAnvil({ chainId: 1337 }), startBitcoinCore({ chain: prunedChain({ blocks: 12 }) })]);
  const real = fixtureBlock();
  // The parent of mainnet slot 100,000,000, so the real block links to it unchanged once put.
  solChain.put({
    slot: real.parentSlot,
    blockHeight: real.blockHeight! - 1,
    blockTime: real.blockTime,
    blockhash: real.previousBlockhash,
    parentSlot: real.parentSlot - 1,
    previousBlockhash: addressOf('before-100m'),
    rewards: [],
    transactions: [],
  });
  sol = await startSolanaRpc({ chain: solChain });
  // Bitcoin from the pruned node's first served block (backfilled), so the retention window has blocks to prune.
  s = await startChainpost(
    serverEnv(anvil, {
      CHAINPOST_BITCOIN_RPC: core.url,
      CHAINPOST_START_BLOCKS: `bitcoin=${PRUNED_HEIGHT}`,
      CHAINPOST_BITCOIN_POLL_MS: '50',
      CHAINPOST_SOLANA_RPC: sol.url,
      CHAINPOST_SOLANA_POLL_MS: '50',
      CHAINPOST_RETENTION_BLOCKS: String(RETENTION),
    }),
  );

  const token = await deploy(anvil.url, 'TestToken', ['Test Token', 'TT', 6, parseUnits('1000', 6)]);
  tx['token'] = (
    await write(anvil.url, {
      address: token.address,
      abi: token.abi,
      functionName: 'transfer',
      args: [A1, parseUnits('10', 6)],
      account: DEV_ACCOUNTS[0],
    })
  ).transactionHash;
  const hash = await (await walletClient(anvil.url)).sendTransaction({ to: A2, value: parseEther('1') });
  tx['send'] = (await mined(anvil.url, hash)).transactionHash;

  const payer = owner('p2wpkh', 'v1-payer');
  const funding = mineBlock(core.chain, [], payer.output).transactions![0]!;
  const spent = spend(coinsOf(funding, [payer]), [
    payTo(owner('p2pkh', 'v1-payee').address, 100_000),
    payTo(owner('p2tr', 'v1-payee').address, 200_000),
  ]);
  mineBlock(core.chain, [spent]);
  btcSpend = { txid: spent.getId(), funding: funding.getId() };
  for (let i = 0; i < AFTER; i++) mineBlock(core.chain);

  solChain.put({
    slot: FIXTURE_BLOCK_SLOT,
    blockHeight: real.blockHeight,
    blockTime: real.blockTime,
    blockhash: real.blockhash,
    parentSlot: real.parentSlot,
    previousBlockhash: real.previousBlockhash,
    rewards: real.rewards ?? [],
    transactions: real.transactions.map(entryOf),
  });
  solSlots = [
    FIXTURE_BLOCK_SLOT,
    ...FIXTURE_TRANSACTIONS.map(
      (p) => solChain.produce([entryOf(fixtureTransaction(p))], { blockTime: fixtureTransaction(p).blockTime }).slot,
    ),
  ];

  await Promise.all([
    at('0x539', Number(await publicClient(anvil.url).getBlockNumber())),
    at('bitcoin', core.chain.height),
    at('solana', solChain.tip),
  ]);
}, 120_000);

afterAll(async () => {
  await stopAndClean(s);
  await Promise.all([anvil?.stop(), core?.close(), sol?.close()]);
});

describe('EVM blocks and transactions', () => {
  it('answers the block by number and by hash, and its transactions with fees and token transfers, as anvil has them', async () => {
    const receipt = await evmRpc<Json>('eth_getTransactionReceipt', [tx['token']]);
    const block = await evmRpc<Json>('eth_getBlockByNumber', [receipt['blockNumber'], true]);
    const byNumber = await get(`0x539/blocks/${Number(block['number'])}`);
    expect(byNumber.status, JSON.stringify(byNumber.body)).toBe(200);
    const b = byNumber.body;
    expect(b).toMatchObject({
      chainFamily: 'EVM',
      chainId: '0x539',
      hash: block['hash'],
      previousBlockHash: block['parentHash'],
      height: Number(block['number']),
      time: Number(block['timestamp']),
      size: Number(block['size']),
      txCount: block['transactions'].length,
      page: 1,
      totalPages: 1,
      itemsOnPage: 100,
    });
    expect(b.evmSpecific).toMatchObject({
      miner: block['miner'].toLowerCase(),
      gas_used: BigInt(block['gasUsed']).toString(),
      gas_limit: BigInt(block['gasLimit']).toString(),
      logs_bloom: block['logsBloom'],
    });
    expect(b.txs.map((t: Json) => t.txid)).toEqual(block['transactions'].map((t: Json) => t['hash']));
    expect(b.meta).toEqual({ syncedAt: { '0x539': expect.any(Number) } });
    const byHash = await get(`0x539/blocks/0x${block['hash'].slice(2).toUpperCase()}`);
    // Other tests mine meanwhile: the indexed head may move on between the two reads, never back.
    const { meta: hashMeta, ...sameBlock } = byHash.body;
    const { meta: _numberMeta, ...blockBody } = b;
    expect(sameBlock).toEqual(blockBody);
    expect(hashMeta.syncedAt['0x539']).toBeGreaterThanOrEqual(b.meta.syncedAt['0x539']);

    // The token transfer: fee from the receipt, the Transfer log's parties and amount.
    const t = await get(`0x539/transactions/${tx['token']}`);
    expect(t.status).toBe(200);
    const log = (receipt['logs'] as Json[]).find((l) => l['topics'][0] === TRANSFER)!;
    expect(t.body).toMatchObject({
      chainFamily: 'EVM',
      txid: tx['token'],
      blockHash: block['hash'],
      blockHeight: Number(block['number']),
      blockTime: Number(block['timestamp']),
      value: '0',
      fees: (BigInt(receipt['gasUsed']) * BigInt(receipt['effectiveGasPrice'])).toString(),
      tokenTransfers: [
        {
          tokenType: 'erc20',
          tokenAddress: log['address'].toLowerCase(),
          from: `0x${log['topics'][1].slice(26)}`,
          to: `0x${log['topics'][2].slice(26)}`,
          value: BigInt(log['data']).toString(),
          tokenId: null,
        },
      ],
    });
    expect(t.body.evmSpecific).toMatchObject({
      hash: tx['token'],
      from_address: receipt['from'],
      receipt_status: '1',
      logs: [expect.objectContaining({ topic0: TRANSFER })],
    });
    const { meta: _m, ...inBlock } = t.body;
    expect(b.txs.find((x: Json) => x.txid === tx['token'])).toEqual(inBlock);

    const send = await get(`0x539/transactions/${tx['send']}`);
    expect(send.body).toMatchObject({ value: parseEther('1').toString(), tokenTransfers: [] });
  });

  it('404s what it does not hold and 400s a bad identifier, naming it', async () => {
    const head = Number(await publicClient(anvil.url).getBlockNumber());
    const ahead = await get(`0x539/blocks/${head + 50}`);
    expect(ahead.status).toBe(404);
    expect(ahead.body.message).toContain('past this server');
    expect((await get(`0x539/blocks/0x${'ab'.repeat(32)}`)).status).toBe(404);
    const none = await get(`0x539/transactions/0x${'cd'.repeat(32)}`);
    expect(none.status).toBe(404);
    expect(none.body.message).toContain(`0x${'cd'.repeat(32)}`);
    for (const [path, field] of [
      ['0x539/blocks/abc', 'blockIdentifier'],
      ['0x539/blocks/12a', 'blockIdentifier'],
      [`0x539/transactions/0x${'a'.repeat(63)}`, 'txHash'],
      ['0x539/blocks/1?page=0', 'page'],
      ['nowhere/blocks/1', 'chainAlias'],
    ]) {
      const r = await get(path!);
      expect(r.status, path).toBe(400);
      expect(r.body.details.field, path).toBe(field);
    }
  });
});

describe('Bitcoin blocks and transactions', () => {
  it("answers the block as getblock 3 has it, and the transaction's inputs, outputs, fee and spent outputs", async () => {
    const height = core.chain.height - AFTER;
    const hash = await btcRpc('getblockhash', height);
    const core3 = await btcRpc('getblock', hash, 3);
    for (const id of [String(height), hash, hash.toUpperCase()]) {
      const r = await get(`bitcoin/blocks/${id}`);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body).toMatchObject({
        chainFamily: 'Bitcoin',
        chainId: 'bitcoin',
        hash,
        previousBlockHash: core3.previousblockhash,
        height,
        time: core3.time,
        size: core3.size,
        txCount: core3.nTx,
        page: 1,
        totalPages: 1,
        bitcoinSpecific: {
          bits: core3.bits,
          difficulty: core3.difficulty,
          merkleRoot: core3.merkleroot,
          nonce: core3.nonce,
          weight: core3.weight,
          version: core3.version,
          strippedSize: core3.strippedsize,
        },
      });
      expect(r.body.txs.map((t: Json) => t.txid)).toEqual(core3.tx.map((t: Json) => t.txid));
    }
    const ours = core3.tx.find((t: Json) => t.txid === btcSpend.txid);
    const t = await get(`bitcoin/transactions/${btcSpend.txid}`);
    expect(t.status).toBe(200);
    expect(t.body).toMatchObject({
      chainFamily: 'Bitcoin',
      txid: ours.txid,
      blockHash: hash,
      blockHeight: height,
      blockTime: core3.time,
      value: String(ours.vout.reduce((n: number, o: Json) => n + Math.round(o.value * 1e8), 0)),
      fees: sats(ours.fee),
      tokenTransfers: [],
      vin: ours.vin.map((i: Json, n: number) => ({
        txid: i.txid,
        vout: i.vout,
        sequence: i.sequence,
        n,
        addresses: [i.prevout.scriptPubKey.address],
        isAddress: true,
        value: sats(i.prevout.value),
        hex: i.scriptSig.hex,
      })),
      vout: ours.vout.map((o: Json) => ({
        n: o.n,
        value: sats(o.value),
        addresses: [o.scriptPubKey.address],
        isAddress: true,
        spent: false,
        hex: o.scriptPubKey.hex,
      })),
      bitcoinSpecific: {
        version: ours.version,
        locktime: ours.locktime,
        size: ours.size,
        vsize: ours.vsize,
        weight: ours.weight,
        hash: ours.hash,
        valueIn: sats(ours.vin.reduce((n: number, i: Json) => n + i.prevout.value, 0)),
      },
    });
    // The funding coinbase's output is spent by the transaction above; its fee is none.
    const funding = await get(`bitcoin/transactions/${btcSpend.funding}`);
    expect(funding.body).toMatchObject({ fees: '0', vout: [expect.objectContaining({ spent: true })] });
    expect(funding.body.vin[0]).toMatchObject({ addresses: [], isAddress: false, value: null });
  });

  it('says a pruned block is past the retention window; 404s the unknown, 400s a bad identifier', async () => {
    const oldest = (await health('bitcoin'))!['oldest'] as number;
    expect(oldest).toBeGreaterThan(PRUNED_HEIGHT);
    const pruned = await get(`bitcoin/blocks/${oldest - 1}`);
    expect(pruned.status).toBe(404);
    expect(pruned.body.message).toContain('retention window');
    const prunedTx = await get(`bitcoin/transactions/${(await btcRpc('getblock', await btcRpc('getblockhash', oldest - 1), 1)).tx[0]}`);
    expect(prunedTx.status).toBe(404);
    expect(prunedTx.body.message).toContain('retention window');
    expect((await get(`bitcoin/blocks/${core.chain.height + 1}`)).body.message).toContain('past this server');
    expect((await get(`bitcoin/transactions/${'ef'.repeat(32)}`)).status).toBe(404);
    for (const [path, field] of [
      ['bitcoin/blocks/0x12', 'blockIdentifier'],
      [`bitcoin/transactions/0x${'a'.repeat(64)}`, 'txHash'],
    ]) {
      const r = await get(path!);
      expect(r.status, path).toBe(400);
      expect(r.body.details.field, path).toBe(field);
    }
  });
});

describe('Solana slots and transactions', () => {
  it("answers mainnet slot 100,000,000 and the hyperlane transactions as the node's getBlock has them", async () => {
    for (const slot of solSlots) {
      const node = await solRpc('getBlock', [
        slot,
        { encoding: 'json', transactionDetails: 'full', maxSupportedTransactionVersion: 0, rewards: false, commitment: 'confirmed' },
      ]);
      for (const id of [String(slot), node.blockhash]) {
        const r = await get(`sol/blocks/${id}`);
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        expect(r.body).toMatchObject({
          chainFamily: 'Solana',
          chainId: 'solana',
          hash: node.blockhash,
          previousBlockHash: node.previousBlockhash,
          height: slot,
          time: node.blockTime,
          txCount: node.transactions.length,
          solanaSpecific: { slot, parentSlot: node.parentSlot, blockHeight: node.blockHeight },
        });
      }
      const r = await get(`solana/blocks/${slot}`);
      node.transactions.forEach((t: Json, i: number) => {
        const keys = [
          ...t.transaction.message.accountKeys,
          ...(t.meta.loadedAddresses?.writable ?? []),
          ...(t.meta.loadedAddresses?.readonly ?? []),
        ];
        const ours = r.body.txs[i];
        expect(ours).toMatchObject({
          chainFamily: 'Solana',
          txid: t.transaction.signatures[0],
          blockHash: node.blockhash,
          blockHeight: slot,
          blockTime: node.blockTime,
          fees: String(t.meta.fee),
          value: null,
        });
        expect(ours.solanaSpecific.accountKeys).toEqual(keys);
        expect(ours.solanaSpecific.err).toEqual(t.meta.err);
        expect(ours.solanaSpecific.instructions).toEqual(
          t.transaction.message.instructions.map((ix: Json) => ({
            programId: keys[ix.programIdIndex],
            accounts: ix.accounts.map((a: number) => keys[a]),
            data: ix.data,
          })),
        );
        // Token balance changes: post − pre per token account.
        const pre = new Map<number, bigint>(
          (t.meta.preTokenBalances ?? []).map((b: Json) => [b.accountIndex, BigInt(b.uiTokenAmount.amount)]),
        );
        const post = new Map<number, bigint>(
          (t.meta.postTokenBalances ?? []).map((b: Json) => [b.accountIndex, BigInt(b.uiTokenAmount.amount)]),
        );
        const changed = [...new Set([...pre.keys(), ...post.keys()])].filter((k) => (post.get(k) ?? 0n) !== (pre.get(k) ?? 0n));
        expect(ours.tokenTransfers.map((c: Json) => [c.account, c.change])).toEqual(
          changed.map((k) => [keys[k], ((post.get(k) ?? 0n) - (pre.get(k) ?? 0n)).toString()]),
        );
      });
      const last = node.transactions.at(-1);
      const one = await get(`sol/transactions/${last.transaction.signatures[0]}`);
      expect(one.status).toBe(200);
      const { meta: _m, ...dto } = one.body;
      expect(dto).toEqual(r.body.txs.at(-1));
    }
    // The USDC dispatch moved tokens: its changes are not empty (the check above is not vacuous).
    const usdc = fixtureTransaction(FIXTURE_TRANSACTIONS[1]!);
    expect((await get(`sol/transactions/${usdc.transaction.signatures[0]}`)).body.tokenTransfers.length).toBeGreaterThan(0);
  });

  it('404s an unknown slot or signature and 400s a bad one', async () => {
    const ahead = await get(`sol/blocks/${solChain.tip + 100}`);
    expect(ahead.status).toBe(404);
    expect(ahead.body.message).toContain('past this server');
    expect((await get(`sol/blocks/${'1'.repeat(44)}`)).status).toBe(404);
    const none = await get(`sol/transactions/${'1'.repeat(64)}`);
    expect(none.status).toBe(404);
    expect(none.body.message).toContain('not in the slots');
    for (const [path, field] of [
      ['sol/blocks/0x12', 'blockIdentifier'],
      ['sol/transactions/0OIl', 'txHash'],
    ]) {
      const r = await get(path!);
      expect(r.status, path).toBe(400);
      expect(r.body.details.field, path).toBe(field);
    }
  });
});
