/**
 * npm run bench:http — autocannon (bounded, loopback) on an authenticated JSON
 * route of chainpost (GET /api/v2.2/web3/version with x-api-key), and in the
 * same run the very same route and pipeline on Fastify and on node:http.
 * Each server runs in its own process; autocannon runs here.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { startProcess } from './proc.js';
import { BIN, printRows, report } from './report.js';

const DURATION_S = Number(process.env['BENCH_SECONDS'] ?? 10);
const CONNECTIONS = Number(process.env['BENCH_CONNECTIONS'] ?? 100);
// Pipelined requests keep autocannon's own cost per request low, so the servers
// set the pace; a run without pipelining is recorded beside it.
const PIPELINING = Number(process.env['BENCH_PIPELINING'] ?? 10);
const ROUTE = '/api/v2.2/web3/version';
const KEY = 'cpk_bench_key_0123456789abcdef';

const alt = fileURLToPath(new URL('./alt-server.js', import.meta.url));

interface Run {
  reqPerSec: number;
  p99Ms: number;
  non2xx: number;
}

async function measure(label: string, args: string[], pipelining: number): Promise<Run> {
  const dir = mkdtempSync(join(tmpdir(), 'chainpost-bench-'));
  // The rate limiter stays in the path, set high enough never to refuse.
  // Access logs off for all three alike: the figure is the server, not stdout.
  const env = { CHAINPOST_DATA: dir, CHAINPOST_PORT: '0', CHAINPOST_API_KEY: KEY, CHAINPOST_RATE_LIMIT: '1000000000', CHAINPOST_ACCESS_LOG: '0', CHAINPOST_CHAINS: 'none' };
  const server = await startProcess(args, env);
  try {
    const opts = { url: `http://127.0.0.1:${server.port}${ROUTE}`, headers: { 'x-api-key': KEY }, connections: CONNECTIONS, pipelining };
    await autocannon({ ...opts, duration: 2 }); // warm-up: JIT and connection pools
    const r = await autocannon({ ...opts, duration: DURATION_S });
    const run = { reqPerSec: Math.round(r.requests.average), p99Ms: r.latency.p99, non2xx: r.non2xx + r.errors };
    console.log(`${label}, pipelining ${pipelining}: ${run.reqPerSec} req/s, p99 ${run.p99Ms} ms, ${run.non2xx} non-2xx/errors`);
    return run;
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const uws = await measure('chainpost (uWS)', [BIN, 'serve'], PIPELINING);
const fastify = await measure('fastify', [alt, 'fastify'], PIPELINING);
const nodeHttp = await measure('node:http', [alt, 'node-http'], PIPELINING);
const uws1 = await measure('chainpost (uWS)', [BIN, 'serve'], 1);
const fastify1 = await measure('fastify', [alt, 'fastify'], 1);
const ratioVsFastifyPipelining1 = +(uws1.reqPerSec / fastify1.reqPerSec).toFixed(2);

const ratioVsFastify = +(uws.reqPerSec / fastify.reqPerSec).toFixed(2);
console.log('');
printRows([
  ['chainpost req/s', uws.reqPerSec, 'req/s', fastify.reqPerSec],
  ['fastify req/s', fastify.reqPerSec, 'req/s'],
  ['node:http req/s', nodeHttp.reqPerSec, 'req/s', fastify.reqPerSec],
  ['chainpost p99', uws.p99Ms, 'ms', fastify.p99Ms],
  ['fastify p99', fastify.p99Ms, 'ms'],
  ['node:http p99', nodeHttp.p99Ms, 'ms', fastify.p99Ms],
  ['chainpost req/s, pipelining 1', uws1.reqPerSec, 'req/s', fastify1.reqPerSec],
  ['fastify req/s, pipelining 1', fastify1.reqPerSec, 'req/s'],
]);
const errors = uws.non2xx + fastify.non2xx + nodeHttp.non2xx + uws1.non2xx + fastify1.non2xx;
if (errors > 0) console.log(`warning: ${errors} non-2xx answers or errors during the run`);
const met = ratioVsFastify >= 2 && errors === 0;
report(
  'http',
  'npm run bench:http',
  {
    chainpostReqPerSec: uws.reqPerSec,
    fastifyReqPerSec: fastify.reqPerSec,
    nodeHttpReqPerSec: nodeHttp.reqPerSec,
    chainpostP99Ms: uws.p99Ms,
    ratioVsFastify,
    chainpostReqPerSecPipelining1: uws1.reqPerSec,
    fastifyReqPerSecPipelining1: fastify1.reqPerSec,
    ratioVsFastifyPipelining1,
  },
  { ratioVsFastify: '>= 2' },
  met,
  [
    `autocannon: ${CONNECTIONS} connections, pipelining ${PIPELINING}, ${DURATION_S} s after a 2 s warm-up, each server alone in its own process; route GET ${ROUTE} with x-api-key (in every server the same gate: the key checked against the cached keys, whose version stamp is read from LMDB, and a token bucket, on every request).`,
    `fastify p99 ${fastify.p99Ms} ms, node:http p99 ${nodeHttp.p99Ms} ms.`,
    `Without pipelining: chainpost ${uws1.reqPerSec} req/s, fastify ${fastify1.reqPerSec} req/s, ratio ${ratioVsFastifyPipelining1}; the goal is judged on the pipelined run.`,
  ],
);
console.log(`\nratioVsFastify ${ratioVsFastify} (goal >= 2): ${met ? 'met' : 'not met'}; wrote bench/results/http.json and bench/RESULTS.md`);
