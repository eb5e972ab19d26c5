import { compileHere } from '../engine/match/compile.js';
import type { FilterSetData } from '../engine/match/filter-set.js';
import type { CompileTask, Matchings } from '../engine/match/ports.js';

/**
 * The compile task of the worker pool: a chain's filter set built from what its streams watch (the family's
 * compile), off the serving thread. Its key sets are made in shared memory, so they come back without a copy.
 *
 * Each entry's addresses travel as one string, a line each: posting a task clones it on the sending thread,
 * and a million strings cloned one by one would hold that thread for a good part of a second.
 */
export interface PackedCompileTask extends Omit<CompileTask, 'entries'> {
  entries: Array<Omit<CompileTask['entries'][number], 'addresses'> & { addresses: string }>;
}

/** The task as posted (addresses joined: none of their forms holds a line break). */
export const packCompileTask = (task: CompileTask): PackedCompileTask => ({
  ...task,
  entries: task.entries.map((e) => ({ ...e, addresses: e.addresses.join('\n') })),
});

/** The compile task over the families' compiles (the worker entry, app/worker.ts, gives the registry). */
export const compileTask =
  (matching: Matchings) =>
  (task: PackedCompileTask): FilterSetData =>
    compileHere(matching, {
      ...task,
      entries: task.entries.map((e) => ({ ...e, addresses: e.addresses === '' ? [] : e.addresses.split('\n') })),
    });
