import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import type { Clock } from '../../engine/clock.js';
import { ApiError } from '../../engine/errors.js';
import { openApiDocument } from './openapi.js';
import type { Reply, Route } from './route.js';

/**
 * The API's reference: GET /openapi.json, the document of the routes this server answers (built from its route table,
 * again only when the removals in effect change), and GET /docs, swagger-ui-dist's page over it, served from
 * node_modules: no request leaves the machine (the page's Content-Security-Policy allows its own origin alone).
 */
export function referenceRoutes(deps: { routes: () => readonly Route[]; clock: Clock; version: string }): Route[] {
  let cached: { removals: string; reply: Reply } | undefined;
  const openapi = (): Reply => {
    const now = deps.clock.now();
    const routes = deps.routes();
    const removals = routes.map((r) => r.doc?.removed?.(now)?.status ?? 0).join();
    if (cached?.removals !== removals) {
      const text = JSON.stringify(openApiDocument(routes, { now, version: deps.version }));
      cached = { removals, reply: Object.freeze({ status: 200, text }) };
    }
    return cached.reply;
  };
  const asset = (name: string) => {
    const found = ASSETS[name];
    if (found === undefined) throw new ApiError(404, `no file ${name} in the API reference`, { field: 'file' });
    return { status: 200, text: (found.text ??= found.read()), contentType: found.contentType, headers: CACHE };
  };
  const page: Reply = Object.freeze({ status: 200, text: PAGE, contentType: 'text/html; charset=utf-8', headers: PAGE_HEADERS });
  return [
    {
      method: 'GET',
      pattern: '/openapi.json',
      area: 'system',
      auth: 'none',
      doc: {
        summary: 'This document',
        responses: { 200: z.looseObject({ openapi: z.literal('3.1.0'), info: z.looseObject({}), paths: z.looseObject({}) }) },
      },
      handle: openapi,
    },
    {
      method: 'GET',
      pattern: '/docs',
      area: 'system',
      auth: 'none',
      doc: { summary: 'The API reference page, over /openapi.json', responses: { 200: { contentType: 'text/html' } } },
      handle: () => page,
    },
    {
      method: 'GET',
      pattern: '/docs/:file',
      area: 'system',
      auth: 'none',
      doc: {
        summary: "The reference page's scripts and styles",
        responses: { 200: { contentType: 'text/javascript' } },
      },
      handle: (req) => asset(req.params['file']!),
    },
  ];
}

const uiDir = (): string => dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
const fromUi = (file: string) => () => readFileSync(join(uiDir(), file), 'utf8');

/** The page's own start: the document beside it, no validator badge (validator.swagger.io), no top bar. */
const INIT = `window.onload = () => {
  window.ui = SwaggerUIBundle({
    url: 'openapi.json',
    dom_id: '#swagger-ui',
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout',
  });
};
`;

const ASSETS: Record<string, { contentType: string; read: () => string; text?: string }> = {
  'swagger-ui.css': { contentType: 'text/css; charset=utf-8', read: fromUi('swagger-ui.css') },
  'swagger-ui-bundle.js': { contentType: 'text/javascript; charset=utf-8', read: fromUi('swagger-ui-bundle.js') },
  'init.js': { contentType: 'text/javascript; charset=utf-8', read: () => INIT },
};

const CACHE = { 'cache-control': 'public, max-age=3600' };

// Relative links: /docs resolves them under /, so the page works behind a proxy's path prefix too.
const PAGE = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <title>chainpost API reference</title>
    <link rel="stylesheet" href="docs/swagger-ui.css">
  </head>
  <body>
    <div id="swagger-ui"></div>
    <script src="docs/swagger-ui-bundle.js"></script>
    <script src="docs/init.js"></script>
  </body>
</html>
`;

const PAGE_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
};
