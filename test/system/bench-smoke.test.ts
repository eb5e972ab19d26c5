import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

/**
 * The benches as `npm run bench:NAME` runs them, from their own build (dist-bench/, which `npm run test:system`
 * builds first: each runs as its script's `node dist-bench/bench/NAME.js`, checked below to be all the script runs
 * after that build), so that a bench cannot rot unseen. Every bench but bench:scale runs at its smoke size, BENCH_SMOKE=1
 * (bench/report.ts `sized`): its real code path end to end (the server binary, anvil, nats-server, the stand-ins, the
 * receivers) with tiny counts and durations, a few seconds each; bench:scale runs at a tiny size of its own knobs
 * (SCALE_*). Each writes its results under a temporary BENCH_RESULTS_DIR and must leave bench/results/ and
 * bench/RESULTS.md alone; its results JSON must name the run and the machine, its goal must name the figures listed
 * below for it (a bench that drops a goal's figure fails), and each of them must be measured: a finite number (a rate
 * above 0), a row of finite numbers, or bench:attacks' row with its "after" figure. `soak` is not run: its half hour of
 * load is what it measures, and its checks need minutes of it (a minute's error cycles, retries timed out at 10 s).
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const scripts = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
const benches = Object.entries(scripts).filter(([name]) => name.startsWith('bench:') || name === 'soak');
/** A bench script: the build of the benches, then node on the built bench (the path in dist-bench/, the name in bench/). */
const SCRIPT = /^npm run -s build:bench && node (dist-bench\/bench\/([a-z0-9-]+)\.js)$/;

/** Each bench run at its smoke size: the figures its goal names. */
const GOALS: Record<string, string[]> = {
  http: ['ratioVsFastify', 'ratioVsBareUws'],
  dispatch: ['ratioVsRawPost', 'p99Ms', 'bytesPerTimer'],
  fairness: ['silentRatio', 'provenRatio'],
  ingest: ['catchUpBlocksPerSec', 'indexLagBlocks', 'httpP99DuringCatchUpMs', 'probeColumnScanBlocksPerSec', 'bytesPerBlockStored'],
  match: ['probesPerSecPerWorker', 'ratioVsNaive', 'blocksPerSec'],
  e2e: ['ratioP50VsNaive', 'ratioP99VsNaive', 'p50Ms', 'p99Ms', 'lost', 'unmeasured', 'addressesTakeEffectMs'],
  rpc: ['ratioLocalVsNode', 'forwardAddedP50Ms'],
  bitcoin: ['matchTxPerSec', 'ingestBlocksPerSec', 'xpubAddressesPerSec'],
  solana: ['matchTxPerSec', 'ingestSlotsPerSec'],
  base58: ['solanaMainnetShareBs58'],
  data: [
    ...['walletErc20', 'walletErc20Transfers', 'tokenTransfers', 'walletNfts', 'walletHistory'].flatMap((e) => [
      `${e}ReqPerSec`,
      `${e}P99Ms`,
    ]),
    'maxIndexEntriesPerPage',
  ],
  'data-layout': ['realTransfersPerSec', 'realBytesPerTransfer'],
  prices: ['priceP99Ms', 'batchPricesP99Ms', 'swapsIndexedPerSec'],
  startup: ['firstAnswerMs', 'deliveredWhileDown', 'deliveredAfterStart', 'compileMs'],
  triggers: ['ratioP50', 'lost'],
  xpubs: ['ratioAdd1000thVs10th', 'healthP99DuringAddsMs'],
  attacks: [
    ...['callMs', 'callBlocks', 'estimateMs', 'estimateBlocks'].map((f) => `looping-call.${f}`),
    'busy-node.health',
    'busy-node.stop',
    ...['aloneMs', 'besideMs', 'ratio'].map((f) => `triggers.${f}`),
    ...['aloneMs', 'besideMs', 'ratio', 'late'].map((f) => `fairness.${f}`),
    ...['webhook', 'closedPort', 'metadata'].map((f) => `private-targets.${f}`),
    'token-tenant.passes',
    'challenges.accepted',
    'challenges.storeMb',
    ...['add10thMs', 'addLastMs', 'healthP99Ms', 'pastLimit'].map((f) => `xpubs.${f}`),
    'access-log.lines',
    'test-clock.status',
    'token-exp.expBeforeIat',
    'content-length.status',
    'metrics.streamIds',
    'metrics.nodeUser',
    'metadata-address.reached',
  ],
  'block-messages': ['largestBodyBytes'],
  cluster: ['ratioWebhooksPerSec', 'clusterP50Ms', 'ingestTakeoverSeconds', 'deliveryResumeSeconds', 'lost'],
  'partition-apply': ['partitionApplyMessagesPerSec'],
  'match-marks': ['markStagedRatio', 'stagingTxRatio'],
};
/** Benches whose smoke run is a test of its own below (with what it checks besides the goal's figures). */
const OWN_TESTS = new Set(['data-layout', 'cluster']);

