import * as ecc from '@bitcoinerlab/secp256k1';
import { Block, Transaction, address, payments, script } from 'bitcoinjs-lib';
import { afterEach, describe, expect, it } from 'vitest';
import { ADDRESS_KINDS, branch, coinsOf, mineBlock, owner, payTo, spend, type Coin } from './kit/bitcoin-core/build.js';
import { BitcoinChain } from './kit/bitcoin-core/chain.js';
import {
  GENESIS_HASH,
  PRUNED_HEIGHT,
  bigBlock,
  fixtureText,
  mainnetChain,
  prunedChain,
  rawBlockFromGetblock,
  relinkedChain,
} from './kit/bitcoin-core/fixtures.js';
import { btc, coreJson, double16 } from './kit/bitcoin-core/json.js';
import { descriptorChecksum, scriptPubKeyJson } from './kit/bitcoin-core/script.js';
import { startBitcoinCore, type BitcoinCore, type BitcoinCoreOptions } from './kit/bitcoin-core/server.js';
import { txJson } from './kit/bitcoin-core/shapes.js';

type Json = Record<string, any>;

const running: BitcoinCore[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((c) => c.close()));
});

async function start(opts: BitcoinCoreOptions = {}): Promise<BitcoinCore> {
  const core = await startBitcoinCore(opts);
  running.push(core);
  return core;
}

/** POSTs a body with the credentials of `core.url` (fetch refuses URLs that carry them). */
async function post(core: BitcoinCore, body: unknown, auth?: string): Promise<{ status: number; text: string; headers: Headers }> {
  const url = new URL(core.url);
  const credentials = auth ?? `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
  const res = await fetch(`http://${url.host}/`, {
    method: 'POST',
    headers: { authorization: `Basic ${Buffer.from(credentials).toString('base64')}` },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, text: await res.text(), headers: res.headers };
}

/** One call's result; throws the RPC error object. */
async function call(core: BitcoinCore, method: string, ...params: unknown[]): Promise<any> {
  const { text } = await post(core, { jsonrpc: '1.0', id: 'test', method, params });
  const reply = JSON.parse(text) as { result: unknown; error: { code: number; message: string } | null };
  if (reply.error) throw Object.assign(new Error(reply.error.message), reply.error);
  return reply.result;
}

const rpcError = (code: number, message: string) => expect.objectContaining({ code, message });

/**
 * Where our answer differs from a real (older) Core answer, over every field both have. Older Core's
 * `addresses[0]` is our `address` (P2PK had one there; current Core shows none); `reqSigs` is gone; `skip`
 * names fields that depend on where the answer was taken (confirmations, …).
 */
function differences(real: unknown, ours: unknown, path: string, skip: Set<string>): string[] {
  if (typeof real !== 'object' || real === null) return real === ours ? [] : [`${path}: ${JSON.stringify(real)} ≠ ${JSON.stringify(ours)}`];
  if (typeof ours !== 'object' || ours === null) return [`${path}: missing`];
  return Object.entries(real as Json).flatMap(([key, value]) => {
    const o = ours as Json;
    if (skip.has(key) || key === 'reqSigs') return [];
    if (key === 'addresses') return o.type === 'pubkey' || o.address === value[0] ? [] : [`${path}.address: ${value[0]} ≠ ${o.address}`];
    if (!(key in o)) return [`${path}.${key}: missing`];
    return differences(value, o[key], `${path}.${key}`, skip);
  });
}

/** A real Core getblock 2 answer from the fixtures. */
const realBlock = (path: string): Json => JSON.parse(fixtureText(path)) as Json;
const ETL = (hash: string): Json => realBlock(`rpc/bitcoin-etl/getblock_${hash}_2.json`);
const BLOCK_50000 = '000000001aeae195809d120b5d66a39c83eb48792e068f8ea1fea19d84a4278a';
const BLOCK_50001 = '000000001c920d495e1eeef2452b6d1c6c229a919b28196c103ecffebabee141';
const BLOCK_50002 = '000000002066d7f9b134c30b5005b7bf5fbfa52f279883f1fde793dcdc964266';

/** A chain of real blocks rebuilt from Core's getblock 2 answers, first at its own height. */
function chainOf(answers: Json[]): BitcoinChain {
  const chain = new BitcoinChain(answers[0]!.height);
  for (const a of answers) expect(chain.append(rawBlockFromGetblock(a as never))).toBe(a.hash);
  return chain;
}

