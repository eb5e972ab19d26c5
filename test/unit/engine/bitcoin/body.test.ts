import * as ecc from '@bitcoinerlab/secp256k1';
import { address as bjsAddress, Block, crypto, initEccLib, networks } from 'bitcoinjs-lib';
import { describe, expect, it } from 'vitest';
import {
  bitcoinBody,
  mempoolBody,
  satsToBtc,
  satsToBtcString,
  type BtcBody,
  type BtcBodyOptions,
} from '../../../../engine/bitcoin/body.js';
import { difficultyOf } from '../../../../engine/bitcoin/block.js';
import { blockFromRaw, parseBlock } from '../../../kit/bitcoin-core/raw.js';
import { btcToSats, txFromCore } from '../../../../engine/bitcoin/core-json.js';
import { BtcRecordView, encodeRecord } from '../../../../engine/bitcoin/record.js';
import { blockFromCore, RAW_BLOCKS, coreBlock200000, coreBlock200000v3 } from '../../../bitcoin-fixtures.js';
import { bigBlock } from '../../../kit/bitcoin-core/fixtures.js';

initEccLib(ecc);

const OPTIONS: BtcBodyOptions = { streamId: 'stream-1', tag: 'payments', includeInputs: true, includeOutputs: true };
const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
const reversed = (b: Uint8Array): string => Buffer.from(b).reverse().toString('hex');

function bitcoinjsAddress(script: Uint8Array): string | undefined {
  try {
    return bjsAddress.fromOutputScript(script, networks.bitcoin);
  } catch {
    return undefined;
  }
}

/** An input's addresses and value, from the output it spends (bitcoinjs-lib's decoding) when known. */
function spentOf(o: { script: Uint8Array; value: bigint } | undefined): { addresses: string[]; value: string | null } {
  if (o === undefined) return { addresses: [], value: null };
  const address = bitcoinjsAddress(o.script);
  return { addresses: address === undefined ? [] : [address], value: (Number(o.value) / 1e8).toFixed(8) };
}

/** The body of every transaction of a raw fixture block, through record and view. */
function bodyOf(height: number, o: Partial<BtcBodyOptions> = {}): { body: BtcBody; view: BtcRecordView } {
  const view = BtcRecordView.of(encodeRecord(blockFromRaw(parseBlock(bigBlock(height)), height)));
  return {
    view,
    body: bitcoinBody(view, { ...OPTIONS, ...o, confirmed: true, txIndexes: Array.from({ length: view.txCount }, (_, i) => i) }),
  };
}

