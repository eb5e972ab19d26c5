import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's bench/ folder (this file runs from dist-bench/bench/). */
export const BENCH_DIR = fileURLToPath(new URL('../../bench/', import.meta.url));

/**
 * BENCH_SMOKE=1: the bench at its smoke size, its real code path end to end (servers, anvil, nats-server, stand-ins,
 * receivers) with tiny counts and durations, so that it ends in seconds and still computes every figure
 * (`npm run test:system` runs each so: test/system/bench-smoke.test.ts). Its figures say the bench still runs, not
 * what it measures.
 */
export const SMOKE = process.env['BENCH_SMOKE'] === '1';
/** A size of the bench: `full` in a measured run, `smoke` at its smoke size (BENCH_SMOKE=1). */
export const sized = <T>(full: T, smoke: T): T => (SMOKE ? smoke : full);

/**
 * Where report() writes results/NAME.json and RESULTS.md: bench/, or BENCH_RESULTS_DIR's folder (a smoke run of a
 * bench at a tiny size, which must not overwrite the measured figures); a smoke run without it writes to a new
 * temporary folder, never to bench/.
 */
const resultsDir = (): string =>
  process.env['BENCH_RESULTS_DIR'] !== undefined
    ? `${process.env['BENCH_RESULTS_DIR']}/`
    : SMOKE
      ? `${mkdtempSync(join(tmpdir(), 'chainpost-bench-smoke-'))}/`
      : BENCH_DIR;
/** The server binary the benches start (from dist-bench/bench/). */
export const BIN = fileURLToPath(new URL('../../bin/chainpost.js', import.meta.url));

/**
 * The machine's load average (1, 5 and 15 min) when this module was loaded, i.e. at the start of
 * the bench that imports it: the machine is shared, so every result says how busy it was.
 */
const LOAD_AT_START = loadavg();

/**
 * Milliseconds per call of `work`: once to warm up, then repeated until `minMs` have passed (at least 3 times; at the
 * smoke size, 3 times).
 */
export function msPer(work: () => unknown, minMs = 400): number {
  work();
  let n = 0;
  const started = performance.now();
  const until = sized(minMs, 0);
  do {
    work();
    n++;
  } while (n < 3 || performance.now() - started < until);
  return (performance.now() - started) / n;
}

/** x to `digits` decimals, for printed figures. */
export const round = (x: number, digits = 2): number => Math.round(x * 10 ** digits) / 10 ** digits;

/** A bench's figures: numbers, or rows of figures by name (bench:attacks per attack, bench:cluster per role). */
export type Figures = Record<string, number | object>;

export interface BenchResult {
  name: string;
  date: string;
  node: string;
  cpus: string;
  /** Load average (1, 5, 15 min) at the start and at the end of the run. */
  loadavg: { start: number[]; end: number[] };
  figures: Figures;
  goal: Record<string, string>;
  met: boolean;
}

/** A figure in RESULTS.md's table: a number, or a row of them as `name value, …`. */
const cell = (v: number | object): string =>
  typeof v === 'object'
    ? Object.entries(v)
        .map(([k, x]) => `${k} ${String(x)}`)
        .join(', ')
    : String(v);

/**
 * Writes bench/results/NAME.json and replaces NAME's section of bench/RESULTS.md (under BENCH_RESULTS_DIR if set)
 * with the figures, the machine and the command that produced them; `table` (Markdown lines) in place of the
 * figure | value table.
 */
export function report(
  name: string,
  command: string,
  figures: Figures,
  goal: Record<string, string>,
  met: boolean,
  notes: string[] = [],
  table?: string[],
): BenchResult {
  const cpuList = cpus();
  const out = resultsDir();
  const result: BenchResult = {
    name,
    date: new Date().toISOString(),
    node: process.version,
    cpus: `${cpuList.length} × ${cpuList[0]?.model.trim() ?? 'unknown'}`,
    loadavg: { start: LOAD_AT_START.map((x) => round(x)), end: loadavg().map((x) => round(x)) },
    figures,
    goal,
    met,
  };
  mkdirSync(`${out}results`, { recursive: true });
  writeFileSync(`${out}results/${name}.json`, `${JSON.stringify(result, null, 2)}\n`);

  const mdPath = `${out}RESULTS.md`;
  let md: string;
  try {
    md = readFileSync(mdPath, 'utf8');
  } catch {
    md = '# Benchmark results\n\nEach section is rewritten by its `npm run bench:NAME`; the JSON beside it is in bench/results/.\n';
  }
  const section = [
    `<!-- ${name} -->`,
    `## ${name}`,
    '',
    `\`${SMOKE ? `BENCH_SMOKE=1 ${command}` : command}\` on ${result.date.slice(0, 10)}, Node ${result.node}, ${result.cpus}; load average ${result.loadavg.start.join(' / ')} at the start, ${result.loadavg.end.join(' / ')} at the end (1 / 5 / 15 min).`,
    '',
    ...(table ?? ['| figure | value |', '|---|---|', ...Object.entries(figures).map(([k, v]) => `| ${k} | ${cell(v)} |`)]),
    '',
    `Goal: ${Object.entries(goal)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}. Met: **${met ? 'yes' : 'no'}**.`,
    ...(notes.length > 0 ? ['', ...notes] : []),
    `<!-- /${name} -->`,
  ].join('\n');
  const re = new RegExp(`<!-- ${name} -->[\\s\\S]*?<!-- /${name} -->`);
  md = re.test(md) ? md.replace(re, section) : `${md.trimEnd()}\n\n${section}\n`;
  writeFileSync(mdPath, md);
  if (SMOKE) console.log(`smoke size: results in ${out}`);
  return result;
}

/** Prints a table of figures with the ratio to the baseline of the same run. */
export function printRows(rows: Array<[label: string, value: number, unit: string, baseline?: number]>): void {
  for (const [label, value, unit, baseline] of rows) {
    const ratio = baseline === undefined ? '' : `  (${(value / baseline).toFixed(2)}× baseline)`;
    console.log(`${label.padEnd(28)} ${value.toLocaleString('en-US', { maximumFractionDigits: 2 }).padStart(14)} ${unit}${ratio}`);
  }
}

/**
 * The q-quantile of xs by nearest rank: the value at index floor(q·n) of the sorted values
 * (the last one for q = 1); NaN when xs is empty.
 */
export function percentile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN;
}