describe('the stand-in Bitcoin Core: wire', () => {
  it('answers 401 with an empty body and Basic realm="jsonrpc" to missing or wrong credentials', async () => {
    const core = await start({ user: 'alice', password: 's3cret' });
    expect(core.url).toBe(`http://alice:s3cret@127.0.0.1:${core.port}`);
    const wrong = await post(core, { id: 1, method: 'getblockcount' }, 'alice:nope');
    expect([wrong.status, wrong.text, wrong.headers.get('www-authenticate')]).toEqual([401, '', 'Basic realm="jsonrpc"']);
    const none = await fetch(`http://127.0.0.1:${core.port}/`, { method: 'POST', body: '{}' });
    expect(none.status).toBe(401);
    expect(await call(core, 'getblockcount')).toBe(255);
  });

  it('writes Core’s legacy envelopes: result with error null, errors with HTTP 500, 404 for an unknown method', async () => {
    const core = await start();
    const ok = await post(core, { id: 7, method: 'getblockhash', params: [0] });
    expect([ok.status, ok.text, ok.headers.get('content-type')]).toEqual([
      200,
      `{"result":"${GENESIS_HASH}","error":null,"id":7}\n`,
      'application/json',
    ]);
    const unknown = await post(core, { id: 'x', method: 'getblocktemplatez' });
    expect([unknown.status, unknown.text]).toEqual([
      404,
      '{"result":null,"error":{"code":-32601,"message":"Method not found"},"id":"x"}\n',
    ]);
    const range = await post(core, { id: 1, method: 'getblockhash', params: [256] });
    expect([range.status, JSON.parse(range.text)]).toEqual([
      500,
      { result: null, error: { code: -8, message: 'Block height out of range' }, id: 1 },
    ]);
    const parse = await post(core, '{"id":1,');
    expect([parse.status, JSON.parse(parse.text).error]).toEqual([500, { code: -32700, message: 'Parse error' }]);
    const invalid = await post(core, { id: 2 });
    expect([invalid.status, JSON.parse(invalid.text).error]).toEqual([400, { code: -32600, message: 'Missing method' }]);
    expect((await fetch(`http://127.0.0.1:${core.port}/`)).status).toBe(405);
  });

  it('answers batches in order with HTTP 200, errors in place, and counts every call', async () => {
    const core = await start();
    const batch = await post(core, [
      { jsonrpc: '2.0', id: 1, method: 'getblockcount' },
      { id: 2, method: 'nosuchmethod' },
      { id: 3, method: 'getblockhash', params: { height: 1 } },
      { id: 4, method: 'getblock', params: [GENESIS_HASH, 0] },
    ]);
    expect(batch.status).toBe(200);
    const replies = JSON.parse(batch.text) as Json[];
    expect(replies.map((r) => r.id)).toEqual([1, 2, 3, 4]);
    expect(replies[0]).toEqual({ result: 255, error: null, id: 1 });
    expect(replies[1]!.error).toEqual({ code: -32601, message: 'Method not found' });
    expect(replies[2]!.result).toBe('00000000839a8e6886ab5951d76f411475428afc90947ee320161bbf18eb6048');
    expect(Block.fromHex(replies[3]!.result).getId()).toBe(GENESIS_HASH);
    expect(core.calls).toEqual({ getblockcount: 1, nosuchmethod: 1, getblockhash: 1, getblock: 1 });
  });

  it('answers "jsonrpc": "2.0" requests as Core 28 does when jsonrpc2 is on (and as Core 27 does when not)', async () => {
    const core = await start({ jsonrpc2: true });
    const ok = await post(core, { jsonrpc: '2.0', id: 1, method: 'getblockcount' });
    expect([ok.status, ok.text]).toEqual([200, '{"jsonrpc":"2.0","result":255,"id":1}\n']);
    const unknown = await post(core, { jsonrpc: '2.0', id: 2, method: 'nope' });
    expect([unknown.status, unknown.text]).toEqual([
      200,
      '{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":2}\n',
    ]);
    expect((await post(core, { id: 3, method: 'nope' })).status).toBe(404);
    const notification = await post(core, { jsonrpc: '2.0', method: 'getblockcount' });
    expect([notification.status, notification.text]).toEqual([204, '']);
    expect((await post(core, [{ jsonrpc: '2.0', method: 'getblockcount' }])).status).toBe(204);
    const mixed = JSON.parse(
      (
        await post(core, [
          { jsonrpc: '2.0', method: 'getblockcount' },
          { jsonrpc: '2.0', id: 5, method: 'getblockcount' },
          { id: 6, method: 'getblockcount' },
        ])
      ).text,
    );
    expect(mixed).toEqual([
      { jsonrpc: '2.0', result: 255, id: 5 },
      { result: 255, error: null, id: 6 },
    ]);
    const version = await post(core, { jsonrpc: '3.0', id: 7, method: 'getblockcount' });
    expect([version.status, JSON.parse(version.text).error]).toEqual([400, { code: -32600, message: 'JSON-RPC version not supported' }]);
    expect((await call(core, 'getnetworkinfo')).version).toBe(280000);
    const old = await start();
    const legacy = await post(old, { jsonrpc: '2.0', id: 8, method: 'nope' });
    expect([legacy.status, JSON.parse(legacy.text)]).toEqual([
      404,
      { result: null, error: { code: -32601, message: 'Method not found' }, id: 8 },
    ]);
    expect((await call(old, 'getnetworkinfo')).version).toBe(270000);
  });

  it('raises Core’s errors for bad and unknown hashes and wrong parameter types', async () => {
    const core = await start();
    await expect(call(core, 'getblock', 'abc')).rejects.toEqual(rpcError(-8, "blockhash must be of length 64 (not 3, for 'abc')"));
    await expect(call(core, 'getblock', 'z'.repeat(64))).rejects.toEqual(
      rpcError(-8, `blockhash must be hexadecimal string (not '${'z'.repeat(64)}')`),
    );
    await expect(call(core, 'getblock', 'ab'.repeat(32))).rejects.toEqual(rpcError(-5, 'Block not found'));
    await expect(call(core, 'getblockheader', 'ab')).rejects.toEqual(rpcError(-8, "hash must be of length 64 (not 2, for 'ab')"));
    await expect(call(core, 'getblockhash', '1')).rejects.toEqual(rpcError(-3, 'JSON value of type string is not of expected type number'));
    await expect(call(core, 'getblockhash', -1)).rejects.toEqual(rpcError(-8, 'Block height out of range'));
    const named = JSON.parse((await post(core, { id: 1, method: 'getblock', params: { blockhash: GENESIS_HASH, verbose: 0 } })).text);
    expect(Block.fromHex(named.result).getId()).toBe(GENESIS_HASH);
    expect(JSON.parse((await post(core, { id: 1, method: 'getblockcount', params: { height: 1 } })).text).error).toEqual({
      code: -8,
      message: 'Unknown named parameter height',
    });
  });
});

