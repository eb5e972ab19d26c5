/**
 * `npm run test:system` (after the build): the system suites, the bench smoke runs beside some. The bench smoke runs
 * keep both cores busy; the cluster's suites, the dashboard's and the rest mostly wait on leases, kills and outages (a
 * quarter of two cores on average, measured with /proc/stat while the suites ran one after another). So the bench
 * smoke runs go at the lowest CPU priority (nice 19) beside the suites whose waits are generous (BESIDE: no takeover,
 * election or expiry timed within a few lease TTLs), and every other suite runs after both, alone: a new one too,
 * until it is listed. Nice orders the CPU only: the disks' writes (LMDB's and JetStream's fsyncs) are shared as they
 * come. Every run prints as it goes, each line of the benches' marked `[bench smoke]`. Files named on the command
 * line run in one vitest run, as `vitest run` would. Plain JavaScript: it starts vitest, before any TypeScript
 * tooling.
 */
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { constants as osConstants, setPriority } from 'node:os';
import { createInterface } from 'node:readline';

const VITEST = ['node_modules/vitest/vitest.mjs', 'run', '--config', 'vitest.system.config.ts'];
const BACKGROUND = ['test/system/bench-smoke.test.ts'];
/**
 * The suites run beside the bench smoke runs: their waits on leases are 4 TTLs and more, or none. Not cluster-replay:
 * beside the benches its replay asked right after a kill -9 once waited 20 s for an answer where the test expects
 * "between owners" (by reading, the ask reached nats-server before it dropped the dead connection's subscription; the test now
 * waits for "no responders" first, but has not run beside the benches since).
 */
const BESIDE = ['cluster-mempool', 'cluster-move', 'cluster-rules', 'dashboard'].map((name) => `test/system/${name}.test.ts`);

/** Runs vitest on `files`; `background`: niced, each line of its output marked. Answers its exit code. */
function lane(files, background) {
  const child = spawn(process.execPath, [...VITEST, ...files], {
    stdio: ['ignore', background ? 'pipe' : 'inherit', background ? 'pipe' : 'inherit'],
  });
  children.add(child);
  // Set before vitest forks its workers, which inherit it, as do the processes they start.
  if (background && child.pid !== undefined) setPriority(child.pid, 19);
  for (const [from, to] of [
    [child.stdout, process.stdout],
    [child.stderr, process.stderr],
  ])
    if (from) createInterface({ input: from }).on('line', (line) => to.write(`[bench smoke] ${line}\n`));
  return new Promise((resolve) =>
    child.on('close', (code, signal) => {
      children.delete(child);
      resolve(code ?? 128 + (signal === null ? 0 : osConstants.signals[signal]));
    }),
  );
}

const children = new Set();
let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'])
  process.on(signal, () => {
    stopping = true;
    for (const child of children) child.kill(signal);
  });

const named = process.argv.slice(2);
const suites = readdirSync('test/system')
  .filter((f) => f.endsWith('.test.ts'))
  .map((f) => `test/system/${f}`);
const unknown = [...BACKGROUND, ...BESIDE].filter((f) => !suites.includes(f));
if (unknown.length > 0) throw new Error(`test/system/lanes.mjs names suites that are not there: ${unknown.join(', ')}`);
const codes = named.length > 0 ? [await lane(named, false)] : await Promise.all([lane(BACKGROUND, true), lane(BESIDE, false)]);
if (named.length === 0 && !stopping)
  codes.push(
    await lane(
      suites.filter((f) => !BACKGROUND.includes(f) && !BESIDE.includes(f)),
      false,
    ),
  );
process.exitCode = codes.find((code) => code !== 0) ?? 0;
