import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { decodeAddress } from '../../../../engine/bitcoin/address.js';
import type { BtcTransaction } from '../../../../engine/bitcoin/block.js';
import { blockFromRaw, parseBlock } from '../../../kit/bitcoin-core/raw.js';
import { BtcProbeKind, bitcoinProbeMatch, btcProbeRef, buildBtcProbe, readBtcProbe, scriptKey } from '../../../../engine/bitcoin/probe.js';
import { hasAddress, scriptType } from '../../../../engine/bitcoin/script.js';
import { KeySet, buildKeySet, type KeySetInput } from '../../../../engine/match/key-set.js';
import { blockFromCore, coreBlock200000, coreBlock200000v3, inputTransactions200000 } from '../../../bitcoin-fixtures.js';
import { bigBlock } from '../../../kit/bitcoin-core/fixtures.js';

/** A key set of the watched addresses (address → streams) among `noise` random keys watched by stream 999. */
function watching(addresses: Record<string, number[]>, noise = 10_000): KeySet {
  const entries: KeySetInput[] = Object.entries(addresses).map(([a, streams]) => ({ key: scriptKey(decodeAddress(a).script), streams }));
  for (let i = 0; i < noise; i++) entries.push({ key: randomBytes(32), streams: [999] });
  return new KeySet(buildKeySet(32, entries));
}

const addressCount = (scripts: Uint8Array[]): number => scripts.filter((s) => hasAddress(scriptType(s))).length;

describe('the Bitcoin probe column', () => {
  it('holds a key per output with an address and per known spent output with one', () => {
    const block = blockFromCore(coreBlock200000v3());
    const probe = buildBtcProbe(block.txs);
    const { count, keysAt, refsAt } = readBtcProbe(probe);
    // 822 outputs, 2 of them pay-to-pubkey; 1,231 inputs, 2 of them spending pay-to-pubkey.
    expect(count).toBe(820 + 1229);
    expect(probe.length).toBe(5 + count * 36);
    // The first entries: the coinbase pays a public key (no key), transaction 1 pays two addresses and spends one.
    const dv = Buffer.from(probe);
    expect([0, 1, 2].map((k) => dv.readUInt32LE(refsAt + k * 4))).toEqual([
      btcProbeRef(BtcProbeKind.Receiver, 1),
      btcProbeRef(BtcProbeKind.Receiver, 1),
      btcProbeRef(BtcProbeKind.Spender, 1),
    ]);
    expect(dv.subarray(keysAt, keysAt + 32)).toEqual(Buffer.from(scriptKey(block.txs[1]!.vout[0]!.script)));
    // From a serialized block without a lookup: the outputs, and the inputs spending an earlier output of the block.
    const raw = blockFromRaw(parseBlock(bigBlock(574200)), 574200);
    const outputs = addressCount(raw.txs.flatMap((t) => t.vout.map((o) => o.script)));
    const spent = addressCount(raw.txs.flatMap((t) => t.vin.flatMap((i) => (i.prevout ? [i.prevout.script] : []))));
    expect(outputs).toBe(8150 - 976 - 38);
    expect(spent).toBeGreaterThan(0);
    expect(readBtcProbe(buildBtcProbe(raw.txs)).count).toBe(outputs + spent);
  });

  it('finds exactly the transactions paying a watched address or spending from it', () => {
    const block = blockFromCore(coreBlock200000v3());
    const probe = buildBtcProbe(block.txs);
    const dice = '1dice8EMZmqKvrGE4Qc9bUFf9PX3xaYDp';
    const other = '1H5DfbDtCnKUdke9xH9svwwxqga41Z5xbz';
    const matches = bitcoinProbeMatch(watching({ [dice]: [3, 7], [other]: [7] }), probe);
    // Expected from Core's own address fields, independently of the scripts.
    const core = coreBlock200000();
    const spent = inputTransactions200000();
    const expected = (addresses: string[]): number[] =>
      core.tx.flatMap((t, i) => [
        ...(t.vout.some((o) => addresses.some((a) => o.scriptPubKey.addresses?.includes(a)))
          ? [btcProbeRef(BtcProbeKind.Receiver, i)]
          : []),
        ...(spent[i]!.some((s) => s.vout.some((o) => addresses.some((a) => o.scriptPubKey.addresses?.includes(a))))
          ? [btcProbeRef(BtcProbeKind.Spender, i)]
          : []),
      ]);
    expect(matches.get(3)).toEqual(expected([dice]));
    expect(matches.get(3)).toHaveLength(70 + 71);
    expect(matches.get(7)).toEqual(expected([dice, other]));
    expect([...matches.keys()].sort()).toEqual([3, 7]);
  });

  it('lists a transaction once per stream and kind, and matches a mempool transaction alone', () => {
    const a = decodeAddress('bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4').script;
    const b = decodeAddress('3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy').script;
    const tx: BtcTransaction = {
      txid: '11'.repeat(32),
      hash: '11'.repeat(32),
      version: 2,
      locktime: 0,
      size: 0,
      vsize: 0,
      weight: 0,
      isCoinbase: false,
      vin: [{ txid: '22'.repeat(32), vout: 0, scriptSig: new Uint8Array(0), sequence: 0, witness: [], prevout: { value: 5, script: b } }],
      vout: [
        { value: 1, script: a },
        { value: 2, script: a },
        { value: 0, script: Uint8Array.of(0x6a) },
        { value: 2, script: b },
      ],
    };
    const probe = buildBtcProbe([tx]);
    expect(readBtcProbe(probe).count).toBe(4);
    const m = bitcoinProbeMatch(
      watching({ bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4: [0], '3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy': [0, 1] }, 0),
      probe,
    );
    expect(m).toEqual(
      new Map([
        [0, [0, 1 << 24]],
        [1, [0, 1 << 24]],
      ]),
    );
    expect(bitcoinProbeMatch(watching({}, 0), probe).size).toBe(0);
    expect(() => bitcoinProbeMatch(new KeySet(buildKeySet(20, [{ key: new Uint8Array(20), streams: [0] }])), probe)).toThrow(RangeError);
  });
});
