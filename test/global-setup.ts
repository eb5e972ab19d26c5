import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHILD_LOGS } from './kit/proc.js';
import { scanChildLogs } from './secret-scan.js';

const SCANNING = Symbol.for('chainpost.secretScan');

/**
 * The run's secret scan (test/secret-scan.ts): a directory for every child's output, searched when the run ends.
 * Both projects name this file; vitest sets up every project before the first test file and tears
 * them down after the last, so the first call makes the directory and scans it, and the second finds the run marked.
 */
export default function setup(): () => void {
  // Marked on the process, not by CHAINPOST_CHILD_LOGS: a variable left in a developer's shell would skip the scan.
  const run = globalThis as { [SCANNING]?: true };
  if (run[SCANNING]) return () => {};
  run[SCANNING] = true;
  const dir = mkdtempSync(join(tmpdir(), 'chainpost-logs-'));
  process.env[CHILD_LOGS] = dir;
  // One worker thread in every server the tests start, children started without test/helpers.ts's serverEnv
  // included (the binary as a user starts it): each thread costs a start the CPU of loading its code.
  process.env['CHAINPOST_WORKER_THREADS'] ??= '1';
  return () => {
    const r = scanChildLogs(dir);
    console.log(
      `secret scan: ${r.lines} log lines of ${r.processes} server processes searched for ${r.secrets} secrets: ${r.hits.length} found`,
    );
    if (r.hits.length > 0) {
      const where = r.hits
        .slice(0, 20)
        .map((h) => `  ${h.secret} in ${join(dir, h.file)}:${h.line}`)
        .join('\n');
      // Vitest reports an error thrown here but still exits 0: the exit code is set so the run fails.
      process.exitCode = 1;
      throw new Error(`secrets in log lines (the logs are kept in ${dir}):\n${where}`);
    }
    rmSync(dir, { recursive: true, force: true });
  };
}
