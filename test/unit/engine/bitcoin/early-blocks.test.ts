import { describe, expect, it } from 'vitest';
import { decodeAddress } from '../../../../engine/bitcoin/address.js';
import { fillPrevouts, unresolvedInputs, type Prevout } from '../../../../engine/bitcoin/block.js';
import { bitcoinBody } from '../../../../engine/bitcoin/body.js';
import { prevoutOf, type CoreBlock, type CoreTransaction } from '../../../../engine/bitcoin/core-json.js';
import { bitcoinProbeMatch, buildBtcProbe, readBtcProbe, scriptKey } from '../../../../engine/bitcoin/probe.js';
import { BtcRecordView, encodeRecord } from '../../../../engine/bitcoin/record.js';
import { KeySet, buildKeySet } from '../../../../engine/match/key-set.js';
import { blockFromCore, etlJson } from '../../../bitcoin-fixtures.js';

const OPTIONS = { streamId: 's', tag: 't', confirmed: true, includeInputs: true, includeOutputs: true };
const GENESIS = 'getblock_000000000019d6689c085ae165831e934ff763ae46a2a6c172b3f1b60a8ce26f_2';
const BLOCK_50001 = 'getblock_000000001c920d495e1eeef2452b6d1c6c229a919b28196c103ecffebabee141_2';
const SPENT_50001 = [
  '0d37522b89f991f8433b80f709ad31862a54435cd003f25732fe405e9db93216',
  '0dd0394c6240355f4e4b3c88028f678ed746cebee3b3e8509620733f018914c9',
  '76a8d70a757be5055f60be076b683897cadaad6b7bdf78c43e39b9d59cb4a6ea',
];

const viewOf = (core: CoreBlock): BtcRecordView => BtcRecordView.of(encodeRecord(blockFromCore(core)));

describe('early Bitcoin blocks (Core of 2018: `addresses[]`, pay-to-pubkey coinbases)', () => {
  it('read the genesis block, which has no previousblockhash', () => {
    const core = etlJson<CoreBlock>(GENESIS);
    const view = viewOf(core);
    expect(view.header).toMatchObject({ hash: core.hash, height: 0, previousblockhash: '0'.repeat(64), nTx: 1 });
    const body = bitcoinBody(view, { ...OPTIONS, txIndexes: [0] });
    expect(body.block).toMatchObject({ height: '0', previousblockhash: '0'.repeat(64), difficulty: '1', nTx: '1' });
    // Core then gave a pay-to-pubkey output the key's P2PKH address (1A1zP1eP…, in the fixture); Core ≥ 22 gives none, and neither do we.
    expect(body.transactions[0]!.vout[0]).toMatchObject({
      value: 50,
      scriptPubKeyType: 'pubkey',
      scriptPubKeyAddress: '',
      scriptPubKeyAddresses: [],
    });
    expect(body.transactions[0]!.vin[0]).toMatchObject({
      coinbase: core.tx[0]!.vin[0]!.coinbase,
      scriptSigHex: '',
      addresses: [],
      value: null,
    });
  });

  it('fill block 50001’s inputs from getrawtransaction answers, and match its payee', () => {
    const core = etlJson<CoreBlock>(BLOCK_50001);
    const spent = new Map(SPENT_50001.map((txid) => [txid, etlJson<CoreTransaction>(`getrawtransaction_${txid}`)]));
    const block = blockFromCore(core);
    expect(
      unresolvedInputs(block.txs)
        .map((u) => u.txid)
        .sort(),
    ).toEqual([...SPENT_50001].sort());
    const lookup = (txid: string, vout: number): Prevout | undefined => {
      const o = spent.get(txid)?.vout[vout];
      return o === undefined ? undefined : prevoutOf(o);
    };
    expect(fillPrevouts(block.txs, lookup)).toBe(0);
    const body = bitcoinBody(BtcRecordView.of(encodeRecord(block)), { ...OPTIONS, txIndexes: [1, 2] });
    // Core's own figure, from the answer (6.085476906000794).
    expect(body.block.difficulty).toBe(String(core.difficulty));
    expect(body.transactions.map((t) => t.vin.map((i) => i.value))).toEqual([['50.00000000', '50.00000000'], ['50.00000000']]);
    // The spent outputs pay public keys: no address, no probe key.
    expect(body.transactions.flatMap((t) => t.vin.map((i) => i.addresses))).toEqual([[], [], []]);
    const probe = buildBtcProbe(block.txs);
    expect(readBtcProbe(probe).count).toBe(2);
    const payee = '1HaHTfmvoUW6i6nhJf8jJs6tU4cHNmBQHQ';
    const keys = new KeySet(buildKeySet(32, [{ key: scriptKey(decodeAddress(payee).script), streams: [4] }]));
    expect(bitcoinProbeMatch(keys, probe)).toEqual(new Map([[4, [1, 2]]]));
    expect(body.transactions.map((t) => t.vout[0]!.scriptPubKeyAddress)).toEqual([payee, payee]);
  });
});
