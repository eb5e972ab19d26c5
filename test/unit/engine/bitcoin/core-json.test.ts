import { describe, expect, it } from 'vitest';
import { difficultyOf, fillPrevouts, unresolvedInputs } from '../../../../engine/bitcoin/block.js';
import { btcToSats, txFromCore, type CoreBlock } from '../../../../engine/bitcoin/core-json.js';
import { classifyScript } from '../../../../engine/bitcoin/script.js';
import { parseJsonBytes } from '../../../../engine/ingest/json-bytes.js';
import { blockFromCore, btcFixture, coreBlock200000, coreBlock200000v3, prevouts200000 } from '../../../bitcoin-fixtures.js';

const MAX_SATS = 21e6 * 1e8;

/** k satoshis as Core writes BTC (8 decimals), parsed as JSON would. */
const parsed = (k: number): number => JSON.parse(`${Math.floor(k / 1e8)}.${String(k % 1e8).padStart(8, '0')}`) as number;

describe('Core JSON', () => {
  it('reads BTC amounts to satoshis exactly over the whole range', () => {
    // Every amount up to 0.1 BTC, the top of the range, and a sample between (the bound in btcToSats covers the rest).
    for (let k = 0; k <= 10_000_000; k++) if (btcToSats(parsed(k)) !== k) throw new Error(`${k} satoshis`);
    for (let k = MAX_SATS - 1_000_000; k <= MAX_SATS; k++) if (btcToSats(parsed(k)) !== k) throw new Error(`${k} satoshis`);
    let seed = 1;
    for (let n = 0; n < 2_000_000; n++) {
      seed = (Math.imul(seed, 48271) >>> 0) % 0x7fffffff;
      const k = Math.floor((seed / 0x7fffffff) * MAX_SATS) + (n % 1000);
      if (k <= MAX_SATS && btcToSats(parsed(k)) !== k) throw new Error(`${k} satoshis`);
    }
    expect([btcToSats(0), btcToSats(0.00000001), btcToSats(21e6), btcToSats(50.635175)]).toEqual([0, 1, MAX_SATS, 5_063_517_500]);
  });

  it('derives Core’s difficulty from bits', () => {
    const core = coreBlock200000();
    expect(difficultyOf(Number.parseInt(core.bits, 16))).toBe(core.difficulty);
    expect(difficultyOf(0x1d00ffff)).toBe(1);
  });

  it('reads block 200000 (verbosity 2) with every input unresolved, then filled from the block itself and the spent transactions', () => {
    const core = coreBlock200000();
    const block = blockFromCore(core);
    expect(block.header).toMatchObject({
      hash: core.hash,
      height: 200000,
      nTx: 388,
      bits: 0x1a05db8b,
      previousblockhash: core.previousblockhash,
    });
    expect(block.txs[0]!.isCoinbase).toBe(true);
    expect(block.txs[0]!.vin[0]).toMatchObject({
      txid: '0'.repeat(64),
      vout: 0xffffffff,
      scriptSig: Buffer.from(core.tx[0]!.vin[0]!.coinbase!, 'hex'),
    });
    expect(unresolvedInputs(block.txs)).toHaveLength(1231);
    expect(unresolvedInputs(block.txs)[0]).toEqual({ tx: 1, input: 0, txid: core.tx[1]!.vin[0]!.txid, vout: 1 });
    const known = prevouts200000();
    const asked: string[] = [];
    const left = fillPrevouts(block.txs, (txid, vout) => {
      asked.push(`${txid}:${vout}`);
      return known.get(`${txid}:${vout}`);
    });
    expect(left).toBe(0);
    // 286 inputs spend outputs of earlier transactions in the block: found there, not asked for.
    expect(asked).toHaveLength(1231 - 286);
    expect(unresolvedInputs(block.txs)).toEqual([]);
    // Verbosity 3 carries the same prevouts.
    expect(blockFromCore(coreBlock200000v3())).toEqual(block);
  });

  it('takes the script’s bytes, not Core’s address fields: the old `addresses[]` and the current `address` read alike, and agree with the script', () => {
    const core = coreBlock200000v3();
    let checked = 0;
    for (const t of core.tx) {
      for (const s of [...t.vout.map((o) => o.scriptPubKey), ...t.vin.flatMap((i) => (i.prevout ? [i.prevout.scriptPubKey] : []))]) {
        const info = classifyScript(Buffer.from(s.hex, 'hex'));
        expect(info.type).toBe(s.type);
        expect(info.address).toBe(s.addresses?.[0]);
        checked++;
      }
    }
    expect(checked).toBe(822 + 1231);
    const old = core.tx[1]!;
    const current = structuredClone(old);
    for (const o of current.vout) {
      o.scriptPubKey = { hex: o.scriptPubKey.hex, address: o.scriptPubKey.addresses![0]!, type: o.scriptPubKey.type };
    }
    expect(txFromCore(current)).toEqual(txFromCore(old));
  });

  it('read the same from a large body parsed by parseJsonBytes (the EVM follower’s reader of JSON-RPC bodies; Bitcoin’s scans them, see core-scan.test.ts)', () => {
    const bytes = btcFixture('rpc/getblock-v2-200000.json');
    expect(bytes.length).toBeGreaterThan(1_000_000);
    expect(blockFromCore(parseJsonBytes(bytes) as CoreBlock)).toEqual(blockFromCore(coreBlock200000()));
  });
});
