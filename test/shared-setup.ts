import { readdirSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, expect } from 'vitest';
import { watchBlocked } from './blocked-watchdog.js';
import { stillRunning } from './in-process.js';

/**
 * Run before each file of the `shared` project (vitest.config.ts), whose files run one after another in one process
 * per worker: what a file leaves behind, the next would inherit. A file fails when it leaves an in-process server
 * running, a child process alive (anvil, a binary, a stand-in) or process.env changed; what it left is stopped, so
 * the files after it start clean.
 */
let env: Record<string, string | undefined>;
/** process.env but vitest's own (its worker ids, set per file). */
const ownEnv = (): Record<string, string | undefined> =>
  Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('VITEST')));
beforeAll(() => {
  env = ownEnv();
  watchBlocked(expect.getState().testPath ?? '');
});

afterAll(async () => {
  const servers = stillRunning();
  await Promise.all(servers.map((s) => s.stop()));
  const children = liveChildren();
  for (const { pid } of children) process.kill(pid, 'SIGKILL');
  expect(servers.map((s) => `in-process server on port ${s.port}`).concat(children.map((c) => `child ${c.pid} (${c.name})`))).toEqual([]);
  expect(ownEnv()).toEqual(env);
});

/** This process's child processes that still run (zombies, already dead, left out). */
function liveChildren(): Array<{ pid: number; name: string }> {
  const pids = readdirSync('/proc/self/task').flatMap((tid) =>
    readFileSync(`/proc/self/task/${tid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number),
  );
  return pids.flatMap((pid) => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
      const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
      return state === 'Z' ? [] : [{ pid, name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) }];
    } catch {
      return [];
    }
  });
}
