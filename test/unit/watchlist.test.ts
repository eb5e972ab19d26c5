import { rmSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EvmFilterSet } from '../../engine/evm/filter.js';
import { Watchlist } from '../../engine/match/watchlist.js';
import { openStore } from '../../storage/env.js';
import { tempDir } from '../helpers.js';

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

describe('the watchlist and Solana streams', () => {
  // Mainnet's SPL Token and Vote programs, the USDC and USDT mints, a wallet key (stored beside its lower-cased form: the store keeps what it is given).
  const TOKEN = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA';
  const VOTE = 'Vote111111111111111111111111111111111111111';
  const USDC = 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v';
  const USDT = 'Es9vMFrzaCERmJfrF4H2FYD4KCoNkY11McCe8BenwNYB';
  const WALLET = '9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM';

  it('loads Solana records from the store and hands their programIds, mintAddresses and addresses (as given) to the chain\'s compile', async () => {
    const store = openStore(tempDir());
    try {
      const common = { webhookUrl: 'http://x', description: '', tag: '', demo: false, status: 'active', statusMessage: '', createdAt: 0, updatedAt: 0 };
      store.transact(() => {
        store.put('streams', 't/sol', { ...common, id: 'sol', tenantId: 't', family: 'solana', network: ['mainnet'], programIds: [TOKEN, VOTE], mintAddresses: [USDC], allAddresses: false, amountOfAddresses: 2 });
        store.put('streams', 't/sol-all', { ...common, id: 'sol-all', tenantId: 't', family: 'solana', network: ['mainnet'], programIds: [], mintAddresses: [], allAddresses: true, amountOfAddresses: 0 });
        store.put('streams', 't/evm', { ...common, id: 'evm', tenantId: 't', chainIds: ['0x1'], topic0: null, allAddresses: false, amountOfAddresses: 0 });
        store.put('streams', 'u/btc', { ...common, id: 'btc', tenantId: 'u', family: 'bitcoin', network: ['mainnet'], includeInputs: true, includeOutputs: true, allAddresses: false, amountOfAddresses: 0 });
        store.put('streamAddresses', `sol/${WALLET}`, 1);
        store.put('streamAddresses', `sol/${WALLET.toLowerCase()}`, 1);
      });
      const w = new Watchlist();
      w.load(store);
      const solana = w.watchedOn('solana');
      expect(solana.streams).toEqual([{ id: 'sol', tenantId: 't' }, { id: 'sol-all', tenantId: 't' }]);
      expect(solana.entries[0]).toMatchObject({ index: 0, programIds: [TOKEN, VOTE], mintAddresses: [USDC], allAddresses: false, topic0: [] });
      expect([...solana.entries[0]!.addresses].sort()).toEqual([WALLET, WALLET.toLowerCase()].sort());
      expect(solana.entries[1]).toMatchObject({ index: 1, programIds: [], mintAddresses: [], allAddresses: true, addresses: [] });
      // Other families' entries carry none, and a Solana stream is on no other chain.
      expect(w.watchedOn('0x1').entries).toMatchObject([{ programIds: [], mintAddresses: [] }]);
      expect(w.watchedOn('0x1').streams).toEqual([{ id: 'evm', tenantId: 't' }]);
      expect(w.watchedOn('bitcoin').entries).toMatchObject([{ programIds: [], mintAddresses: [] }]);
      expect(w.watchedOn('bitcoin').streams).toEqual([{ id: 'btc', tenantId: 'u' }]);
    } finally {
      await store.close();
      rmSync(store.path, { recursive: true, force: true });
    }
  });

  it('recompiles the stream\'s chains when its programIds or mintAddresses change, and only then', () => {
    // On an EVM chain, whose compile exists here: what is checked is the watchlist's versioning, the same for every family.
    const w = new Watchlist();
    const s = (programIds: string[], mintAddresses: string[]) => ({ id: 's', tenantId: 't', chainIds: ['0x1'], allAddresses: false, topic0: null, programIds, mintAddresses });
    w.stream(s([TOKEN], []));
    const first = w.compile('0x1');
    w.stream(s([TOKEN], []));
    expect(w.compile('0x1')).toBe(first);
    w.stream(s([TOKEN, VOTE], []));
    const second = w.compile('0x1');
    expect(second.filter.version).toBeGreaterThan(first.filter.version);
    w.stream(s([TOKEN, VOTE], [USDT]));
    const third = w.compile('0x1');
    expect(third.filter.version).toBeGreaterThan(second.filter.version);
    expect(w.watchedOn('0x1').entries[0]).toMatchObject({ programIds: [TOKEN, VOTE], mintAddresses: [USDT] });
    w.stream(s([TOKEN, VOTE], [USDT]));
    expect(w.compile('0x1')).toBe(third);
  });
});