describe('Bitcoin webhook bodies', () => {
  it('write values: outputs as BTC numbers, inputs as BTC strings of 8 decimals, both exact', () => {
    expect([0, 1, 10_000, 2_100_000_000_000_000].map(satsToBtcString)).toEqual([
      '0.00000000',
      '0.00000001',
      '0.00010000',
      '21000000.00000000',
    ]);
    expect([0, 1, 10_000, 2_100_000_000_000_000].map(satsToBtc)).toEqual([0, 0.00000001, 0.0001, 21_000_000]);
    expect(JSON.stringify([satsToBtc(5_063_517_500), satsToBtc(123_456_789)])).toBe('[50.635175,1.23456789]');
    // The docs' Math.round(btc * 1e8) gives the satoshis back, through JSON.
    for (const k of [0, 1, 99, 1e8 - 1, 2_099_999_999_999_999, 2_100_000_000_000_000])
      expect(btcToSats(JSON.parse(JSON.stringify(satsToBtc(k))) as number)).toBe(k);
    expect(() => satsToBtcString(-1)).toThrow(RangeError);
    expect(() => satsToBtcString(0.5)).toThrow(RangeError);
  });

  it('show every transaction of blocks 277647 and 574200 as bitcoinjs-lib decodes the serialized block', () => {
    for (const b of RAW_BLOCKS) {
      const bytes = bigBlock(b.height);
      const { body } = bodyOf(b.height);
      const block = Block.fromBuffer(bytes);
      const txs = block.transactions!;
      expect(body).toMatchObject({
        confirmed: true,
        chainId: 'btc-mainnet',
        network: 'mainnet',
        streamId: 'stream-1',
        tag: 'payments',
        retries: 0,
      });
      expect(body.block).toEqual({
        hash: block.getId(),
        height: String(b.height),
        timestamp: String(block.timestamp),
        previousblockhash: reversed(block.prevHash!),
        merkleroot: reversed(block.merkleRoot!),
        difficulty: String(difficultyOf(block.bits)),
        nTx: String(txs.length),
        size: String(bytes.length),
        weight: String(block.weight()),
      });
      expect(body.transactions).toHaveLength(txs.length);
      // No lookup was given: an input's spent output is known when an earlier transaction of the block is its source.
      const earlier = new Map<string, (typeof txs)[number]>();
      txs.forEach((tx, i) => {
        const t = body.transactions[i]!;
        expect(t).toMatchObject({
          txid: tx.getId(),
          hash: reversed(crypto.hash256(tx.toBuffer())),
          version: tx.version,
          size: tx.byteLength(),
          vsize: tx.virtualSize(),
          weight: tx.weight(),
          locktime: tx.locktime,
          isCoinbase: tx.isCoinbase(),
          inputCount: tx.ins.length,
          outputCount: tx.outs.length,
          blockHash: block.getId(),
          blockNumber: b.height,
          blockTimestamp: String(block.timestamp),
          timestamp: block.timestamp,
        });
        expect(t.vin).toEqual(
          tx.ins.map((input) => ({
            txid: reversed(input.hash),
            vout: input.index,
            scriptSigHex: tx.isCoinbase() ? '' : hex(input.script),
            sequence: input.sequence,
            coinbase: tx.isCoinbase() ? hex(input.script) : '',
            txinwitness: input.witness.map(hex),
            ...spentOf(earlier.get(reversed(input.hash))?.outs[input.index]),
          })),
        );
        earlier.set(tx.getId(), tx);
        expect(t.vout).toEqual(
          tx.outs.map((o, n) => {
            const address = bitcoinjsAddress(o.script);
            return {
              n,
              value: Number(o.value) / 1e8,
              scriptPubKeyHex: hex(o.script),
              scriptPubKeyType: expect.any(String),
              scriptPubKeyAddress: address ?? '',
              scriptPubKeyAddresses: address === undefined ? [] : [address],
            };
          }),
        );
        expect(t.xpubs).toBeUndefined();
      });
    }
  });

  it('give an input the address and value of the output it spends, null and [] when that is not known', () => {
    const core = coreBlock200000v3();
    const block = blockFromCore(core);
    const view = BtcRecordView.of(encodeRecord(block));
    const body = bitcoinBody(view, { ...OPTIONS, confirmed: false, txIndexes: Array.from({ length: 388 }, (_, i) => i) });
    body.transactions.forEach((t, i) => {
      expect(t.vin.map((v) => ({ addresses: v.addresses, value: v.value }))).toEqual(
        core.tx[i]!.vin.map((v) =>
          v.prevout === undefined
            ? { addresses: [], value: null }
            : { addresses: v.prevout.scriptPubKey.addresses ?? [], value: v.prevout.value.toFixed(8) },
        ),
      );
      expect(t.vout.map((o) => ({ value: o.value, type: o.scriptPubKeyType, addresses: o.scriptPubKeyAddresses }))).toEqual(
        core.tx[i]!.vout.map((o) => ({ value: o.value, type: o.scriptPubKey.type, addresses: o.scriptPubKey.addresses ?? [] })),
      );
    });
    expect(body.block.difficulty).toBe(String(core.difficulty));
    // A spend whose output is not known.
    const unknown = txFromCore(coreBlock200000().tx[1]!);
    expect(mempoolBody(unknown, { ...OPTIONS, now: 1_700_000_000 }).transactions[0]!.vin[0]).toMatchObject({ addresses: [], value: null });
  });

  it('leave out inputs or outputs when the stream does, keeping their counts, and list the xpubs a transaction touched', () => {
    const { body } = bodyOf(277647, {
      includeInputs: false,
      includeOutputs: false,
      xpubsOf: (i) => (i === 5 ? [{ xpub: 'xpub6…', address: '1abc' }] : []),
    });
    expect(body.transactions.every((t) => t.vin.length === 0 && t.vout.length === 0 && t.inputCount > 0 && t.outputCount > 0)).toBe(true);
    expect(body.transactions.filter((t) => t.xpubs !== undefined).map((t) => t.xpubs)).toEqual([[{ xpub: 'xpub6…', address: '1abc' }]]);
    expect('xpubs' in body.transactions[4]!).toBe(false);
  });

  it('deliver only the matched transactions, decoded from the record alone', () => {
    const view = BtcRecordView.of(encodeRecord(blockFromRaw(parseBlock(bigBlock(574200)), 574200)));
    const body = bitcoinBody(view, { ...OPTIONS, confirmed: false, txIndexes: [3, 700, 3314] });
    expect(body.transactions.map((t) => t.txid)).toEqual([view.txid(3), view.txid(700), view.txid(3314)]);
    expect(view.decoded).toBe(3);
    expect(body.confirmed).toBe(false);
  });

  it('mark a mempool delivery with the sentinels', () => {
    const core = coreBlock200000v3();
    const tx = txFromCore(core.tx[1]!);
    const body = mempoolBody(tx, { ...OPTIONS, now: 1_700_000_123 });
    expect(body).toMatchObject({
      confirmed: false,
      chainId: 'btc-mainnet',
      block: {
        hash: 'mempool',
        height: '0',
        timestamp: '',
        previousblockhash: '',
        merkleroot: '',
        difficulty: '',
        nTx: '',
        size: '',
        weight: '',
      },
    });
    expect(body.transactions[0]).toMatchObject({
      txid: tx.txid,
      blockHash: 'mempool',
      blockNumber: 0,
      blockTimestamp: '',
      timestamp: 1_700_000_123,
      inputCount: 1,
      outputCount: 2,
    });
    expect(body.transactions[0]!.vin[0]).toMatchObject({ addresses: ['1CfD77hupeUvFwBPxZ2fA8iyWmVwQY22oh'], value: '102.12000000' });
  });
});