describe('the stand-in Bitcoin Core: block and transaction JSON against real Core answers', () => {
  it('gives genesis and block 1 exactly as Core did (every field both have, chainwork and mediantime included)', async () => {
    const core = await start();
    for (const hash of [GENESIS_HASH, '00000000839a8e6886ab5951d76f411475428afc90947ee320161bbf18eb6048']) {
      const ours = await call(core, 'getblock', hash, 2);
      expect(differences(ETL(hash), ours, hash.slice(-6), new Set(['confirmations']))).toEqual([]);
      expect(ours.confirmations).toBe(256 - ours.height);
    }
    expect('previousblockhash' in (await call(core, 'getblock', GENESIS_HASH, 1))).toBe(false);
    expect('nextblockhash' in (await call(core, 'getblock', await call(core, 'getbestblockhash'), 1))).toBe(false);
  });

  it('gives blocks 50000-50002 as Core did, and writes amounts with 8 decimals and difficulty with 16 digits', async () => {
    const answers = [ETL(BLOCK_50000), ETL(BLOCK_50001), ETL(BLOCK_50002)];
    const core = await start({ chain: chainOf(answers) });
    for (const real of answers) {
      // This chain starts at 50000: chainwork and median time cannot be Core's.
      const skip = new Set(['confirmations', 'chainwork', 'mediantime', ...(real.height === 50002 ? ['nextblockhash'] : [])]);
      expect(differences(real, await call(core, 'getblock', real.hash, 2), String(real.height), skip)).toEqual([]);
    }
    const text = (await post(core, { id: 1, method: 'getblock', params: [BLOCK_50001, 2] })).text;
    expect(text).toContain('"difficulty":6.085476906000794,');
    expect(text).toContain('"value":50.00000000,"n":0');
    expect(text).not.toMatch(/"value":\d+(\.\d{1,7})?[,}]/);
  });

  it('gives every transaction of block 200000 (388) as Core did, scriptSig asm with sighash flags included', async () => {
    const real = realBlock('rpc/getblock-v2-200000.json.gz');
    const core = await start({ chain: chainOf([real]) });
    const ours = await call(core, 'getblock', real.hash, 2);
    expect(ours.tx).toHaveLength(388);
    expect(differences(real, ours, '200000', new Set(['confirmations', 'chainwork', 'mediantime', 'nextblockhash']))).toEqual([]);
    expect(ours.tx[1].vin[0].scriptSig.asm).toMatch(/^[0-9a-f]+\[ALL\] [0-9a-f]{66}$/);
  });

  it('gives block 200000’s prevouts and fees from its spent outputs, the fees adding up to what the coinbase claims', async () => {
    const real = realBlock('rpc/getblock-v2-200000.json.gz');
    const spent = JSON.parse(fixtureText('rpc/getblock-v2-200000.input-transactions.json.gz')) as Array<
      Array<{ txid: string; vout: Json[] }>
    >;
    const chain = chainOf([real]);
    // The source kept only each spent output (value, script); where it was mined is not known here.
    for (const prev of spent.flat())
      chain.knowOutput(prev.txid, prev.vout[0]!.n, {
        generated: false,
        height: 0,
        value: BigInt(Math.round(prev.vout[0]!.value * 1e8)),
        script: Buffer.from(prev.vout[0]!.scriptPubKey.hex, 'hex'),
      });
    const core = await start({ chain });
    const ours = await call(core, 'getblock', real.hash, 3);
    ours.tx.slice(1).forEach((t: Json, i: number) => {
      t.vin.forEach((input: Json, j: number) => {
        const { value, scriptPubKey } = spent[i + 1]![j]!.vout[0]!;
        expect(differences({ value, scriptPubKey }, input.prevout, `${t.txid}:${j}`, new Set())).toEqual([]);
      });
    });
    const text = (await post(core, { id: 1, method: 'getblock', params: [real.hash, 2] })).text;
    // Block 200000 is before the first halving: 50 BTC subsidy.
    const fees = [...text.matchAll(/"fee":(\d+)\.(\d{8})/g)].reduce((sum, m) => sum + BigInt(m[1]! + m[2]!), 0n);
    expect([ours.tx.length - 1, fees + 5_000_000_000n]).toEqual([
      text.match(/"fee":/g)!.length,
      BigInt(Math.round(real.tx[0].vout[0].value * 1e8)),
    ]);
  });

  it('decodes verbose getrawtransaction answers of real Core into the same fields', () => {
    for (const txid of [
      '0d37522b89f991f8433b80f709ad31862a54435cd003f25732fe405e9db93216',
      '0dd0394c6240355f4e4b3c88028f678ed746cebee3b3e8509620733f018914c9',
      '76a8d70a757be5055f60be076b683897cadaad6b7bdf78c43e39b9d59cb4a6ea',
    ]) {
      const real = JSON.parse(fixtureText(`rpc/bitcoin-etl/getrawtransaction_${txid}.json`)) as Json;
      const ours = JSON.parse(coreJson(txJson(Transaction.fromHex(real.hex))));
      expect(differences(real, ours, txid.slice(0, 6), new Set(['blockhash', 'confirmations', 'time', 'blocktime']))).toEqual([]);
    }
  });

  it('serves every verbosity of getblock and getblockheader from one stored block', async () => {
    const core = await start();
    const hash = await call(core, 'getblockhash', 170);
    const raw = await call(core, 'getblock', hash, 0);
    expect(Block.fromHex(raw).getId()).toBe(hash);
    const v1 = await call(core, 'getblock', hash);
    expect(v1.tx).toEqual(Block.fromHex(raw).transactions!.map((t) => t.getId()));
    expect(await call(core, 'getblock', hash, true)).toEqual(v1);
    const header = await call(core, 'getblockheader', hash);
    const { strippedsize, size, weight, tx, ...head } = v1;
    expect(header).toEqual(head);
    expect([strippedsize, size, weight, tx.length]).toEqual([490, 490, 1960, 2]);
    expect(await call(core, 'getblockheader', hash, false)).toBe(raw.slice(0, 160));
  });
});

