import type { Logger } from '../log.js';
import { DERIVED_KEY_BYTES, type CompileTask, type FilterCompiler, type Matchings } from './ports.js';
import type { FilterSetData } from './filter-set.js';
import { addressKeyParts, addressKeySet, type AddressReader } from './watched-keys.js';
import type { Kv } from '../ports.js';
import { buildLayer, type LayerResult, type LayerTask } from './bases.js';
import { postable } from './layered.js';
import { sharedBlooms } from './shared-words.js';
import { writeBase } from './stored-base.js';
import { watchSeq } from '../streams/watch-log.js';

/**
 * Where a chain's filter set is compiled: here, on the calling thread, or in the worker pool. A million
 * watched addresses take seconds to compile (read from the store, distinct keys merged, then hashed into the key
 * sets), which on the serving thread would hold every request that long; a few thousand take a few milliseconds,
 * less than a worker's round trip, and a set is wanted by the block waiting on it. Either thread reads the streams'
 * addresses from the store itself (`read`): none of them is kept in the serving thread's heap.
 */

/**
 * The family's compile (by the registry of families), run here over the addresses `read` gives; an error for a
 * family without matching. With `store` (and the task's `store`), the address set is kept in it as the chain's base,
 * at the watch log's number as `store` reads it (the same snapshot as `read`): dense, in this thread's memory (lmdb-js
 * is not handed shared memory), its bloom filter copied into shared memory for the answer, which names it by ref.
 */
export function compileHere(
  matching: Matchings,
  task: CompileTask,
  read: AddressReader,
  store?: Pick<Kv, 'get' | 'put' | 'putRaw' | 'transact'>,
): FilterSetData {
  const m = matching(task.family);
  if (m === undefined) throw new Error(`no matching for ${task.family} chains`);
  if (task.store !== true || store === undefined)
    return m.compile(task.version, task.entries, task.seed, addressKeySet(m.addressKey, task.entries, read, task.seed));
  const seq = watchSeq(store);
  const parts = addressKeyParts(m.addressKey, task.entries, read, task.seed);
  const base = writeBase(
    store,
    task.chain,
    seq,
    task.entries.map((e) => e.id),
    parts,
  );
  // Posted by ref (postable): each part's name and its bloom filter, copied into one shared memory.
  const blooms = sharedBlooms(parts.map((p) => p.bloom));
  const set = postable({ base: parts.map((p, i) => ({ ...p, bloom: blooms[i]! })), layers: [], stored: base.name });
  return { ...m.compile(task.version, task.entries, task.seed, set), base };
}

/** A change layer built here (the pool's, or this thread's over the store). */
export function layerHere(matching: Matchings, task: LayerTask, kv: Pick<Kv, 'get' | 'range'>): LayerResult {
  const m = matching(task.family as CompileTask['family']);
  if (m === undefined) throw new Error(`no matching for ${task.family} chains`);
  return buildLayer(kv, m.addressKey, task);
}

export const inlineCompiler = (matching: Matchings, read: AddressReader): FilterCompiler => ({
  compile: (task) => Promise.resolve(compileHere(matching, task, read)),
});

/** Watched keys (addresses, xpub-derived keys, topics, programs, mints) of a task: what its compile's time grows with. */
export function keysOf(task: Pick<CompileTask, 'entries'>): number {
  let n = 0;
  for (const e of task.entries) {
    n += e.count + e.derived.length / DERIVED_KEY_BYTES;
    for (const keys of Object.values(e.keys)) n += keys.length;
  }
  return n;
}

/** `pool` for a task of more than `maxKeys` watched keys (logged: matching of the chain waits for it), the calling thread (reading with `read`) for smaller ones. */
export function inlineSmallCompiles(
  pool: FilterCompiler,
  maxKeys: number,
  log: Logger,
  matching: Matchings,
  read: AddressReader,
): FilterCompiler {
  return {
    async compile(task) {
      const keys = keysOf(task);
      if (keys <= maxKeys) return compileHere(matching, task, read);
      const about = { chain: task.chain, version: task.version, streams: task.entries.length, keys };
      log.info('compiling a filter set in the worker pool', about);
      const filter = await pool.compile(task);
      log.info('compiled a filter set', about);
      return filter;
    },
    ...(pool.layer === undefined ? {} : { layer: pool.layer }),
  };
}
