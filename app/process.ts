/**
 * Process state the server reads and writes: the wall clock and OS timers, stdout, the V8 heap flags, and the
 * event-loop and memory gauges of /metrics. Only app/ touches these; the engine gets them as ports.
 */
import { readFileSync } from 'node:fs';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { Registry, collectDefaultMetrics } from 'prom-client';
import type { Mark } from './block-trace.js';
import type { Ticker } from '../engine/clock.js';
import type { Metrics } from '../engine/metrics.js';

/**
 * Log lines to stdout, gathered and written once per event-loop turn: writes to
 * a pipe are synchronous on Linux, and one syscall per request line would cost
 * more than the request.
 */
let pending: string[] = [];
const flushLines = (): void => {
  if (pending.length === 0) return;
  const text = pending.join('');
  pending = [];
  process.stdout.write(text);
};
process.on('exit', flushLines);
export const stdoutLines = (line: string): void => {
  if (pending.push(line) === 1) setImmediate(flushLines);
};

/** Text for the person at the terminal: stderr, as stdout carries JSON lines only. */
export const stderrNotice = (text: string): void => void process.stderr.write(text);

/** CHAINPOST_TRACE_BLOCKS: a block's stage, at Unix-epoch ms with the monotonic clock's fraction (comparable across processes). */
export const traceLine =
  (out: (line: string) => void): Mark =>
  (stage, chain, block) =>
    out(`${JSON.stringify({ msg: 'trace', stage, chain, block, at: performance.timeOrigin + performance.now() })}\n`);

/** Resolves at the next turn of the event loop, after the I/O waiting (requests) is served. */
export const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Real time and real OS timers: the one place the wall clock enters. */
export const systemTicker: Ticker = {
  elapsedMs: () => performance.now(),
  wake: (delayMs, fn) => {
    const t = setTimeout(fn, delayMs);
    t.unref();
    return () => clearTimeout(t);
  },
};

/**
 * The V8 heap as a server wants it, set before anything is read or served (the flag applies to the whole process).
 * Without allocation-site pretenuring: V8 may decide that an allocation site's objects live long and allocate
 * them in the old generation from then on, and it decides so for state that lmdb-js makes per range read, which
 * dies with its request. Left there until the next full collection, those objects keep what they point to alive
 * through every young collection, which then copies megabytes each time and holds every request for that long
 * (the Data API's p99 in bench:data). Tracing young collections with --trace-gc-nvp shows the promoted bytes.
 */
export function servingHeap(): void {
  setFlagsFromString('--no-allocation-site-pretenuring');
}

/** The event-loop delay sampler's timer interval, ms; each sample is this plus the delay. */
const LOOP_RESOLUTION_MS = 10;
/** The delay quantiles on /metrics are over windows this long. */
const LOOP_WINDOW_MS = 10_000;

/**
 * Event-loop delay on /metrics: quantiles (0.5, 0.99, 1) of the last completed
 * 10-s window (on `ticker`), so a scrape shows how the server answers now, not since
 * the start, and scraping changes nothing. The sampler's timer fires every 10 ms; what
 * it records beyond that interval is the delay. Returns what stops the sampler.
 */
export function watchEventLoop(metrics: Metrics, ticker: Ticker): () => void {
  const h = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
  h.enable();
  const delay = (ns: number): number => (h.count === 0 ? 0 : Math.max(0, ns / 1e6 - LOOP_RESOLUTION_MS) / 1000);
  let last: Array<[quantile: string, seconds: number]> = [];
  // Each window ends a whole window after the last one's end, however late its wake-up came (as setInterval's).
  let ends = ticker.elapsedMs() + LOOP_WINDOW_MS;
  const close = (): void => {
    last = [
      ['0.5', delay(h.percentile(50))],
      ['0.99', delay(h.percentile(99))],
      ['1', delay(h.max)],
    ];
    h.reset();
    ends += LOOP_WINDOW_MS;
    disarm = ticker.wake(Math.max(0, ends - ticker.elapsedMs()), close);
  };
  let disarm = ticker.wake(LOOP_WINDOW_MS, close);
  metrics.gauge(
    'chainpost_event_loop_delay_seconds',
    `Event-loop delay over the last completed ${LOOP_WINDOW_MS / 1000}-s window, by quantile (none before the first window ends).`,
    () => last.map(([quantile, value]) => ({ labels: { quantile }, value })),
  );
  return () => {
    disarm();
    h.disable();
  };
}

/** The process's registry of prom-client's default collectors, made at the first server's start. */
let processRegistry: Registry | undefined;

/**
 * Node's standard series on /metrics (`process_*`, `nodejs_*`: prom-client's default collectors, which stock Node.js
 * dashboards read), on a registry of this server's own. Its collectors are the process's, made once: each set starts
 * an event-loop sampler and a GC observer that nothing stops, so servers run one after another in one process (the
 * tests') would leave one set each behind.
 */
export function watchProcess(metrics: Metrics): void {
  if (processRegistry === undefined) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  const register = Registry.merge([processRegistry]);
  metrics.extend(() => register.metrics());
}

/**
 * The process's memory on /metrics: RSS split as the kernel counts it (anonymous: heaps and stacks, where a leak
 * shows; file: mostly LMDB's mapped pages, which grow with the store and which the kernel may reclaim), and V8's
 * heap and the memory outside it (buffers), so a growth can be told apart from a bigger store.
 */
export function watchMemory(metrics: Metrics): void {
  metrics.gauge(
    'chainpost_process_memory_bytes',
    'Process memory by kind: rss, rssAnon, rssFile (Linux), heapUsed, heapTotal, external, arrayBuffers.',
    () => {
      const { rss, heapUsed, heapTotal, external, arrayBuffers } = process.memoryUsage();
      const kinds: Record<string, number> = { rss, heapUsed, heapTotal, external, arrayBuffers, ...rssSplit() };
      return Object.entries(kinds).map(([kind, value]) => ({ labels: { kind }, value }));
    },
  );
}

/** RssAnon and RssFile from /proc/self/status (Linux); none elsewhere. */
function rssSplit(): Record<string, number> {
  try {
    const status = readFileSync('/proc/self/status', 'utf8');
    const kb = (field: string): number | undefined => {
      const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
      return m === null ? undefined : Number(m[1]) * 1024;
    };
    const out: Record<string, number> = {};
    for (const [kind, field] of [
      ['rssAnon', 'RssAnon'],
      ['rssFile', 'RssFile'],
    ] as const) {
      const v = kb(field);
      if (v !== undefined) out[kind] = v;
    }
    return out;
  } catch {
    return {};
  }
}