describe('the stand-in Bitcoin Core: prerendered blocks', () => {
  it('answers the same text whether a block was rendered before listening or on the first call', async () => {
    const [lazy, eager] = [await start(), await start({ prerender: [1, 2, 3] })];
    for (const verbosity of [1, 2, 3]) {
      const body = { id: 1, method: 'getblock', params: [await call(lazy, 'getblockhash', 170), verbosity] };
      expect((await post(eager, body)).text).toBe((await post(lazy, body)).text);
    }
  });
});

describe('the stand-in Bitcoin Core: prevouts, fees and older nodes', () => {
  // Block 170 holds the first payment: block 9's coinbase, 10 BTC to Hal Finney and 40 back.
  const SPEND = 'f4184fc596403b9d638783cf57adfe4c75c605f6356fbc91338530e9831e9e16';

  it('shows prevout (v3) and fee (v2, v3) from the chain’s own outputs, as Core’s undo data does', async () => {
    const core = await start();
    const hash = await call(core, 'getblockhash', 170);
    const [v2, v3] = [await call(core, 'getblock', hash, 2), await call(core, 'getblock', hash, 3)];
    expect(v2.tx[1].fee).toBe(0);
    expect(v2.tx[0].fee).toBeUndefined();
    expect(v2.tx[1].vin[0].prevout).toBeUndefined();
    expect(v3.tx[1].vin[0].prevout).toEqual({
      generated: true,
      height: 9,
      value: 50,
      scriptPubKey: expect.objectContaining({
        type: 'pubkey',
        desc: expect.stringMatching(
          /^pk\(0411db93e1dcdb8a016b49840f8c53bc1eb68a382e97b1482ecad7b148a6909a5cb2e0eaddfb84ccf9744464f82e160bfa9b8b64f9d4c03f999b8643f656b412a3\)#/,
        ),
      }),
    });
    expect(Object.keys(v3.tx[1].vin[0])).toEqual(['txid', 'vout', 'scriptSig', 'prevout', 'sequence']);
    const text = (await post(core, { id: 1, method: 'getblock', params: [hash, 3] })).text;
    expect(text).toContain('"fee":0.00000000,');
  });

  it('leaves out a prevout it cannot find (and then the fee), as a pruned node would', async () => {
    const core = await start({ chain: relinkedChain([277647]) });
    const block = await call(core, 'getblock', await call(core, 'getbestblockhash'), 3);
    expect(block.tx).toHaveLength(213);
    // Only the outputs this block itself creates are known: a few inputs spend them, most spend older ones.
    const inputs = block.tx.slice(1).flatMap((t: Json) => t.vin.map((i: Json) => ({ known: i.prevout !== undefined, fee: t.fee })));
    expect(inputs.filter((i: Json) => !i.known).length).toBeGreaterThan(600);
    expect(inputs.filter((i: Json) => !i.known).every((i: Json) => i.fee === undefined)).toBe(true);
  });

  it('behaves like a node before v23 when verbosity3 is false: getblock 3 is getblock 2, no prevout, no fee', async () => {
    const core = await start({ verbosity3: false, txindex: true });
    const hash = await call(core, 'getblockhash', 170);
    const v3 = await post(core, { id: 1, method: 'getblock', params: [hash, 3] });
    const v2 = await post(core, { id: 1, method: 'getblock', params: [hash, 2] });
    expect(v3.text).toBe(v2.text);
    expect(v3.text).not.toMatch(/"prevout"|"fee"/);
    expect((await call(core, 'getnetworkinfo')).version).toBe(220000);
    expect((await call(core, 'getrawtransaction', SPEND, 2)).vin[0].prevout).toBeUndefined();
  });

  it('answers for pruned blocks as a pruned node does: headers yes, data no', async () => {
    const chain = mainnetChain(20);
    chain.prune(10);
    const core = await start({ chain });
    const old = await call(core, 'getblockhash', 9);
    await expect(call(core, 'getblock', old, 0)).rejects.toEqual(rpcError(-1, 'Block not available (pruned data)'));
    expect((await call(core, 'getblockheader', old)).height).toBe(9);
    const coinbase = (await call(core, 'getblock', await call(core, 'getblockhash', 10), 1)).tx[0];
    const oldCoinbase = Block.fromBuffer(chain.at(9)!.bytes).transactions![0]!.getId();
    await expect(call(core, 'getrawtransaction', oldCoinbase, 1, old)).rejects.toEqual(rpcError(-1, 'Block not available'));
    expect((await call(core, 'getrawtransaction', coinbase, 1, await call(core, 'getblockhash', 10))).txid).toBe(coinbase);
    expect(await call(core, 'getblockchaininfo')).toEqual(expect.objectContaining({ pruned: true, pruneheight: 10 }));
  });

  it('finds mined transactions with -txindex or a block hash only, as Core does', async () => {
    const plain = await start();
    const hash170 = await call(plain, 'getblockhash', 170);
    await expect(call(plain, 'getrawtransaction', SPEND)).rejects.toEqual(
      rpcError(
        -5,
        'No such mempool transaction. Use -txindex or provide a block hash to enable blockchain transaction queries. Use gettransaction for wallet transactions.',
      ),
    );
    const inBlock = await call(plain, 'getrawtransaction', SPEND, true, hash170);
    expect(Object.keys(inBlock)[0]).toBe('in_active_chain');
    expect([inBlock.in_active_chain, inBlock.blockhash, inBlock.confirmations]).toEqual([true, hash170, 86]);
    await expect(call(plain, 'getrawtransaction', SPEND, 1, GENESIS_HASH)).rejects.toEqual(
      rpcError(-5, 'No such transaction found in the provided block. Use gettransaction for wallet transactions.'),
    );
    await expect(call(plain, 'getrawtransaction', '4a5e1e4baab89f3a32518a88c31bc87f618f76673e2cc77ab2127b7afdeda33b')).rejects.toEqual(
      expect.objectContaining({ code: -5 }),
    );

    expect(await call(plain, 'getindexinfo')).toEqual({});
    const indexed = await start({ txindex: true });
    expect(await call(indexed, 'getindexinfo')).toEqual({ txindex: { synced: true, best_block_height: 255 } });
    expect(await call(indexed, 'getindexinfo', 'coinstatsindex')).toEqual({});
    expect(Transaction.fromHex(await call(indexed, 'getrawtransaction', SPEND)).getId()).toBe(SPEND);
    const v1 = await call(indexed, 'getrawtransaction', SPEND, 1);
    expect(Object.keys(v1).slice(-5)).toEqual(['hex', 'blockhash', 'confirmations', 'time', 'blocktime']);
    expect(v1.fee).toBeUndefined();
    const v2 = await call(indexed, 'getrawtransaction', SPEND, 2);
    expect([v2.fee, v2.vin[0].prevout.height]).toEqual([0, 9]);
    await expect(call(indexed, 'getrawtransaction', 'ab'.repeat(32))).rejects.toEqual(
      rpcError(-5, 'No such mempool or blockchain transaction. Use gettransaction for wallet transactions.'),
    );
    await expect(call(indexed, 'getrawtransaction', 'ab')).rejects.toEqual(
      rpcError(-8, "parameter 1 must be of length 64 (not 2, for 'ab')"),
    );
  });
});

