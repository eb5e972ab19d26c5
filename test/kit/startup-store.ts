import { randomUUID } from 'node:crypto';
import { DEFAULT_LIMITS } from '../../engine/streams/limits.js';
import { streamKey } from '../../engine/delivery/dispatcher.js';
import type { StoredStream } from '../../engine/streams/model.js';
import { openStore, type Store } from '../../storage/env.js';
import { FAMILIES } from '../../app/families.js';
import { compileHere } from '../../engine/match/compile.js';
import { readPointer } from '../../engine/match/stored-base.js';
import { partName } from '../../engine/match/layered.js';
import { storedAddresses } from '../../engine/match/watched-keys.js';

/**
 * A store watching at scale, for bench:startup and test/startup-scale.test.ts: `streams` copies of one stream
 * created through the API (its stored record, new ids, in tenants of 1,000 streams: CHAINPOST_MAX_STREAMS'
 * default), each with `perStream` addresses, written by the store
 * layer as StreamsService writes them (a `streams` record with amountOfAddresses, a `streamAddresses` key per
 * address): creating a million addresses through HTTP would take longer than what it measures.
 */
export interface Scale {
  streams: number;
  perStream: number;
  /**
   * Keep the chains' watched sets in the store once written (engine/match/stored-base.ts), as a bulk write of the
   * store layer does: the server then starts on them, compiling nothing.
   */
  keep?: boolean;
}

export interface WatchedAtScale {
  /** Every stream id, in the order written (the template's own first). */
  ids: string[];
  /** The addresses of stream i are addressOf(i, 0 … perStream - 1). */
  addressOf(stream: number, k: number): string;
  /** Milliseconds the writes took. */
  writeMs: number;
  /** Milliseconds the kept watched sets took to compile and write (`keep`); 0 without. */
  keepMs: number;
  /** Bytes of the kept sets' arrays (`keep`). */
  keptBytes: number;
  /** The LMDB pages (B-tree and overflow) of the stream tables once written, bytes. */
  storeBytes: { streamAddresses: number; streams: number };
}

/** Bytes of the table's B-tree and overflow pages (LMDB's stats). */
function pages(store: Store, table: 'streamAddresses' | 'streams'): number {
  const s = store.db(table).getStats() as {
    pageSize: number;
    treeBranchPageCount: number;
    treeLeafPageCount: number;
    overflowPages: number;
  };
  return (s.treeBranchPageCount + s.treeLeafPageCount + s.overflowPages) * s.pageSize;
}

/** A distinct lowercase 20-byte address per (stream, k): stream and k in the last 8 bytes, the rest a fixed pattern hashed from them. */
export function scaleAddress(stream: number, k: number): string {
  const x = (Math.imul(stream + 1, 0x9e3779b1) ^ Math.imul(k + 1, 0x85ebca6b)) >>> 0;
  return `0x${x.toString(16).padStart(8, '0')}c0ffee00c0ffee00${stream.toString(16).padStart(8, '0')}${k.toString(16).padStart(8, '0')}`;
}

/**
 * Writes the streams into the store at `dir` (no server may hold it): the template's record (created through the
 * API, so in the stored form of today's code) copied with new ids, and every stream's addresses, a batch of
 * streams per write transaction. The template keeps its id and gets its addresses too.
 */
export async function watchAtScale(dir: string, templateId: string, scale: Scale): Promise<WatchedAtScale> {
  const started = performance.now();
  const store = openStore(dir);
  try {
    const record = store.range<StoredStream>('streams').find((e) => e.value.id === templateId)?.value;
    if (record === undefined) throw new Error(`no stream ${templateId} in ${dir}`);
    const ids = [templateId, ...Array.from({ length: scale.streams - 1 }, () => randomUUID())];
    // About 200,000 rows per write transaction (500 streams of 100 addresses; fewer streams when they hold more).
    const BATCH = Math.max(1, Math.min(500, Math.floor(200_000 / Math.max(1, scale.perStream))));
    for (let from = 0; from < ids.length; from += BATCH) {
      store.transact(() => {
        for (let i = from; i < Math.min(ids.length, from + BATCH); i++) {
          const id = ids[i]!;
          // Tenants of at most the default stream limit each, the first the template's (its key lists them).
          const tenantId = i < DEFAULT_LIMITS.streams ? record.tenantId : `${record.tenantId}-${Math.floor(i / DEFAULT_LIMITS.streams)}`;
          store.put('streams', streamKey(tenantId, id), {
            ...record,
            id,
            tenantId,
            tag: `${record.tag}-${i}`,
            amountOfAddresses: scale.perStream,
          });
          for (let k = 0; k < scale.perStream; k++) store.put('streamAddresses', `${id}/${scaleAddress(i, k)}`, 1);
        }
      });
    }
    const writeMs = performance.now() - started;
    const kept = performance.now();
    const keptBytes = scale.keep === true ? keepWatchedSets(store, FAMILIES.watched(record).chainIds) : 0;
    return {
      ids,
      addressOf: scaleAddress,
      writeMs,
      keepMs: scale.keep === true ? performance.now() - kept : 0,
      keptBytes,
      storeBytes: { streamAddresses: pages(store, 'streamAddresses'), streams: pages(store, 'streams') },
    };
  } finally {
    await store.close();
  }
}

/** Compiles each chain's watched set from the store and keeps it there as the server's pool would (compileHere with the store): the bytes of its arrays. */
function keepWatchedSets(store: Store, chains: readonly string[]): number {
  const read = storedAddresses((o) => store.keys('streamAddresses', o));
  let bytes = 0;
  for (const chain of chains) {
    // Every stream listing the chain, in the store's order: what the server's watchlist lists after its load.
    const entries = store
      .range<StoredStream>('streams')
      .filter((e) => FAMILIES.watched(e.value).chainIds.includes(chain))
      .map((e, index) => ({
        index,
        id: e.value.id,
        count: e.value.amountOfAddresses,
        allAddresses: false,
        keys: {},
        derived: new Uint8Array(0),
      }));
    compileHere(FAMILIES.matching, { chain, family: 'evm', version: 0, entries, seed: 0x9e3779b9, store: true }, read, store);
    const header = readPointer(store, chain)!;
    for (let i = 0; i < header.parts; i++)
      for (const a of ['bloom', 'slots', 'postingAt', 'postings'])
        bytes += store.getRaw('watchedSets', `${partName(header.name, i)}/${a}`)?.byteLength ?? 0;
  }
  return bytes;
}
