import { describe, expect, it } from 'vitest';
import { buildProbe } from '../../../../engine/evm/probe.js';
import { encodeRecord, normalizeBlock } from '../../../../engine/evm/record.js';
import { EvmFilterSet, compileFilterSet } from '../../../../engine/evm/filter.js';
import type { TokenMetadata } from '../../../../engine/evm/token-metadata.js';
import { webhookBuilder } from '../../../../engine/evm/webhook-builder.js';
import { matchesNothing, streamResponse, type StreamRecord } from '../../../../engine/streams/model.js';
import { createStream, topic0Hash } from '../../../../engine/streams/schemas.js';
import { FIXTURE_BLOCKS, bundle } from '../../../kit/fixtures.js';

/**
 * The rule that a stream's definition can never produce a webhook, checked
 * against the webhook builder itself: over a mainnet block, with every address
 * of the block watched, a definition the rule calls hopeless gets no webhook,
 * and every other one gets one.
 */

const TRANSFER = 'Transfer(address,address,uint256)';
const ABI = [
  {
    type: 'event',
    name: 'Transfer',
    anonymous: false,
    inputs: [
      { name: 'from', type: 'address', indexed: true },
      { name: 'to', type: 'address', indexed: true },
      { name: 'value', type: 'uint256', indexed: false },
    ],
  },
];

const stream = (fields: Record<string, unknown>): StreamRecord => ({
  ...createStream.parse({ webhookUrl: 'http://127.0.0.1/hook', chainIds: ['0x1'], ...fields }),
  id: 's',
  tenantId: 't',
  status: 'active',
  statusMessage: '',
  createdAt: 0,
  updatedAt: 0,
  amountOfAddresses: 0,
});

/** Every combination of the options that decide what is matched, as the service accepts them (allAddresses needs abi and topic0). */
function definitions(): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  const flags = ['includeNativeTxs', 'includeInternalTxs', 'includeContractLogs', 'allAddresses', 'includeAllTxLogs'] as const;
  const topics = [{}, { topic0: [] }, { topic0: [TRANSFER] }, { topic0: [TRANSFER], abi: ABI }, { abi: ABI }];
  for (let bits = 0; bits < 1 << flags.length; bits++) {
    for (const t of topics) {
      const d: Record<string, unknown> = { ...t };
      flags.forEach((f, i) => (d[f] = (bits & (1 << i)) !== 0));
      if (d['allAddresses'] === true && !('abi' in t && 'topic0' in t)) continue;
      out.push(d);
    }
  }
  return out;
}

describe('matchesNothing', () => {
  it('names the missing include option, and what to set', () => {
    expect(matchesNothing(stream({}))).toBe(
      "Stream matches nothing: no include option is set. Set includeNativeTxs, includeInternalTxs or includeContractLogs (for the stream's addresses), or allAddresses with abi and topic0 (every log of those events).",
    );
    expect(matchesNothing(stream({ topic0: [TRANSFER], abi: ABI }))).toMatch(
      /^Stream matches nothing: topic0 is set but no log is included \(includeContractLogs and allAddresses are false\)\. Set /,
    );
    expect(matchesNothing(stream({ includeContractLogs: true, topic0: [TRANSFER] }))).toMatch(
      /^Stream matches nothing: topic0 keeps only the logs that decode with the stream's abi, and the stream has no abi\. Set abi/,
    );
    // Options that only add to or filter what was found make nothing matchable alone.
    expect(
      matchesNothing(
        stream({ includeAllTxLogs: true, getNativeBalances: [{ selectors: ['$fromAddress'] }], filterPossibleSpamAddresses: true }),
      ),
    ).toMatch(/no include option is set/);
    for (const can of [
      { includeNativeTxs: true },
      { includeInternalTxs: true },
      { includeContractLogs: true },
      { includeContractLogs: true, topic0: [] },
      { includeContractLogs: true, topic0: [TRANSFER], abi: ABI },
      { allAddresses: true, topic0: [TRANSFER], abi: ABI },
    ]) {
      expect(matchesNothing(stream(can)), JSON.stringify(can)).toBeUndefined();
    }
  });

  it('shows in statusMessage while it holds, after the chain check, never over error or terminated', () => {
    const none = stream({});
    expect(streamResponse(none, 0)['statusMessage']).toMatch(/^Stream matches nothing: /);
    expect(streamResponse({ ...none, status: 'paused' }, 0)['statusMessage']).toMatch(/^Stream matches nothing: /);
    expect(streamResponse({ ...none, includeNativeTxs: true }, 0)['statusMessage']).toBe('');
    const error = { ...none, status: 'error' as const, statusMessage: 'Stream in error: the queue …' };
    expect(streamResponse(error, 0)['statusMessage']).toBe('Stream in error: the queue …');
    expect(streamResponse({ ...error, status: 'terminated' }, 0)['statusMessage']).toBe('Stream in error: the queue …');
    // A stream on a removed chain: both are said, the chain first.
    const onLisk = { ...none, chainIds: ['0x46f'] };
    expect(streamResponse(onLisk, Date.parse('2026-11-23T00:00:00Z'))['statusMessage']).toMatch(
      /^Stream invalid: chain 0x46f \(lisk\) .* Stream matches nothing: /,
    );
  });

  describe.each(FIXTURE_BLOCKS.slice(-2))('against the webhook builder over mainnet block %i', (n) => {
    it('a definition it calls hopeless gets no webhook; every other one gets one', async () => {
      const b = bundle(n);
      const r = normalizeBlock(b.block, b.receipts, b.traces);
      const bytes = encodeRecord(r);
      const probe = buildProbe(r);
      // Every address of the block is watched: what a definition cannot match here, it cannot match anywhere.
      const txs = b.block['transactions'] as Array<{ from: string; to: string | null }>;
      const logs = b.receipts.flatMap((x) => x['logs'] as Array<{ address: string }>);
      const all = new Set(
        [
          ...txs.flatMap((t) => [t.from, t.to ?? t.from]),
          ...logs.map((l) => l.address),
          ...r.internal!.flatMap((c) => [c.from ?? '', c.to ?? '']).filter((a) => a !== ''),
        ].map((a) => a.toLowerCase()),
      );
      const tokens = {
        get: async () => ({ name: 'T', symbol: 'T', decimals: 18, nftStandard: '', possibleSpam: false }),
      } as unknown as TokenMetadata;
      const unreachable = (): never => {
        throw new Error('no node read expected');
      };
      const build = webhookBuilder({
        tokens,
        call: unreachable,
        gasCap: unreachable,
        balance: unreachable,
        watches: (_id, a) => all.has(a),
      });
      let hopeless = 0;
      for (const [i, d] of definitions().entries()) {
        // Its own id: the builder prepares a definition once per stream id and updatedAt.
        const s = { ...stream(d), id: `s${i}` };
        const refs =
          new EvmFilterSet(
            compileFilterSet(1, [
              { index: 0, addresses: [...all], allAddresses: s.allAddresses, topic0: (s.topic0 ?? []).map(topic0Hash) },
            ]),
          )
            .match(probe)
            .get(0) ?? [];
        const body = await build({ chain: '0x1', number: n, bytes, confirmed: false }, s, refs);
        const says = matchesNothing(s);
        expect(body === null, `${JSON.stringify(d)}: ${says ?? 'can match'}`).toBe(says !== undefined);
        if (says !== undefined) hopeless++;
      }
      // Both sides are exercised: definitions that match nothing, and ones that match.
      expect(hopeless).toBeGreaterThan(10);
      expect(definitions().length - hopeless).toBeGreaterThan(10);
    });
  });
});