describe('the stand-in Bitcoin Core: a pruned node above block 880,000', () => {
  const HEADER_KEYS = [
    'hash',
    'confirmations',
    'height',
    'version',
    'versionHex',
    'merkleroot',
    'time',
    'mediantime',
    'nonce',
    'bits',
    'difficulty',
    'chainwork',
    'nTx',
    'previousblockhash',
    'nextblockhash',
  ];

  it('answers getblockhash and getblockheader for every height, each header linked to its neighbours from genesis to the tip, keeping only the served blocks', async () => {
    const chain = prunedChain();
    const tip = PRUNED_HEIGHT + 19;
    // Only the served blocks are kept: the 880,000 below are computed when asked.
    expect([chain.start, chain.height]).toEqual([PRUNED_HEIGHT, tip]);
    const core = await start({ chain });
    expect(await call(core, 'getblockcount')).toBe(tip);
    let work = 0n;
    for (const h of [0, 1, 2, 210_000, 481_824, PRUNED_HEIGHT - 2, PRUNED_HEIGHT - 1, PRUNED_HEIGHT, PRUNED_HEIGHT + 1, tip]) {
      const hash = await call(core, 'getblockhash', h);
      if (h < PRUNED_HEIGHT) expect(hash).toMatch(/^0{8}[0-9a-f]{56}$/);
      const header = await call(core, 'getblockheader', hash);
      expect(header, String(h)).toMatchObject({ hash, height: h, confirmations: tip - h + 1 });
      expect(Object.keys(header)).toEqual(
        HEADER_KEYS.filter((k) => (k !== 'previousblockhash' || h > 0) && (k !== 'nextblockhash' || h < tip)),
      );
      if (h > 0) expect(header.previousblockhash).toBe(await call(core, 'getblockhash', h - 1));
      if (h < tip) expect(header.nextblockhash).toBe(await call(core, 'getblockhash', h + 1));
      expect(header.mediantime).toBeLessThanOrEqual(header.time);
      expect(BigInt(`0x${header.chainwork}`)).toBeGreaterThan(work);
      work = BigInt(`0x${header.chainwork}`);
    }
    expect(await call(core, 'getblockhash', 0)).toBe(GENESIS_HASH);
    const genesis = await call(core, 'getblockheader', GENESIS_HASH);
    const real = ETL(GENESIS_HASH);
    expect(genesis).toMatchObject({
      merkleroot: real.merkleroot,
      time: real.time,
      nonce: real.nonce,
      bits: real.bits,
      difficulty: 1,
      chainwork: real.chainwork,
      nTx: 1,
    });
    // The first served block follows the last header, a block's time later.
    const [last, first] = [
      await call(core, 'getblockheader', await call(core, 'getblockhash', PRUNED_HEIGHT - 1)),
      await call(core, 'getblockheader', await call(core, 'getblockhash', PRUNED_HEIGHT)),
    ];
    expect(first.time).toBe(last.time + 600);
    // A header alone as its 80 bytes, linked to the one below.
    const raw = Buffer.from(await call(core, 'getblockheader', last.hash, false), 'hex');
    expect(raw).toHaveLength(80);
    expect(raw.subarray(4, 36).reverse().toString('hex')).toBe(last.previousblockhash);
    for (const h of [tip + 1, -1]) await expect(call(core, 'getblockhash', h)).rejects.toEqual(rpcError(-8, 'Block height out of range'));
    await expect(call(core, 'getblockheader', `${last.hash.slice(0, 56)}${(tip + 5).toString(16).padStart(8, '0')}`)).rejects.toEqual(
      rpcError(-5, 'Block not found'),
    );
  });

  it("refuses getblock below the prune height with Core 27's error, and serves the blocks above it with their prevouts (verbosity 3)", async () => {
    const chain = prunedChain({ blocks: 170, prunedBelow: PRUNED_HEIGHT + 5 });
    const core = await start({ chain });
    const hashAt = (h: number): Promise<string> => call(core, 'getblockhash', h);
    for (const h of [0, PRUNED_HEIGHT - 1, PRUNED_HEIGHT, PRUNED_HEIGHT + 4]) {
      for (const verbosity of [0, 1, 2, 3])
        await expect(call(core, 'getblock', await hashAt(h), verbosity), `${h}/${verbosity}`).rejects.toEqual(
          rpcError(-1, 'Block not available (pruned data)'),
        );
    }
    expect((await call(core, 'getblock', await hashAt(PRUNED_HEIGHT + 5), 1)).height).toBe(PRUNED_HEIGHT + 5);
    // Mainnet block 170 (the first payment, of block 9's coinbase) at PRUNED_HEIGHT + 169: its prevout from undo data.
    const block = await call(core, 'getblock', await hashAt(PRUNED_HEIGHT + 169), 3);
    expect(block.tx[1].txid).toBe('f4184fc596403b9d638783cf57adfe4c75c605f6356fbc91338530e9831e9e16');
    expect(block.tx[1].vin[0].prevout).toMatchObject({ generated: true, height: PRUNED_HEIGHT + 8, value: 50 });
    expect(block.tx[1].fee).toBe(0);
    // A transaction in a block whose header alone is known: Core's answer for a block without data.
    await expect(call(core, 'getrawtransaction', 'ab'.repeat(32), 1, await hashAt(PRUNED_HEIGHT - 1))).rejects.toEqual(
      rpcError(-1, 'Block not available'),
    );
    expect(await call(core, 'getblockchaininfo')).toMatchObject({
      blocks: PRUNED_HEIGHT + 169,
      headers: PRUNED_HEIGHT + 169,
      pruned: true,
      pruneheight: PRUNED_HEIGHT + 5,
    });
  });

  it("answers getnetworkinfo as Core 27 does (a pruned node offers no NODE_NETWORK, v2 transport is on) and gettxout in Core 27's shape", async () => {
    const chain = prunedChain();
    const core = await start({ chain });
    const info = await call(core, 'getnetworkinfo');
    expect(Object.keys(info)).toEqual([
      'version',
      'subversion',
      'protocolversion',
      'localservices',
      'localservicesnames',
      'localrelay',
      'timeoffset',
      'networkactive',
      'connections',
      'connections_in',
      'connections_out',
      'networks',
      'relayfee',
      'incrementalfee',
      'localaddresses',
      'warnings',
    ]);
    expect(info).toMatchObject({
      version: 270000,
      subversion: '/Satoshi:27.0.0/',
      protocolversion: 70016,
      localservices: '0000000000000c08',
      localservicesnames: ['WITNESS', 'NETWORK_LIMITED', 'P2P_V2'],
      relayfee: 0.00001,
      warnings: '',
    });
    expect(info.networks.map((n: Json) => [n.name, n.reachable])).toEqual([
      ['ipv4', true],
      ['ipv6', true],
      ['onion', false],
      ['i2p', false],
      ['cjdns', false],
    ]);
    const full = await start();
    expect((await call(full, 'getnetworkinfo')).localservicesnames).toEqual(['NETWORK', 'WITNESS', 'NETWORK_LIMITED', 'P2P_V2']);

    // A coinbase at this height pays 3.125 BTC (the fourth halving); spent in the mempool, it leaves gettxout's mempool view.
    const miner = owner('p2wpkh', 'gettxout');
    const mined = mineBlock(chain, [], miner.output).transactions![0]!;
    mineBlock(chain);
    const out = await call(core, 'gettxout', mined.getId(), 0);
    expect(Object.keys(out)).toEqual(['bestblock', 'confirmations', 'value', 'scriptPubKey', 'coinbase']);
    expect(out).toEqual({
      bestblock: chain.tip!.hash,
      confirmations: 2,
      value: 3.125,
      scriptPubKey: scriptPubKeyJson(miner.output),
      coinbase: true,
    });
    const payee = owner('p2tr', 'gettxout');
    const pay = spend(coinsOf(mined, [miner]), [payTo(payee.address, 300_000_000)]);
    chain.addToMempool(pay.toHex());
    expect(await call(core, 'gettxout', mined.getId(), 0)).toBeNull();
    expect(await call(core, 'gettxout', mined.getId(), 0, false)).toEqual(out);
    expect(await call(core, 'gettxout', pay.getId(), 0)).toMatchObject({
      confirmations: 0,
      value: 3,
      coinbase: false,
      scriptPubKey: { address: payee.address, type: 'witness_v1_taproot' },
    });
    expect(await call(core, 'gettxout', pay.getId(), 0, false)).toBeNull();
    expect(await call(core, 'gettxout', mined.getId(), 1)).toBeNull();
    await expect(call(core, 'gettxout', 'ab', 0)).rejects.toEqual(rpcError(-8, "txid must be of length 64 (not 2, for 'ab')"));
    await expect(call(core, 'gettxout', mined.getId(), '0')).rejects.toEqual(
      rpcError(-3, 'JSON value of type string is not of expected type number'),
    );
    await expect(call(core, 'gettxout', mined.getId(), -1)).rejects.toEqual(rpcError(-1, 'JSON integer out of range'));
  });
});

