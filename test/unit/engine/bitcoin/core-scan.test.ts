import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { CoreBlock } from '../../../../engine/bitcoin/core-json.js';
import { CoreScanError, scanCoreBlock } from '../../../../engine/bitcoin/core-scan.js';
import { encodeRecord } from '../../../../engine/bitcoin/record.js';
import { blockFromCore, coreBlock200000, coreBlock200000v3, etlJson } from '../../../bitcoin-fixtures.js';
import { relinkedChain } from '../../../kit/bitcoin-core/fixtures.js';
import { runMethod, type RpcContext } from '../../../kit/bitcoin-core/rpc.js';

/** A getblock result as the body of Core's JSON-RPC answer. */
const body = (result: unknown, indent?: number): Buffer => Buffer.from(JSON.stringify({ result, error: null, id: 1 }, null, indent));
/** The reference: JSON.parse, then the plain reader. */
const reference = (b: CoreBlock): Uint8Array => encodeRecord(blockFromCore(JSON.parse(JSON.stringify(b)) as CoreBlock));
const scanned = (bytes: Uint8Array): Uint8Array => encodeRecord(scanCoreBlock(bytes)!);
/**
 * The two records byte for byte, failing with the first byte where they differ: toEqual on a record of a
 * megabyte or more walks it index by index, seconds each.
 */
const expectSameRecord = (got: Uint8Array, want: Uint8Array, name = 'record'): void => {
  let at = 0;
  while (at < got.length && at < want.length && got[at] === want[at]) at++;
  expect(
    at === got.length && at === want.length ? 'the same' : `differs at byte ${at} (${got.length} and ${want.length} bytes)`,
    name,
  ).toBe('the same');
};

describe('scanning getblock answers', () => {
  it('reads block 200000 (verbosity 2, and 3 with every prevout) into the record the plain reader makes, pretty-printed too', () => {
    const v3 = coreBlock200000v3();
    for (const block of [coreBlock200000(), v3]) {
      const want = reference(block);
      expectSameRecord(scanned(body(block)), want);
      expectSameRecord(scanned(body(block, 2)), want);
    }
    // Prevout values and scripts came through (verbosity 3).
    const b = scanCoreBlock(body(v3))!;
    expect(b.txs.slice(1).every((t) => t.vin.every((i) => i.prevout !== undefined))).toBe(true);
    expect(b.txs[0]!.isCoinbase).toBe(true);
  });

  it('reads real Core answers of 2010 (genesis, 1, 50000-50002; `addresses` of old) as the plain reader does', () => {
    const dir = new URL('../../../fixtures/bitcoin/rpc/bitcoin-etl/', import.meta.url);
    const names = readdirSync(dir)
      .filter((n) => n.startsWith('getblock_'))
      .map((n) => n.replace(/\.json$/, ''));
    expect(names.length).toBe(5);
    for (const name of names) {
      const block = etlJson<CoreBlock>(name);
      expectSameRecord(scanned(body(block)), reference(block), name);
    }
  });

  it("reads the stand-in's verbosity 3 answer of mainnet block 574200 (3,315 transactions) as the plain reader does", () => {
    const chain = relinkedChain([574200]);
    const ctx: RpcContext = { chain, options: { verbosity3: true, txindex: false }, cache: new Map(), cacheSize: 2, jsonrpc2: false };
    const result = runMethod(ctx, 'getblock', [chain.at(574200)!.hash, 3]);
    const text = typeof result === 'string' ? result : Buffer.concat(result).toString();
    const bytes = Buffer.from(`{"result":${text},"error":null,"id":1}`);
    expectSameRecord(scanned(bytes), reference(JSON.parse(text) as CoreBlock));
  });

  it('keeps every amount exact: read from the digits, not through a double', () => {
    const block = coreBlock200000();
    const tx = block.tx[1]!;
    const whole = body(block).toString();
    const at = (value: string): number => {
      const text = whole.replace(`"value":${tx.vout[0]!.value}`, `"value":${value}`);
      return scanCoreBlock(Buffer.from(text))!.txs[1]!.vout[0]!.value;
    };
    expect(at('20999999.97690000')).toBe(2_099_999_997_690_000);
    expect(at('0.00000001')).toBe(1);
    expect(at('0.1')).toBe(10_000_000);
    expect(at('1e-8')).toBe(1);
  });

  it("answers null for a null result, throws the node's error, and refuses what is not a verbosity 2 or 3 block, naming where", () => {
    expect(scanCoreBlock(Buffer.from('{"result":null,"error":null,"id":1}'))).toBeNull();
    expect(() => scanCoreBlock(Buffer.from('{"result":null,"error":{"code":-5,"message":"Block not found"},"id":1}'))).toThrow(
      /Block not found/,
    );
    const block = coreBlock200000();
    const ids = { ...block, tx: block.tx.map((t) => t.txid) };
    expect(() => scanCoreBlock(body(ids))).toThrow(/verbosity 1/);
    const whole = body(block);
    expect(() => scanCoreBlock(whole.subarray(0, whole.length / 2))).toThrow(CoreScanError);
    expect(() => scanCoreBlock(Buffer.from(whole.toString().replace('"merkleroot"', '"merkleRoot"')))).toThrow(/no merkleroot/);
    // Scripts are decoded from the answer's bytes: a digit that is not hex, or half a byte, is named.
    const script = block.tx[1]!.vout[0]!.scriptPubKey.hex;
    for (const bad of [`${script.slice(0, -2)}zz`, script.slice(0, -1)]) {
      expect(() => scanCoreBlock(Buffer.from(whole.toString().replace(`"hex":"${script}"`, `"hex":"${bad}"`)))).toThrow(/not hex/);
    }
    // Integers in another form (not Core's) are still read by their value.
    expect(
      scanCoreBlock(Buffer.from(whole.toString().replace(/"time":(\d+)/, (_, t: string) => `"time":${Number(t) / 1e9}e9`)))!.header.time,
    ).toBe(block.time);
    // A string holding escapes and brackets is stepped over whole.
    const escaped = whole.toString().replace('"chainwork"', '"comment":"a \\\\\\" quoted ] } [ {","chainwork"');
    expectSameRecord(scanned(Buffer.from(escaped)), reference(block));
  });
});