it('every bench script builds the benches and runs a built bench whose source is in bench/', () => {
  expect(benches.length).toBeGreaterThan(10);
  for (const [name, command] of benches) {
    const built = SCRIPT.exec(command);
    expect(built, `${name}: ${command}`).not.toBeNull();
    expect(existsSync(join(ROOT, built![1]!)), `${name}: ${built![1]} is not built`).toBe(true);
    expect(existsSync(join(ROOT, 'bench', `${built![2]}.ts`)), `${name}: no bench/${built![2]}.ts`).toBe(true);
  }
});

it('every bench script but bench:scale has a smoke run here, with the figures its goal names', () => {
  const names = benches.map(([name]) => name).filter((name) => name.startsWith('bench:') && name !== 'bench:scale');
  expect(
    Object.keys(GOALS)
      .map((name) => `bench:${name}`)
      .sort(),
  ).toEqual(names.sort());
});

/**
 * Runs `npm run bench:NAME`'s bench (node on the built bench: the build is test:system's) with `env`, its results
 * under a temporary BENCH_RESULTS_DIR: answers what it printed and its results JSON, and checks it wrote its
 * RESULTS.md section there and left bench/results/NAME.json and bench/RESULTS.md alone.
 */
async function smokeRun(name: string, env: Record<string, string>): Promise<{ stdout: string; result: BenchResult }> {
  const out = mkdtempSync(join(tmpdir(), 'chainpost-bench-'));
  const measured = [join(ROOT, `bench/results/${name}.json`), join(ROOT, 'bench/RESULTS.md')];
  const read = (): Array<string | undefined> => measured.map((f) => (existsSync(f) ? readFileSync(f, 'utf8') : undefined));
  const before = read();
  try {
    const run = await promisify(execFile)(process.execPath, [SCRIPT.exec(scripts[`bench:${name}`]!)![1]!], {
      cwd: ROOT,
      env: { ...process.env, ...env, BENCH_RESULTS_DIR: out },
      maxBuffer: 16 * 1024 * 1024,
    });
    const result = JSON.parse(readFileSync(join(out, `results/${name}.json`), 'utf8')) as BenchResult;
    expect(result.name).toBe(name);
    expect(readFileSync(join(out, 'RESULTS.md'), 'utf8')).toContain(`<!-- ${name} -->`);
    expect(read()).toEqual(before);
    return { stdout: run.stdout, result };
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

interface BenchResult {
  name: string;
  date: string;
  node: string;
  cpus: string;
  figures: Record<string, number | Record<string, number>>;
  goal: Record<string, string>;
  met: boolean;
}

/** Whether a figure was measured: a finite number (a rate, `…PerSec`, above 0), a row of them, or an attack's row with its after figure. */
function measured(name: string, figure: unknown): boolean {
  if (typeof figure === 'number') return Number.isFinite(figure) && (!name.endsWith('PerSec') || figure > 0);
  if (typeof figure !== 'object' || figure === null) return false;
  if ('after' in figure) {
    const after = (figure as { after: unknown }).after;
    return typeof after === 'string' ? after !== '' && after !== 'failed to run' : measured(name, after);
  }
  const row = Object.entries(figure);
  return row.length > 0 && row.every(([k, v]) => typeof v === 'number' && measured(k, v));
}

/** Where `v` holds null (a figure that was NaN), as paths from `at`. */
const nulls = (v: unknown, at: string): string[] =>
  v === null ? [at] : typeof v === 'object' ? Object.entries(v as object).flatMap(([k, x]) => nulls(x, `${at}.${k}`)) : [];

/**
 * `npm run bench:NAME` at its smoke size: its results JSON whole, its goal naming GOALS[NAME], each of them measured,
 * and no figure NaN (null in JSON).
 */
async function smokeChecked(name: string): Promise<{ stdout: string; result: BenchResult }> {
  const run = await smokeRun(name, { BENCH_SMOKE: '1' });
  const { result } = run;
  expect(result).toEqual(
    expect.objectContaining({
      date: expect.any(String),
      node: process.version,
      cpus: expect.any(String),
      figures: expect.any(Object),
      goal: expect.any(Object),
      met: expect.any(Boolean),
    }),
  );
  expect(Object.keys(result.goal).sort(), `bench:${name}'s goal`).toEqual([...GOALS[name]!].sort());
  for (const figure of GOALS[name]!)
    expect(measured(figure, result.figures[figure]), `${figure}: ${JSON.stringify(result.figures[figure])}`).toBe(true);
  expect(nulls(result.figures, 'figures'), 'figures NaN (null in JSON)').toEqual([]);
  return run;
}

it.concurrent('npm run bench:data-layout runs at its smoke size and writes its results JSON and RESULTS.md to BENCH_RESULTS_DIR only', async () => {
  const { stdout, result } = await smokeChecked('data-layout');
  expect(stdout).toContain('transfersPerSec');
  expect(result.figures['transfers']).toBe(2_000); // 2 blocks of 1,000 transfers: its smoke size
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

it.concurrent('npm run bench:cluster runs at its smoke size (single process, a node on NATS, the roles apart, an owner of partitions killed -9, the holder killed -9) and writes to BENCH_RESULTS_DIR only', async () => {
  const { stdout, result } = await smokeChecked('cluster');
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

it.concurrent('npm run bench:scale runs at a tiny size (the store written, the server restarted on it, addresses added live, a probe curve point) and writes to BENCH_RESULTS_DIR only', async () => {
  const { stdout, result } = await smokeRun('scale', {
    SCALE_ADDRESSES: '2000',
    SCALE_STREAMS: '20',
    SCALE_ADD: '20000',
    SCALE_CURVE: '2000',
    // The kept set's curve point only: the plain set's beside it is the same loop, and its child doubles the run.
    SCALE_PLAIN_CURVE: '',
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

// Two at a time (vitest.system.config.ts: maxConcurrency), with the tests above: at these sizes a bench mostly waits on
// the processes it starts, and its figures are not judged here, only computed. The longest (10 to 20 s in CI) start
// first, so that the two slots end together.
const LONGEST = ['attacks', 'data', 'http', 'fairness', 'bitcoin', 'prices', 'solana'];
const smokeOrder = (name: string): number => (LONGEST.includes(name) ? LONGEST.indexOf(name) : LONGEST.length);
it.concurrent.each(
  Object.keys(GOALS)
    .filter((name) => !OWN_TESTS.has(name))
    .sort((a, b) => smokeOrder(a) - smokeOrder(b)),
)(
  'npm run bench:%s runs at its smoke size, computes every figure its goal names and writes to BENCH_RESULTS_DIR only',
  async (name) => {
    await smokeChecked(name);
  },
  180_000,
);