/** A chain on mainnet blocks 0..10 whose next block pays a coinbase to a key the test holds. */
function fundedChain(): { chain: BitcoinChain; coin: Coin } {
  const chain = mainnetChain(10);
  const miner = owner('p2wpkh', 'miner');
  const block = mineBlock(chain, [], miner.output);
  return { chain, coin: coinsOf(block.transactions![0]!, [miner])[0]! };
}

describe('the stand-in Bitcoin Core: built blocks, mempool and reorgs', () => {
  it('serves built blocks paying and spending every mainnet address type, decoding back with bitcoinjs-lib', async () => {
    const { chain, coin } = fundedChain();
    const owners = ADDRESS_KINDS.map((kind) => owner(kind, 'alice'));
    expect(owners.map((o) => `${o.address.slice(0, 4)}…${o.address.length}`)).toEqual([
      expect.stringMatching(/^1/),
      expect.stringMatching(/^3/),
      'bc1q…42',
      'bc1q…62',
      'bc1p…62',
    ]);
    const fanOut = spend(
      [coin],
      owners.map((o, i) => payTo(o.address, 1_000_000 * (i + 1))),
    );
    mineBlock(chain, [fanOut]);
    const sink = owner('p2pkh', 'bob');
    const sweep = spend(coinsOf(fanOut, owners), [payTo(sink.address, 14_990_000)]);
    mineBlock(chain, [sweep]);
    const core = await start({ chain, txindex: true });

    const tip = await call(core, 'getblock', await call(core, 'getbestblockhash'), 3);
    const raw = Block.fromHex(await call(core, 'getblock', tip.hash, 0));
    expect(raw.checkTxRoots()).toBe(true);
    expect(tip.tx.map((t: Json) => t.txid)).toEqual([raw.transactions![0]!.getId(), sweep.getId()]);
    expect(tip.tx[1].fee).toBe(0.0001);
    expect(tip.tx[1].vin.map((i: Json) => [i.prevout.scriptPubKey.address, i.prevout.scriptPubKey.type, i.prevout.value])).toEqual([
      [owners[0]!.address, 'pubkeyhash', 0.01],
      [owners[1]!.address, 'scripthash', 0.02],
      [owners[2]!.address, 'witness_v0_keyhash', 0.03],
      [owners[3]!.address, 'witness_v0_scripthash', 0.04],
      [owners[4]!.address, 'witness_v1_taproot', 0.05],
    ]);
    const paid = await call(core, 'getrawtransaction', fanOut.getId(), 1);
    expect(paid.vout.map((o: Json) => o.scriptPubKey.address)).toEqual(owners.map((o) => o.address));
    expect(paid.vout.map((o: Json) => address.fromOutputScript(Buffer.from(o.scriptPubKey.hex, 'hex')))).toEqual(
      owners.map((o) => o.address),
    );
    expect(paid.vout.map((o: Json) => o.scriptPubKey.desc)).toEqual(owners.map((o) => descriptorChecksum(`addr(${o.address})`)));
    // The signatures are real: the P2WPKH one verifies against the spent output.
    const wpkhInput = 2;
    const [der, pub] = sweep.ins[wpkhInput]!.witness;
    const digest = sweep.hashForWitnessV0(wpkhInput, payments.p2pkh({ pubkey: pub! }).output!, 3_000_000n, Transaction.SIGHASH_ALL);
    expect(ecc.verify(digest, pub!, script.signature.decode(der!).signature)).toBe(true);
    // …and the Taproot key-path one against the output's tweaked key.
    const spent = coinsOf(fanOut, owners);
    const keyPath = sweep.hashForWitnessV1(
      4,
      spent.map((c) => c.owner.output),
      spent.map((c) => c.value),
      Transaction.SIGHASH_DEFAULT,
    );
    expect(ecc.verifySchnorr(keyPath, owners[4]!.output.subarray(2), sweep.ins[4]!.witness[0]!)).toBe(true);
  });

  it('takes transactions into the mempool, out when mined or dropped', async () => {
    const { chain, coin } = fundedChain();
    const alice = owner('p2tr', 'alice');
    const tx = spend([coin], [payTo(alice.address, 4_000_000_000)]);
    const core = await start({ chain });
    expect(chain.addToMempool(tx.toHex())).toBe(tx.getId());
    expect(await call(core, 'getrawmempool')).toEqual([tx.getId()]);
    const entry = (await call(core, 'getrawmempool', true))[tx.getId()];
    expect([entry.vsize, entry.fees.base, entry.wtxid]).toEqual([
      tx.virtualSize(),
      10,
      (await call(core, 'getrawtransaction', tx.getId(), 1)).hash,
    ]);
    expect(await call(core, 'getmempoolentry', tx.getId())).toEqual(entry);
    const pooled = await call(core, 'getrawtransaction', tx.getId(), 2);
    expect([pooled.blockhash, pooled.fee, pooled.vin[0].prevout]).toEqual([undefined, undefined, undefined]);
    mineBlock(chain, [tx]);
    expect(await call(core, 'getrawmempool')).toEqual([]);
    await expect(call(core, 'getmempoolentry', tx.getId())).rejects.toEqual(rpcError(-5, 'Transaction not in mempool'));
    const other = spend(coinsOf(tx, [alice]), [payTo(owner('p2pkh', 'bob').address, 1000)]);
    chain.addToMempool(other.toHex());
    expect(chain.dropFromMempool(other.getId())).toBe(true);
    expect(await call(core, 'getrawmempool')).toEqual([]);
    // A block spending the same output as a mempool transaction (a double spend) evicts it.
    chain.addToMempool(other.toHex());
    const conflicting = spend(coinsOf(tx, [alice]), [payTo(owner('p2pkh', 'carol').address, 2000)]);
    mineBlock(chain, [conflicting]);
    expect(await call(core, 'getrawmempool')).toEqual([]);
  });

  it('follows a reorg: new hashes by height, a new best block, the old block at confirmations -1, its txs back in the mempool', async () => {
    const { chain, coin } = fundedChain();
    const tx = spend([coin], [payTo(owner('p2wsh', 'carol').address, 100_000)]);
    mineBlock(chain, [tx]);
    mineBlock(chain);
    const core = await start({ chain });
    const before = await call(core, 'getblockhash', 12);
    const competing = branch(chain, 2, 3);
    chain.reorg(
      2,
      competing.map((b) => b.toBuffer()),
    );
    expect(await call(core, 'getblockcount')).toBe(14);
    expect(await call(core, 'getbestblockhash')).toBe(competing[2]!.getId());
    expect([await call(core, 'getblockhash', 12), await call(core, 'getblockhash', 14)]).toEqual([
      competing[0]!.getId(),
      competing[2]!.getId(),
    ]);
    expect((await call(core, 'getblock', before, 1)).confirmations).toBe(-1);
    expect((await call(core, 'getblock', competing[0]!.getId(), 1)).previousblockhash).toBe(chain.at(11)!.hash);
    expect(await call(core, 'getrawmempool')).toEqual([tx.getId()]);
  });

  it('relinks real big blocks onto each other at consecutive heights, keeping their txids', async () => {
    const chain = relinkedChain([574200, 277647]);
    const core = await start({ chain });
    expect(await call(core, 'getblockcount')).toBe(574201);
    const top = await call(core, 'getblock', await call(core, 'getbestblockhash'), 1);
    expect([top.height, top.previousblockhash, top.nTx]).toEqual([
      574201,
      '0000000000000000001602407ac49862a7bca9d00f7f402db20b7be2f5de59d2',
      213,
    ]);
    const original = Block.fromBuffer(bigBlock(277647));
    expect([top.hash === original.getId(), top.merkleroot, top.tx]).toEqual([
      false,
      Buffer.from(original.merkleRoot!).reverse().toString('hex'),
      original.transactions!.map((t) => t.getId()),
    ]);
    await expect(call(core, 'getblockhash', 574199)).rejects.toEqual(rpcError(-8, 'Block height out of range'));
  });
});

