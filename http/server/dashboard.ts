import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ApiError } from '../../engine/errors.js';
import type { Reply, Route } from './route.js';

/**
 * The operator's dashboard: GET /dashboard (the page), /dashboard.css and /dashboard/<module>.js, from the checkout
 * and node_modules alone (nothing fetched at run time). Its modules are built from dashboard/ by `npm run build` into
 * dist/dashboard/; Preact with htm is htm's standalone module. Each file is read once, at its first request. The
 * page calls the API with the key the user gives it (docs/operations.md#dashboard); these routes need none.
 */
export function dashboardRoutes(): Route[] {
  const serve = (asset: Asset): Reply => ({
    status: 200,
    text: (asset.text ??= asset.read()),
    contentType: asset.contentType,
    headers: asset.headers,
  });
  const module = (file: string): Reply => {
    const found = Object.hasOwn(MODULES(), file) ? MODULES()[file] : undefined;
    if (found === undefined) throw new ApiError(404, `no file ${file} in the dashboard`, { field: 'file' });
    return serve(found);
  };
  const route = (pattern: string, summary: string, contentType: string, handle: Route['handle']): Route => ({
    method: 'GET',
    pattern,
    area: 'system',
    auth: 'none',
    doc: { summary, responses: { 200: { contentType } } },
    handle,
  });
  return [
    route('/dashboard', "The operator's dashboard: one tenant's streams, deliveries and keys", 'text/html', () => serve(PAGE)),
    route('/dashboard.css', "The dashboard's stylesheet", 'text/css', () => serve(STYLE)),
    route('/dashboard/:file', "The dashboard's scripts (ES modules)", 'text/javascript', (req) => module(req.params['file']!)),
  ];
}

interface Asset {
  contentType: string;
  headers: Record<string, string>;
  read: () => string;
  text?: string;
}

/**
 * The repository's root: the first folder above this module with the page's sources (this module runs from
 * dist/http/server/, dist-bench/…, or from http/server/ itself in a test run on the sources).
 */
let root: string | undefined;
const rootDir = (): string => {
  if (root !== undefined) return root;
  for (let dir = dirname(fileURLToPath(import.meta.url)); dir !== dirname(dir); dir = dirname(dir))
    if (existsSync(join(dir, 'dashboard', 'index.html'))) return (root = dir);
  throw new Error('the dashboard/ folder is missing');
};
const fromSource = (file: string) => () => readFileSync(join(rootDir(), 'dashboard', file), 'utf8');
const built = (): string => join(rootDir(), 'dist', 'dashboard');
/** htm's standalone Preact (its package exports no path to the file: found from its main, dist/htm.js). */
const preact = () =>
  readFileSync(join(dirname(createRequire(import.meta.url).resolve('htm')), '..', 'preact', 'standalone.module.js'), 'utf8');

/**
 * Its own scripts and styles alone: no inline script or style, no other origin (the API is the page's own), no
 * frame, no form posted anywhere (forms are handled by the scripts), no <base>.
 */
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
const SECURITY = { 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer' };
const CACHE = { 'cache-control': 'no-cache', ...SECURITY };

const PAGE: Asset = {
  contentType: 'text/html; charset=utf-8',
  headers: { 'content-security-policy': CSP, 'cache-control': 'no-store', ...SECURITY },
  read: fromSource('index.html'),
};
const STYLE: Asset = { contentType: 'text/css; charset=utf-8', headers: CACHE, read: fromSource('style.css') };

const script = (read: () => string): Asset => ({ contentType: 'text/javascript; charset=utf-8', headers: CACHE, read });

/** The page's modules (what `npm run build` made of dashboard/, listed at the first request) and Preact: nothing else. */
let modules: Record<string, Asset> | undefined;
const MODULES = (): Record<string, Asset> =>
  (modules ??= {
    ...Object.fromEntries(
      readdirSync(built())
        .filter((f) => f.endsWith('.js'))
        .map((f) => [f, script(() => readFileSync(join(built(), f), 'utf8'))]),
    ),
    'preact.js': script(preact),
  });
