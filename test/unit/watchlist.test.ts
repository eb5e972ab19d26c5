import { describe, expect, it } from 'vitest';
import { EvmFilterSet } from '../../engine/evm/filter.js';
import { Watchlist } from '../../engine/match/watchlist.js';

const A = '0x1111111111111111111111111111111111111111';
const B = '0x2222222222222222222222222222222222222222';
const probeOf = (address: string): Uint8Array => {
  // A probe column (engine/evm/probe.ts) with one address, ref = tx 0 sender.
  const out = Buffer.alloc(9 + 24);
  out.writeUInt8(1, 0);
  out.writeUInt32LE(1, 1);
  out.writeUInt32LE(0, 5);
  out.write(address.slice(2), 9, 20, 'hex');
  out.writeUInt32LE(0, 29);
  return out;
};
const stream = (id: string, chainIds: string[]) => ({ id, tenantId: 't', chainIds, allAddresses: false, topic0: null, programIds: [], mintAddresses: [] });

describe('the watchlist', () => {
  it('recompiles a chain only when a stream listing it (before or after the change) changed', () => {
    const w = new Watchlist();
    w.stream(stream('s1', ['0x1']));
    w.stream(stream('s2', ['0x89']));
    w.addressesChanged('s1', [A], []);
    const eth = w.compile('0x1');
    const polygon = w.compile('0x89');
    expect(new EvmFilterSet(eth.filter).match(probeOf(A))).toEqual(new Map([[0, [0]]]));

    // Addresses of the polygon stream: ethereum's set stays as it was.
    w.addressesChanged('s2', [B], []);
    expect(w.compile('0x1')).toBe(eth);
    const polygon2 = w.compile('0x89');
    expect(polygon2).not.toBe(polygon);
    expect(new EvmFilterSet(polygon2.filter).match(probeOf(B))).toEqual(new Map([[0, [0]]]));

    // s1 moves from ethereum to polygon: both chains are compiled again, ethereum without it.
    w.stream(stream('s1', ['0x89']));
    const eth3 = w.compile('0x1');
    expect(eth3).not.toBe(eth);
    expect(eth3.streams).toEqual([]);
    expect(w.compile('0x89').streams.map((s) => s.id).sort()).toEqual(['s1', 's2']);
    expect(w.compile('0x89').filter.version).toBeGreaterThan(polygon2.filter.version);

    // An update that changes nothing matching reads, or an address call that changes nothing, recompiles nothing.
    const polygon3 = w.compile('0x89');
    w.stream(stream('s1', ['0x89']));
    w.addressesChanged('s1', [], []);
    expect(w.compile('0x89')).toBe(polygon3);

    w.removed('s2');
    expect(w.compile('0x89').streams.map((s) => s.id)).toEqual(['s1']);
    expect(w.compile('0x1')).toBe(eth3);
  });
});
