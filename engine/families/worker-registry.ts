import type { ChainFamily } from '../chains/registry.js';
import type { FamilyMatching } from '../match/ports.js';
import type { FamilyWorker, TaskParts, TaskResult } from './family.js';

/**
 * The families as a worker of the pool knows them (app/worker.ts): each one's match step, and every family's tasks
 * by name. Built from their worker parts alone, so a worker loads none of what the rest of a family imports; the
 * server's registry (registry.ts) is one too, over the full families.
 */
export class WorkerFamilies {
  /** Every family's worker tasks, by name. */
  private readonly tasks = new Map<string, (input: unknown, parts: TaskParts) => TaskResult>();
  private readonly steps = new Map<string, FamilyMatching>();

  constructor(families: Iterable<FamilyWorker>) {
    for (const f of families) {
      this.steps.set(f.name, f.matching);
      for (const [name, task] of Object.entries(f.tasks)) {
        if (this.tasks.has(name)) throw new Error(`two families have a worker task named ${name}`);
        this.tasks.set(name, task);
      }
    }
  }

  /** A family's task of the worker pool, by its name. */
  task(name: string): (input: unknown, parts: TaskParts) => TaskResult {
    const task = this.tasks.get(name);
    if (task === undefined) throw new Error(`no family has a worker task named ${name}`);
    return task;
  }

  /** The family's match step; undefined for a family the server has none of (Aptos: sign-in only). */
  matching = (family: ChainFamily): FamilyMatching | undefined => this.steps.get(family);
}
