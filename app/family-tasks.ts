import type { FamilyWorker } from '../engine/families/family.js';
import type { WorkerFamilies } from '../engine/families/worker-registry.js';
import { pack } from '../storage/codec.js';
import { movable } from '../workers/transfer.js';

/** A family's task as the worker pool runs it: its name among the families' tasks, and its input. */
export interface FamilyTask {
  name: string;
  input: unknown;
}

/**
 * The worker task that runs the chain families' own tasks (preparing their blocks, deriving xpub windows) by
 * name, with the store's encoding; the byte arrays a task names are moved back to the serving thread, not copied.
 */
export const familyTask =
  (families: WorkerFamilies) =>
  ({ name, input }: FamilyTask): unknown => {
    const { value, moved } = families.task(name)(input, { pack });
    return moved.length === 0 ? value : movable(value, moved);
  };

/**
 * A family's worker part, by its name: the default export of engine/<name>/worker.ts (its match step and tasks),
 * loaded alone, without the rest of the family.
 */
export async function workerPart(name: string): Promise<FamilyWorker> {
  const part = ((await import(/* @vite-ignore */ `../engine/${name}/worker.js`)) as { default: FamilyWorker }).default;
  if (part?.name !== name) throw new Error(`engine/${name}/worker.js is not the worker part of the ${name} family`);
  return part;
}
