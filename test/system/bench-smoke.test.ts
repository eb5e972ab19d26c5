import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

/**
 * The benches as `npm run bench:NAME` runs them, from their own build (dist-bench/, which `npm run test:system`
 * builds first). One runs for real at a tiny size: bench:data-layout over 2 synthetic blocks (the stand-ins' kit
 * and the server's indexes in one process, about 10 s), its results written under BENCH_RESULTS_DIR instead of
 * bench/, whose measured figures it must leave alone.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const scripts = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
const benches = Object.entries(scripts).filter(([name]) => name.startsWith('bench:') || name === 'soak');

it('every bench script builds the benches and runs a built bench whose source is in bench/', () => {
  expect(benches.length).toBeGreaterThan(10);
  for (const [name, command] of benches) {
    const built = /^npm run -s build:bench && node (dist-bench\/bench\/([a-z0-9-]+)\.js)$/.exec(command);
    expect(built, `${name}: ${command}`).not.toBeNull();
    expect(existsSync(join(ROOT, built![1]!)), `${name}: ${built![1]} is not built`).toBe(true);
    expect(existsSync(join(ROOT, 'bench', `${built![2]}.ts`)), `${name}: no bench/${built![2]}.ts`).toBe(true);
  }
});

/**
 * Runs `npm run bench:NAME` with `env`, its results under a temporary BENCH_RESULTS_DIR: answers what it printed and
 * its results JSON, and checks it wrote its RESULTS.md section there and left bench/results/NAME.json alone.
 */
async function smokeRun(name: string, env: Record<string, string>): Promise<{ stdout: string; result: BenchResult }> {
  const out = mkdtempSync(join(tmpdir(), 'chainpost-bench-'));
  const measured = join(ROOT, `bench/results/${name}.json`);
  const before = existsSync(measured) ? readFileSync(measured, 'utf8') : undefined;
  try {
    const run = await promisify(execFile)('npm', ['run', '-s', `bench:${name}`], {
      cwd: ROOT,
      env: { ...process.env, ...env, BENCH_RESULTS_DIR: out },
      maxBuffer: 16 * 1024 * 1024,
    });
    const result = JSON.parse(readFileSync(join(out, `results/${name}.json`), 'utf8')) as BenchResult;
    expect(result.name).toBe(name);
    expect(readFileSync(join(out, 'RESULTS.md'), 'utf8')).toContain(`<!-- ${name} -->`);
    expect(existsSync(measured) ? readFileSync(measured, 'utf8') : undefined).toBe(before);
    return { stdout: run.stdout, result };
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

interface BenchResult {
  name: string;
  figures: Record<string, number | Record<string, number>>;
  met: boolean;
}

it('npm run bench:data-layout runs at a tiny size and writes its results JSON and RESULTS.md to BENCH_RESULTS_DIR only', async () => {
  const { stdout, result } = await smokeRun('data-layout', { BENCH_LAYOUT_BLOCKS: '2' });
  expect(stdout).toContain('transfersPerSec');
  expect(result.figures['transfers']).toBe(2_000); // 2 blocks of 1,000 transfers: the size asked for
  // Each figure measured, not NaN or 0: the load ran through the real indexes and the prototype, and pages were counted.
  for (const name of [
    'realTransfersPerSec',
    'realEntriesPerTransfer',
    'realBytesPerTransfer',
    'compactTransfersPerSec',
    'compactEntriesPerTransfer',
    'compactBytesPerTransfer',
  ])
    expect(result.figures[name], name).toBeGreaterThan(0);
});

it('npm run bench:cluster runs at a tiny size (single process, a node on NATS, the roles apart, an owner of partitions killed -9, the holder killed -9) and writes to BENCH_RESULTS_DIR only', async () => {
  const { stdout, result } = await smokeRun('cluster', {
    BENCH_STREAMS: '5',
    BENCH_TXS: '5',
    BENCH_BLOCKS: '5',
    BENCH_TAKEOVERS: '1',
    BENCH_RESUMES: '1',
  });
  const f = result.figures;
  expect(f['streams']).toBe(5);
  expect(f['lost']).toBe(0);
  // Each figure measured, not NaN or 0: both setups delivered, the nodes' CPU was read from /proc, the contender took
  // over, another node resumed the killed owner's partitions.
  for (const name of [
    'webhooksPerSec',
    'clusterWebhooksPerSec',
    'p50Ms',
    'clusterP50Ms',
    'ingestTakeoverSeconds',
    'deliveryResumeSeconds',
    'leaseTtlSeconds',
  ])
    expect(f[name], name).toBeGreaterThan(0);
  expect(f['cpuMsPerBlockByRole']).toEqual({ ingest: expect.any(Number), match: expect.any(Number), apply: expect.any(Number) });
  expect(f['cpuUsPerWebhookByRole']).toEqual({ matchAndDeliver: expect.any(Number), apply: expect.any(Number) });
  // Where the time goes, from both nodes' trace lines: every stage timed.
  for (const name of ['stagesP50Ms', 'clusterStagesP50Ms'])
    for (const [stage, ms] of Object.entries(f[name] as Record<string, number>)) expect(ms, `${name}.${stage}`).toEqual(expect.any(Number));
  expect(Object.keys(f['clusterStagesP50Ms']!)).toContain('ToMatch');
  // Read from /proc: NaN (null in JSON) had the pid been missing.
  for (const name of ['natsCpuMsPerBlock', 'natsCpuUsPerWebhook']) expect(f[name], name).toEqual(expect.any(Number));
  expect(stdout).toMatch(/resume 1: the first webhook of a partition .* came [\d.]+ s after its kill -9/);
  expect(stdout).not.toContain('not measured');
}, 240_000);

it('npm run bench:scale runs at a tiny size (the store written, the server restarted on it, addresses added live, a probe curve point) and writes to BENCH_RESULTS_DIR only', async () => {
  const { stdout, result } = await smokeRun('scale', {
    SCALE_ADDRESSES: '2000',
    SCALE_STREAMS: '20',
    SCALE_ADD: '20000',
    SCALE_CURVE: '2000',
    SCALE_LIMIT_MS: '60000',
  });
  const f = result.figures;
  expect(f['watchedAddresses']).toBe(2_000);
  expect(f['missedBlocks']).toBe(0);
  expect(f['addMillionCalls']).toBe(2); // 20,000 addresses in calls of the endpoint's 10,000
  // Each figure the goal names measured (not null: reached within the bound), and the store's size reported.
  for (const name of [
    'bytesPerAddress',
    'firstAnswerMs',
    'matchingResumedMs',
    'addMillionTakesEffectMs',
    'probesPerSecPerWorker',
    'storeBytesPerAddress',
  ])
    expect(f[name], name).toBeGreaterThan(0);
  expect(f['probesPerSecCurve']).toEqual({ '2000': expect.any(Number) });
  expect(stdout).toContain('matching resumed');
}, 180_000);
