import type { Clock, Timer } from '../clock.js';
import type { Logger } from '../log.js';

/**
 * A backfill's progress: the blocks from `from` to `to` (the node's head when
 * the backfill began, kept in the chain's state so a restart goes on towards
 * the same block) and how fast the follower moves through them, over a
 * sliding window of service time, so /health, the CLI's status and the log
 * line say when it will be done.
 */
export interface BackfillRange {
  from: number;
  to: number;
}

/** What /health shows of a chain's backfill. */
export interface BackfillStatus extends BackfillRange {
  done: boolean;
  /** Blocks per second over the last RATE_WINDOW_MS of service time (0 before two samples). */
  blocksPerSec: number;
  /** Seconds to `to` at that rate; 0 once done, null while no rate is known. */
  etaSeconds: number | null;
}

/** The rate is measured over this much service time. */
export const RATE_WINDOW_MS = 30_000;
/** At most one sample per this much service time: the window holds a few dozen. */
const SAMPLE_MS = 1_000;
/** The log's progress line comes this often (service time) while a backfill runs. */
export const BACKFILL_LOG_MS = 10_000;

export class BackfillProgress {
  /** (service time, last block stored) pairs, oldest first; the first lies at or before the window's start. */
  private samples: Array<{ at: number; head: number }> = [];

  constructor(
    readonly range: BackfillRange,
    private readonly now: () => number,
  ) {}

  /** The follower stored up to `head` (durable); one sample a second is kept (status() reads the head it is given). */
  note(head: number): void {
    const at = this.now();
    const last = this.samples.at(-1);
    if (last !== undefined && at - last.at < SAMPLE_MS) return;
    this.samples.push({ at, head: Math.min(head, this.range.to) });
    while (this.samples.length > 1 && this.samples[1]!.at <= at - RATE_WINDOW_MS) this.samples.shift();
  }

  status(head: number): BackfillStatus {
    const { from, to } = this.range;
    const done = head >= to;
    const now = this.now();
    const h = Math.min(head, to);
    // The oldest sample still in the window (or the one just before it) against the head now.
    const since = this.samples.findLast((s) => s.at <= now - RATE_WINDOW_MS) ?? this.samples[0];
    const seconds = since === undefined ? 0 : (now - since.at) / 1000;
    const rate = since === undefined || seconds <= 0 ? 0 : (h - since.head) / seconds;
    const blocksPerSec = Math.round(Math.max(0, rate) * 10) / 10;
    return { from, to, done, blocksPerSec, etaSeconds: done ? 0 : rate > 0 ? Math.ceil((to - h) / rate) : null };
  }
}

/**
 * A progress line in the log every BACKFILL_LOG_MS of service time while the backfill moves, until stop() (the
 * backfill done, a shutdown). A backfill standing still (a node that holds its answers) gets one line, then
 * none until it moves again: a test clock's jump of a day would otherwise write thousands of the same line.
 */
export function logBackfill(clock: Clock, log: Logger, chain: string, status: () => BackfillStatus & { head: number }): { stop(): void } {
  let timer: Timer | undefined;
  let last: number | undefined;
  let still = false;
  const tick = (): void => {
    const s = status();
    const moved = s.head !== last;
    if (moved || !still)
      log.info('backfill', {
        chain,
        head: s.head,
        from: s.from,
        to: s.to,
        percent: percent(s),
        blocksPerSec: s.blocksPerSec,
        etaSeconds: s.etaSeconds,
      });
    still = !moved;
    last = s.head;
    timer = clock.at(clock.now() + BACKFILL_LOG_MS, tick);
  };
  timer = clock.at(clock.now() + BACKFILL_LOG_MS, tick);
  return { stop: () => timer?.cancel() };
}

/** How much of the range is stored, 0–100 with one decimal. */
export function percent(s: BackfillRange & { head: number }): number {
  const total = s.to - s.from + 1;
  if (total <= 0) return 100;
  return Math.floor((Math.min(Math.max(s.head - s.from + 1, 0), total) / total) * 1000) / 10;
}
