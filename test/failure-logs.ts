import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';
import { CHILD_LOGS } from './kit/proc.js';

/** The last lines printed of each server or child a failed file started, and of how many of them at most. */
const TAIL_LINES = 30;
const MOST_LOGS = 6;

/**
 * A reporter that prints, after the run's summary, the last lines of the logs kept (test/kit/proc.ts,
 * keptLogBase) for the servers and children each failed file started: a CI run's output is all there is to read
 * of a failure there, and a hook that timed out says nothing of what the server was doing.
 */
export default class FailureLogs implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const dir = process.env[CHILD_LOGS];
    if (dir === undefined || !existsSync(dir)) return;
    const failed = new Set(modules.filter((m) => m.state() === 'failed').map((m) => m.moduleId));
    if (failed.size === 0) return;
    const marks = readdirSync(dir).filter((f) => f.endsWith('.file'));
    const logs = marks
      .map((f) => ({ file: readFileSync(join(dir, f), 'utf8'), log: join(dir, f.replace(/\.file$/, '.log')) }))
      .filter((m) => failed.has(m.file) && existsSync(m.log))
      // The last written last: a failure is most often in the last servers a file started.
      .map((m) => ({ ...m, at: statSync(m.log).mtimeMs }))
      .sort((x, y) => x.at - y.at);
    for (const { file, log } of logs.slice(-MOST_LOGS)) {
      const lines = readFileSync(log, 'utf8').trimEnd().split('\n');
      console.log(`\nthe last ${Math.min(TAIL_LINES, lines.length)} of ${lines.length} lines of ${log} (started by ${file}):`);
      console.log(lines.slice(-TAIL_LINES).join('\n'));
    }
    if (logs.length > MOST_LOGS) console.log(`(and ${logs.length - MOST_LOGS} earlier logs of the failed files, not printed)`);
  }
}
