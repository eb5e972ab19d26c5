/**
 * The webhook receivers of npm run soak, alone in their own process, on three
 * loopback ports (three origins, so hanging receivers cannot take the healthy
 * ones' connections): `ok` answers 200, `fail` answers 500, `hang` never answers
 * (the sender gives up after its delivery timeout). Every receiver answers 200 to
 * a test webhook (chainId ""), which a stream's creation and reactivation need.
 *
 * Per URL path it counts what came and checks it as it comes: on `ok`, the
 * webhooks of a path arrive once each and in order (block.number = 0, 1, 2…);
 * on `fail` and `hang`, each attempt at a webhook carries `retries` one above the
 * previous attempt's, and never arrives before the retry schedule says (measured
 * on this process's clock, which is the server's while nobody moves its test clock).
 * GET /counts on the `ok` port reports it all; POST /release makes `hang` paths
 * other than /probe… answer 500 at once from then on (the soak's end, before the
 * test clock is moved: a jump then waits for every delivery it starts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { SPEC_RETRY_SCHEDULE_MS as RETRY_SCHEDULE_MS } from './soak-spec.js';
import { listen, port } from './receiver-listen.js';

export interface PathCounts {
  /** Attempts received (test webhooks not counted). */
  attempts: number;
  /** ok: webhooks that came a second time, or out of order (a gap or a step back). */
  duplicates: number;
  outOfOrder: number;
  /** ok: the next block.number expected. */
  next: number;
  /** fail/hang: an attempt whose `retries` was not one above the previous attempt's at that webhook. */
  badRetries: number;
  /** fail/hang: a retry that came sooner after the previous attempt than the schedule allows. */
  early: number;
  /** fail/hang: retries received (attempts with retries > 0). */
  retries: number;
  tests: number;
}

export type Counts = Record<'ok' | 'fail' | 'hang', Record<string, PathCounts>>;

const counts: Counts = { ok: {}, fail: {}, hang: {} };
/** fail/hang: per path and block number, the last attempt's retries and when it ended (answered, or given up by the sender). */
const attemptsOf = new Map<string, { retries: number; endedAt: number }>();
let released = false;
const held = new Set<ServerResponse>();

/**
 * How much sooner than the schedule a retry may come and not count as early: the
 * server's failure instant and this process's reading of it differ by its event-loop
 * delay and the loopback; a wrong schedule is off by a minute or more.
 */
const EARLY_TOLERANCE_MS = 100;

const countsOf = (kind: keyof Counts, path: string): PathCounts =>
  (counts[kind][path] ??= { attempts: 0, duplicates: 0, outOfOrder: 0, next: 0, badRetries: 0, early: 0, retries: 0, tests: 0 });

function read(req: IncomingMessage, then: (body: Buffer) => void): void {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => then(Buffer.concat(chunks)));
}

function receive(kind: keyof Counts, req: IncomingMessage, res: ServerResponse): void {
  read(req, (raw) => {
    const path = req.url ?? '/';
    const body = JSON.parse(raw.toString()) as { chainId?: string; retries?: number; block?: { number?: string } };
    const c = countsOf(kind, path);
    if (body.chainId === '') {
      c.tests++;
      res.writeHead(200).end('ok');
      return;
    }
    c.attempts++;
    const n = Number(body.block?.number);
    if (kind === 'ok') {
      if (n < c.next) c.duplicates++;
      else if (n > c.next) c.outOfOrder++;
      c.next = Math.max(c.next, n + 1);
      res.writeHead(200).end('ok');
      return;
    }
    const key = `${path}#${n}`;
    const retries = body.retries ?? -1;
    const prev = attemptsOf.get(key);
    if (retries !== (prev === undefined ? 0 : prev.retries + 1)) c.badRetries++;
    if (retries > 0) c.retries++;
    // A retry is due the schedule's wait after the previous attempt ended. Not checked on /probe… paths: the soak moves the test clock for them.
    if (
      prev !== undefined &&
      !path.startsWith('/probe') &&
      performance.now() - prev.endedAt < RETRY_SCHEDULE_MS[prev.retries]! - EARLY_TOLERANCE_MS
    )
      c.early++;
    const attempt = { retries, endedAt: performance.now() };
    attemptsOf.set(key, attempt);
    if (kind === 'fail' || (released && !path.startsWith('/probe'))) {
      res.writeHead(500).end('failing');
      return;
    }
    // No answer: the attempt ends when the sender gives up and closes (or at the release).
    held.add(res);
    res.on('close', () => {
      held.delete(res);
      attempt.endedAt = performance.now();
    });
  });
}

function control(req: IncomingMessage, res: ServerResponse): void {
  if (req.method === 'GET' && req.url === '/counts') {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(counts));
    return;
  }
  if (req.method === 'POST' && req.url === '/release') {
    released = true;
    for (const r of held) if (!r.writableEnded && !(r.req.url ?? '').startsWith('/probe')) r.writeHead(500).end('released');
    res.writeHead(200).end('ok');
    return;
  }
  res.writeHead(404).end();
}

const ok = await listen((req, res) => (req.method === 'POST' && req.url !== '/release' ? receive('ok', req, res) : control(req, res)));
const fail = await listen((req, res) => receive('fail', req, res));
const hang = await listen((req, res) => receive('hang', req, res));
process.stdout.write(`${JSON.stringify({ msg: 'listening', port: port(ok), fail: port(fail), hang: port(hang) })}\n`);
process.on('SIGTERM', () => process.exit(0));
