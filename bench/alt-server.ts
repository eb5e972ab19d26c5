/**
 * The same chainpost core (keys, rate limit, pipeline, routes) served by
 * Fastify or by node:http instead of uWebSockets.js: the HTTP benchmark's
 * baselines. `node dist-bench/bench/alt-server.js fastify|node-http`, configured by
 * the same environment variables as the server.
 */
import { createServer, type IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import Fastify from 'fastify';
import { createCore } from '../app/server.js';
import { parseConfig } from '../engine/config/config.js';
import type { Reply, Request, Route } from '../http/server/route.js';

const kind = process.argv[2];
const core = await createCore({ config: parseConfig(process.env) });
const { pipeline } = core;
// Chains named in CHAINPOST_CHAINS are followed as by the server (the Data API answers only for followed chains).
if (core.config.ingest === 'configured') await core.startIngest();
let seq = 0;

const toRequest = (
  method: string,
  url: string,
  params: Record<string, string>,
  headers: IncomingMessage['headers'],
  rawBody: Buffer | undefined,
): Request => {
  const q = url.indexOf('?');
  const req: Request = {
    method,
    path: q < 0 ? url : url.slice(0, q),
    query: q < 0 ? '' : url.slice(q + 1),
    params,
    header: (name) => {
      const v = headers[name];
      return Array.isArray(v) ? v[0] : v;
    },
    rawBody,
    id: `alt-${++seq}`,
    body: undefined,
    caller: undefined,
  };
  return req;
};

const answer = async (route: Route, req: Request): Promise<Reply> => {
  const started = performance.now();
  // The same gate as the uWS front end (key and rate limit, there before the body is read).
  const reply = pipeline.admit(route, req) ?? (await pipeline.run(route, req));
  pipeline.done(route, req, reply.status, started, performance.now());
  return reply;
};

const listening = (port: number): void => core.log.info('listening', { port, kind });

if (kind === 'fastify') {
  const app = Fastify({ logger: false });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
  for (const route of core.routes) {
    app.route({
      method: route.method === 'ANY' ? ['GET', 'POST', 'PUT', 'DELETE', 'PATCH'] : route.method,
      url: route.pattern,
      handler: async (freq, fres) => {
        const reply = await answer(
          route,
          toRequest(freq.method, freq.url, freq.params as Record<string, string>, freq.headers, freq.body as Buffer | undefined),
        );
        void fres
          .code(reply.status)
          .header('content-type', reply.contentType ?? 'application/json')
          .headers(reply.headers ?? {});
        return reply.text ?? JSON.stringify(reply.body);
      },
    });
  }
  const address = await app.listen({ host: core.config.host, port: core.config.port });
  listening(Number(new URL(address).port));
} else if (kind === 'node-http') {
  // node:http has no router: exact paths only, which covers the benchmarked route.
  const exact = new Map(
    core.routes.filter((r) => !r.pattern.includes(':') && !r.pattern.includes('*')).map((r) => [`${r.method} ${r.pattern}`, r]),
  );
  const server = createServer((nreq, nres) => {
    const chunks: Buffer[] = [];
    nreq.on('data', (c: Buffer) => chunks.push(c));
    nreq.on('end', () => {
      const url = nreq.url ?? '/';
      const path = url.split('?')[0]!;
      const route = exact.get(`${nreq.method} ${path}`);
      if (route === undefined) {
        nres.writeHead(404, { 'content-type': 'application/json' }).end('{"message":"no route"}');
        return;
      }
      void answer(
        route,
        toRequest(nreq.method ?? 'GET', url, {}, nreq.headers, chunks.length > 0 ? Buffer.concat(chunks) : undefined),
      ).then((reply) => {
        nres
          .writeHead(reply.status, { 'content-type': reply.contentType ?? 'application/json', ...reply.headers })
          .end(reply.text ?? JSON.stringify(reply.body));
      });
    });
  });
  server.listen(core.config.port, core.config.host, () => {
    const a = server.address();
    listening(typeof a === 'object' && a !== null ? a.port : 0);
  });
} else {
  process.stderr.write('usage: alt-server fastify|node-http\n');
  process.exit(2);
}
