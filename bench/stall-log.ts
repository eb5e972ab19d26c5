/**
 * Event-loop stalls and GC pauses of one process, for finding what makes a soak's worst windows.
 *
 * As a preload it appends, once a second, a line per stall to `$STALL_LOG_DIR/stalls-<pid>.log` (default the
 * temp directory): `<epoch ms> stall <ms>` when a 5-ms timer came more than 15 ms late, `<epoch ms> gc <kind> <ms>`
 * for a GC pause over 3 ms. The timer adds a little work of its own (one callback each 5 ms).
 *
 *   SOAK_MINUTES=3 SOAK_SERVER_FLAGS="--import ./dist-bench/bench/stall-log.js" node dist-bench/bench/soak.js
 *
 * Run as a program on such a file it sums it up: stalls by size, GC pauses by kind, how many stalls over 20 ms
 * were mostly GC, and the 10-s windows with the most stalls over 20 ms.
 *
 *   node dist-bench/bench/stall-log.js /tmp/stalls-<pid>.log
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PerformanceObserver, constants, performance, type PerformanceEntry } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

const TICK_MS = 5;
const STALL_MS = 15;
const GC_MS = 3;

function record(): void {
  const out = join(process.env['STALL_LOG_DIR'] ?? tmpdir(), `stalls-${process.pid}.log`);
  const lines: string[] = [];
  const at = (t: number): string => (performance.timeOrigin + t).toFixed(0);
  let last = performance.now();
  setInterval(() => {
    const now = performance.now();
    const late = now - last - TICK_MS;
    if (late > STALL_MS) lines.push(`${at(now)} stall ${late.toFixed(1)}`);
    last = now;
  }, TICK_MS).unref();
  const kinds: Record<number, string> = {
    [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
    [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
    [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
    [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weak',
  };
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = (e as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind;
      if (e.duration > GC_MS) lines.push(`${at(e.startTime)} gc ${kinds[kind ?? -1] ?? String(kind)} ${e.duration.toFixed(1)}`);
    }
  }).observe({ entryTypes: ['gc'] });
  const flush = (): void => {
    if (lines.length > 0) appendFileSync(out, `${lines.splice(0).join('\n')}\n`);
  };
  setInterval(flush, 1_000).unref();
  process.on('exit', flush);
}

/** Stalls over this are what a window's p99 over 20 ms is made of. */
const LONG_MS = 20;

function summarize(file: string): void {
  const rows = readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => l.split(' '));
  const stalls = rows.filter((r) => r[1] === 'stall').map((r) => ({ t: Number(r[0]), ms: Number(r[2]) }));
  const gcs = rows.filter((r) => r[1] === 'gc').map((r) => ({ t: Number(r[0]), kind: r[2]!, ms: Number(r[3]) }));
  const tally = <K>(keys: K[]): Array<[K, number]> => {
    const n = new Map<K, number>();
    for (const k of keys) n.set(k, (n.get(k) ?? 0) + 1);
    return [...n];
  };
  const bySize = tally(stalls.map((s) => Math.floor(s.ms / 10) * 10)).sort((a, b) => a[0] - b[0]);
  console.log(`stalls over ${STALL_MS} ms: ${stalls.length}; by size (ms, count): ${bySize.map(([k, n]) => `${k}+ ${n}`).join(', ')}`);
  for (const kind of new Set(gcs.map((g) => g.kind))) {
    const ms = gcs.filter((g) => g.kind === kind).map((g) => g.ms);
    console.log(
      `gc ${kind} over ${GC_MS} ms: ${ms.length}, mean ${(ms.reduce((a, b) => a + b, 0) / ms.length).toFixed(1)} ms, longest ${Math.max(...ms).toFixed(1)} ms`,
    );
  }
  const long = stalls.filter((s) => s.ms > LONG_MS);
  // A stall is logged when it ends: the GC pauses that began within it (and the timer's own tick before it).
  const gcShare = (s: { t: number; ms: number }): number =>
    gcs.filter((g) => g.t >= s.t - s.ms - 2 * TICK_MS && g.t <= s.t).reduce((a, g) => a + g.ms, 0) / s.ms;
  console.log(
    `stalls over ${LONG_MS} ms: ${long.length}, of which ${long.filter((s) => gcShare(s) > 0.4).length} were more than 40 % GC pauses`,
  );
  const first = stalls[0]?.t ?? 0;
  const windows = tally(long.map((s) => Math.floor((s.t - first) / 10_000))).sort((a, b) => b[1] - a[1]);
  console.log(
    `10-s windows with the most stalls over ${LONG_MS} ms (window from the first stall: count): ${windows
      .slice(0, 8)
      .map(([w, n]) => `${w}: ${n}`)
      .join(', ')}`,
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] !== undefined) summarize(process.argv[2]);
else record();
