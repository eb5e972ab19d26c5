import { percent } from '../../engine/ingest/backfill.js';
import { STALL_BLOCK_TIMES } from '../../engine/ingest/stall.js';

/**
 * `chainpost status`: a running server's /health drawn as one plain-text
 * progress bar per chain (no terminal needed: no colours, no cursor moves),
 * the backfill's range, rate and time left, and the Data API indexes' position.
 */

/** What the status reads of a /health chain entry (the rest is ignored). */
interface ChainHealth {
  chain: string;
  head: number;
  nodeHead: number;
  upstream?: string;
  lastError?: string;
  stalled?: boolean;
  backfill?: { from: number; to: number; done: boolean; blocksPerSec: number; etaSeconds: number | null } | null;
  indexed?: number | null;
}

export interface Health {
  status: string;
  starting?: string[];
  chains?: ChainHealth[];
}

const BAR = 30;

/** `[#########---------]`: `pct` of BAR characters filled. */
export function bar(pct: number): string {
  const filled = Math.round((Math.min(Math.max(pct, 0), 100) / 100) * BAR);
  return `[${'#'.repeat(filled)}${'-'.repeat(BAR - filled)}]`;
}

const duration = (s: number): string => (s < 120 ? `${s} s` : s < 7200 ? `${Math.round(s / 60)} min` : `${(s / 3600).toFixed(1)} h`);

/** One line per chain: the backfill's progress where there is one, else the head against the node's. */
export function chainLine(c: ChainHealth, width: number): string {
  const b = c.backfill ?? null;
  const parts: string[] = [];
  let pct: number;
  if (b !== null) {
    pct = b.done ? 100 : percent({ from: b.from, to: b.to, head: c.head });
    parts.push(
      b.done
        ? `backfill ${b.from}-${b.to} done, head ${c.head}`
        : `backfill ${b.from}-${b.to} at ${Math.max(c.head, b.from - 1)}, ${b.blocksPerSec} blocks/s, ${b.etaSeconds === null ? 'eta unknown' : `eta ${duration(b.etaSeconds)}`}`,
    );
  } else {
    pct = c.nodeHead <= 0 ? (c.head >= 0 ? 100 : 0) : Math.min(100, Math.floor((Math.max(c.head, 0) / c.nodeHead) * 1000) / 10);
    parts.push(`head ${c.head} of ${c.nodeHead < 0 ? '?' : c.nodeHead}`);
  }
  if (c.indexed !== undefined) parts.push(`indexed ${c.indexed ?? 'none'}`);
  if (c.upstream === 'failing') parts.push(`upstream failing${c.lastError === undefined ? '' : `: ${c.lastError}`}`);
  if (c.stalled === true) parts.push(`stalled: the head has not moved for ${STALL_BLOCK_TIMES} block times`);
  return `${c.chain.padEnd(width)}  ${bar(pct)} ${pct.toFixed(1).padStart(5)}%  ${parts.join(', ')}`;
}

/** The chains whose upstream node fails: the server answers, but nothing comes from them. */
export const failingChains = (h: Health): string[] => (h.chains ?? []).filter((c) => c.upstream === 'failing').map((c) => c.chain);

/** The header says ok only when the server is up and every chain's upstream answers; a failing one names the chains. */
export function renderStatus(url: string, h: Health): string {
  const failing = failingChains(h);
  const state =
    h.status !== 'ok'
      ? `${h.status}${h.starting?.length ? ` (${h.starting.join(', ')})` : ''}`
      : failing.length > 0
        ? `failing (upstream of ${failing.join(', ')})`
        : 'ok';
  const head = `chainpost at ${url}: ${state}`;
  const chains = h.chains ?? [];
  if (chains.length === 0) return `${head}\nno chain followed\n`;
  const width = Math.max(...chains.map((c) => c.chain.length));
  return `${head}\n${chains.map((c) => chainLine(c, width)).join('\n')}\n`;
}
