import { appendFileSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CHILD_LOGS } from './kit/proc.js';

/**
 * The whole test run's secret scan: every server process the suite spawns has its output and its
 * CHAINPOST_ variables kept under CHAINPOST_CHILD_LOGS (test/kit/proc.ts); secrets seen by the tests
 * in answers (the streams secret of GET /settings) are added here. At the end of the run every
 * kept line is searched for every secret (test/global-setup.ts), so a log line anywhere in the
 * suite that carries one fails the run.
 */

/** The shortest value treated as a secret: shorter ones (a deliberately bad key such as `tiny`) would match ordinary words. */
const MIN_SECRET = 8;

/** A URL's password in any value (`scheme://user:pass@host`). */
const URL_PASSWORD = /[a-z][a-z0-9+.-]*:\/\/[^\s/:@]*:([^\s/@]+)@/gi;

/** A URL's user name (`scheme://user@host`, `scheme://user:pass@host`): a NATS server's may be a token. */
const URL_USER = /[a-z][a-z0-9+.-]*:\/\/([^\s/:@]+)(?::[^\s/@]*)?@/gi;

const decoded = (s: string): string => {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
};

/**
 * The secrets a server was given in its environment: its API key, the operator's keys, every URL's password, and the
 * user names of CHAINPOST_NATS's URLs (`nats://token@host`).
 */
export function secretsOfEnv(env: Record<string, string | undefined>): string[] {
  const found: string[] = [];
  for (const name of ['CHAINPOST_API_KEY', 'CHAINPOST_ADMIN_KEY', 'CHAINPOST_METRICS_KEY']) {
    const key = env[name];
    if (key !== undefined) found.push(key);
  }
  for (const value of Object.values(env)) {
    if (value === undefined) continue;
    for (const m of value.matchAll(URL_PASSWORD)) found.push(m[1]!, decoded(m[1]!));
  }
  for (const m of (env['CHAINPOST_NATS'] ?? '').matchAll(URL_USER)) found.push(m[1]!, decoded(m[1]!));
  return found.filter((s) => s.length >= MIN_SECRET);
}

/** Adds a secret a test saw (a webhook secret in an answer) to the run's scan; nothing when no scan runs. */
export function registerSecret(secret: string): void {
  const dir = process.env[CHILD_LOGS];
  if (dir === undefined || dir === '' || secret.length < MIN_SECRET) return;
  appendFileSync(join(dir, `${process.pid}.secrets`), `${secret}\n`);
}

export interface Hit {
  file: string;
  line: number;
  /** The secret's first 4 characters: the report must not print it either. */
  secret: string;
}

export interface ScanResult {
  processes: number;
  lines: number;
  secrets: number;
  hits: Hit[];
}

/** Searches every kept log line under `dir` for every secret any process was given or any test registered. */
export function scanChildLogs(dir: string): ScanResult {
  const files = readdirSync(dir);
  const secrets = new Set<string>();
  for (const f of files) {
    if (f.endsWith('.env.json')) for (const s of secretsOfEnv(JSON.parse(readFileSync(join(dir, f), 'utf8')))) secrets.add(s);
    if (f.endsWith('.secrets')) for (const s of readFileSync(join(dir, f), 'utf8').split('\n')) if (s.length >= MIN_SECRET) secrets.add(s);
  }
  const logs = files.filter((f) => f.endsWith('.log'));
  const hits: Hit[] = [];
  let lines = 0;
  for (const f of logs) {
    const text = readFileSync(join(dir, f), 'utf8').split('\n');
    lines += text.length;
    text.forEach((l, i) => {
      for (const s of secrets) if (l.includes(s)) hits.push({ file: f, line: i + 1, secret: `${s.slice(0, 4)}…` });
    });
  }
  return { processes: files.filter((f) => f.endsWith('.env.json')).length, lines, secrets: secrets.size, hits };
}
