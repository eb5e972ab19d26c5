import { rmSync } from 'node:fs';
import { encodeAbiParameters, type Hex } from 'viem';
import { afterEach, describe, expect, it } from 'vitest';
import { ServiceClock } from '../../../../../engine/clock.js';
import { tokenKey } from '../../../../../engine/data-api/nft/index/writer.js';
import { NftMetadata, type NftMetadataRow } from '../../../../../engine/data-api/nft/metadata.js';
import { jsonLogger, type Logger } from '../../../../../engine/log.js';
import type { Kv } from '../../../../../engine/ports.js';
import { openStore, type Store } from '../../../../../storage/env.js';
import { tempDir } from '../../../../helpers.js';

/**
 * NFT metadata rows are written off the event loop (a first request for a token, a finished fetch): on a real
 * LMDB store, a row reads back at once through NftMetadata, is in the store once its commit is done, and survives
 * the store being closed right after; a resync's removal and new row read back at once too.
 */

const CHAIN = '0x539';
const CONTRACT = '0x00000000000000000000000000000000000000c1';
const doc = (name: string): string => `data:application/json,${encodeURIComponent(JSON.stringify({ name }))}`;

let dir: string;
let store: Store | undefined;
afterEach(async () => {
  await store?.close();
  store = undefined;
  rmSync(dir, { recursive: true, force: true });
});

/** A node whose tokenURI answers the current `uri` (an ABI-encoded string). */
function metadataOn(kv: Kv, uri: { now: string }, log?: Logger): NftMetadata {
  const reads = { call: async (): Promise<Hex> => encodeAbiParameters([{ type: 'string' }], [uri.now]) };
  const fetcher = { get: async () => ({ error: 'no fetch here' }) };
  return new NftMetadata(
    kv,
    reads,
    fetcher,
    new ServiceClock({ elapsedMs: () => 0, wake: () => () => {} }, Date.parse('2026-11-24T00:00:00Z')),
    { log },
  );
}

describe('NFT metadata rows', () => {
  it('read back at once, are stored once committed, and survive a close right after the request', async () => {
    dir = tempDir();
    store = openStore(dir);
    const uri = { now: doc('one') };
    const meta = metadataOn(store, uri);
    const row = await meta.ensure(CHAIN, CONTRACT, 1n, 'erc721');
    expect(row).toMatchObject({ uri: doc('one'), metadata: JSON.stringify({ name: 'one' }), state: 'inline' });
    expect(meta.stored(CHAIN, CONTRACT, 1n)).toEqual(row);
    // A second token, then the store closed at once: its commit is not lost.
    const second = await meta.ensure(CHAIN, CONTRACT, 2n, 'erc721');
    await store.close();
    store = openStore(dir);
    expect(store.get<NftMetadataRow>('nftMetadata', tokenKey(CHAIN, CONTRACT, 1n))).toEqual(row);
    expect(store.get<NftMetadataRow>('nftMetadata', tokenKey(CHAIN, CONTRACT, 2n))).toEqual(second);
  });

  it("answers a resync's new row at once, and stores it", async () => {
    dir = tempDir();
    store = openStore(dir);
    const uri = { now: doc('one') };
    const meta = metadataOn(store, uri);
    await meta.ensure(CHAIN, CONTRACT, 7n, 'erc721');
    uri.now = doc('two');
    const again = await meta.resync(CHAIN, CONTRACT, 7n, 'erc721', 'uri', false);
    expect(again).toMatchObject({ uri: doc('two'), metadata: JSON.stringify({ name: 'two' }) });
    expect(meta.stored(CHAIN, CONTRACT, 7n)).toEqual(again);
    // Committed behind the answer: an empty write transaction ends after the ones before it.
    await store.transactAsync(() => undefined);
    expect(store.get<NftMetadataRow>('nftMetadata', tokenKey(CHAIN, CONTRACT, 7n))).toEqual(again);
  });

  it('says in the log when a row could not be stored, and reads the token again when next asked', async () => {
    dir = tempDir();
    store = openStore(dir);
    const lines: Array<Record<string, unknown>> = [];
    const log = jsonLogger(
      (line) => lines.push(JSON.parse(line) as Record<string, unknown>),
      () => 0,
      'info',
    );
    // The real store, with commits that fail as on a full disk.
    const full: Kv = Object.create(store) as Kv;
    full.transactAsync = () => Promise.reject(new Error('MDB_MAP_FULL: Environment mapsize limit reached'));
    const uri = { now: doc('one') };
    const meta = metadataOn(full, uri, log);
    const row = await meta.ensure(CHAIN, CONTRACT, 3n, 'erc721');
    expect(row).toMatchObject({ uri: doc('one') });
    // The failed commit has settled once an empty one after it has.
    await store.transactAsync(() => undefined);
    expect(meta.stored(CHAIN, CONTRACT, 3n)).toBeUndefined();
    expect(store.get('nftMetadata', tokenKey(CHAIN, CONTRACT, 3n))).toBeUndefined();
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: 'warn',
        msg: 'an NFT metadata row was not stored; the token is read again when next asked',
        key: tokenKey(CHAIN, CONTRACT, 3n),
      }),
    );
    expect(JSON.stringify(lines)).toContain('MDB_MAP_FULL');
    // Asked again: its URI is read again.
    uri.now = doc('two');
    expect(await meta.ensure(CHAIN, CONTRACT, 3n, 'erc721')).toMatchObject({ uri: doc('two') });
  });
});
