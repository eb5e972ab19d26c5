import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { ZERO_HASH, type BtcBlock, type Prevout } from '../engine/bitcoin/block.js';
import { prevoutOf, txFromCore, type CoreBlock, type CoreVout } from '../engine/bitcoin/core-json.js';

/** A file of test/fixtures/bitcoin (gzipped there), its bytes. */
export const btcFixture = (path: string): Buffer => gunzipSync(readFileSync(new URL(`fixtures/bitcoin/${path}.gz`, import.meta.url)));

/** The raw mainnet blocks copied from the shared fixtures, and what the shared README gives for each. */
export const RAW_BLOCKS = [
  {
    height: 277647,
    hash: '0000000000000000054a714e580b16c583701712ab91060e92dbde6eb1e052a8',
    txs: 213,
    inputs: 733,
    outputs: 769,
    bytes: 149164,
  },
  {
    height: 574200,
    hash: '0000000000000000001602407ac49862a7bca9d00f7f402db20b7be2f5de59d2',
    txs: 3315,
    inputs: 5055,
    outputs: 8150,
    bytes: 1245250,
  },
] as const;

/** Core's getblock 2 of block 200000 (Core of 2022: `addresses[]`, no `prevout`). */
export const coreBlock200000 = (): CoreBlock => JSON.parse(btcFixture('rpc/getblock-v2-200000.json').toString()) as CoreBlock;

/**
 * Per transaction of block 200000, per non-coinbase input, the spent transaction as
 * getrawtransaction gave it, trimmed by the source to its txid and the spent output.
 */
export const inputTransactions200000 = (): Array<Array<{ txid: string; vout: CoreVout[] }>> =>
  JSON.parse(btcFixture('rpc/getblock-v2-200000.input-transactions.json').toString());

/** The prevouts of block 200000 by outpoint, from the fixture's spent transactions. */
export function prevouts200000(): Map<string, Prevout> {
  const out = new Map<string, Prevout>();
  for (const spent of inputTransactions200000().flat()) for (const o of spent.vout) out.set(`${spent.txid}:${o.n}`, prevoutOf(o));
  return out;
}

/** Block 200000 as getblock verbosity 3 shows it: each input with the `prevout` the fixture's spent transactions give. */
export function coreBlock200000v3(): CoreBlock {
  const block = coreBlock200000();
  const spent = inputTransactions200000();
  block.tx.forEach((t, k) => {
    const inputs = t.vin.filter((i) => i.coinbase === undefined);
    inputs.forEach((i, n) => {
      const source = spent[k]![n]!;
      const o = source.vout.find((v) => v.n === i.vout)!;
      if (source.txid !== i.txid) throw new Error(`input ${n} of transaction ${k}: the fixture's spent transaction is ${source.txid}`);
      // Core ≥ 25's shape; height and generated are not in the fixture (and not read).
      i.prevout = { generated: false, height: 0, value: o.value, scriptPubKey: o.scriptPubKey };
    });
  });
  return block;
}

/** A bitcoin-etl RPC answer (getblock …_2 or getrawtransaction …), as the file names them (small: not gzipped). */
export const etlJson = <T>(name: string): T =>
  JSON.parse(readFileSync(new URL(`fixtures/bitcoin/rpc/bitcoin-etl/${name}.json`, import.meta.url), 'utf8')) as T;

/** The plain reader of getblock verbosity 2 or 3 (parsed by JSON.parse), field by field into a BtcBlock: what the server's scanner (engine/bitcoin/core-scan.ts) is checked against. */
export function blockFromCore(b: CoreBlock): BtcBlock {
  return {
    header: {
      hash: b.hash,
      height: b.height,
      time: b.time,
      previousblockhash: b.previousblockhash ?? ZERO_HASH,
      merkleroot: b.merkleroot,
      bits: Number.parseInt(b.bits, 16),
      version: b.version,
      nonce: b.nonce,
      nTx: b.nTx,
      size: b.size,
      strippedsize: b.strippedsize,
      weight: b.weight,
    },
    txs: b.tx.map(txFromCore),
  };
}