describe('the stand-in Bitcoin Core: Core’s text formats', () => {
  it('computes BIP-380 descriptor checksums as Core shows them', () => {
    const real = [
      'raw(deadbeef)#89f8spxm',
      'addr(bc1qj4y63fupgnd5j2ldh0jhhxf585p5h7hm0gzjfc)#3ze4scwd',
      'addr(bc1qu04njevcrk7tk9hywwqmm2pmh46vzsrruxr2mamuprctpc9zrtss6l24ut)#wtnnyhf4',
      'addr(bc1pmfpcj848a6p5pqytmle9sk4k95wn26avrv3f9tfukeqand6x3whq7y4kel)#lyg9yw4m',
      'pk(0496b538e853519c726a2c91e61ec11600ae1390813a627c66fb8be7947be63c52da7589379515d4e0a604f8141781e62294721166bf621e73a82cbf2342c858ee)#qnv32gt7',
      'raw(6a24aa21a9ede2f61c3f71d1defd3fa999dfa36953755c690689799962b48bebd836974e8cf9)#cav96mf3',
    ];
    for (const d of real) expect(descriptorChecksum(d.split('#')[0]!)).toBe(d);
  });

  it('describes output scripts as current Core does (asm numbers, type, desc, address)', () => {
    const spk = (hex: string) => scriptPubKeyJson(Buffer.from(hex, 'hex'));
    expect(spk('5120da43891ea7ee8340808bdff2585ab62d1d356bac1b2292ad3cb641d9b7468bae')).toEqual({
      asm: '1 da43891ea7ee8340808bdff2585ab62d1d356bac1b2292ad3cb641d9b7468bae',
      desc: 'addr(bc1pmfpcj848a6p5pqytmle9sk4k95wn26avrv3f9tfukeqand6x3whq7y4kel)#lyg9yw4m',
      hex: '5120da43891ea7ee8340808bdff2585ab62d1d356bac1b2292ad3cb641d9b7468bae',
      address: 'bc1pmfpcj848a6p5pqytmle9sk4k95wn26avrv3f9tfukeqand6x3whq7y4kel',
      type: 'witness_v1_taproot',
    });
    expect(spk('6a024869')).toEqual({ asm: 'OP_RETURN 26952', desc: 'raw(6a024869)#nz6xdglz', hex: '6a024869', type: 'nulldata' });
    expect(spk('6a5d0414011400')).toEqual({
      asm: 'OP_RETURN 13 1310996',
      desc: 'raw(6a5d0414011400)#cwmyltm8',
      hex: '6a5d0414011400',
      type: 'nulldata',
    });
    expect(spk('51024e73')).toEqual(expect.objectContaining({ asm: '1 29518', address: 'bc1pfeessrawgf', type: 'anchor' }));
    expect(spk('5102aabb')).toEqual(expect.objectContaining({ address: 'bc1p42asn737nx', type: 'witness_unknown' }));
    expect(spk('a914' + '00'.repeat(20) + '87')).toEqual(
      expect.objectContaining({
        asm: `OP_HASH160 ${'00'.repeat(20)} OP_EQUAL`,
        address: '31h1vYVSYuKP6AhS86fbRdMw9XHieotbST',
        type: 'scripthash',
      }),
    );
    expect(spk('00').type).toBe('nonstandard');
    expect(spk('4c').asm).toBe('[error]');
  });

  it('writes amounts as %d.%08d and doubles as %.16g', () => {
    expect(coreJson({ a: btc(0), b: btc(10_000), c: btc(2_100_000_000_000_000n), d: btc(-1) })).toBe(
      '{"a":0.00000000,"b":0.00010000,"c":21000000.00000000,"d":-0.00000001}',
    );
    expect(
      coreJson([double16(1), double16(6.085476906000794), double16(2864140.507810974), double16(1e-7), double16(123456789012345678)]),
    ).toBe('[1,6.085476906000794,2864140.507810974,1e-07,1.234567890123457e+17]');
  });
});
