/**
 * npm run bench:http — autocannon (bounded, loopback) on an authenticated JSON
 * route of chainpost (GET /api/v2.2/web3/version with x-api-key), and in the
 * same run the very same route and pipeline on Fastify and on node:http, and
 * the ceiling: bare uWebSockets.js answering the route with a constant.
 * Each server runs in its own process; autocannon runs here.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { cpuMs, startProcess, type Started } from '../test/kit/proc.js';
import { BIN, percentile, printRows, report, round, sized } from './report.js';

/** Seconds of each round; every server gets ROUNDS of them, the servers taking turns. */
const DURATION_S = Number(process.env['BENCH_SECONDS'] ?? sized(4, 1));
/**
 * The machine is shared and its load moves by the second: the servers run at once (an idle one
 * costs nothing) and take turns, each figure the median of its rounds, so a busy spell hits them all.
 */
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? sized(3, 1));
/** Seconds of each server's warm-up (none at the smoke size: autocannon's shortest run is a second). */
const WARM_UP_S = sized(2, 0);
const CONNECTIONS = Number(process.env['BENCH_CONNECTIONS'] ?? 100);
// Pipelined requests keep autocannon's own cost per request low, so the servers
// set the pace; a run without pipelining is recorded beside it.
const PIPELINING = Number(process.env['BENCH_PIPELINING'] ?? 10);
const ROUTE = '/api/v2.2/web3/version';
const KEY = 'cpk_bench_key_0123456789abcdef';

const alt = fileURLToPath(new URL('./alt-server.js', import.meta.url));
const bare = fileURLToPath(new URL('./bare-uws.js', import.meta.url));

interface Target {
  label: string;
  args: string[];
}

const CHAINPOST: Target = { label: 'chainpost (uWS)', args: [BIN, 'serve'] };
const FASTIFY: Target = { label: 'fastify', args: [alt, 'fastify'] };
const NODE_HTTP: Target = { label: 'node:http', args: [alt, 'node-http'] };
const BARE_UWS: Target = { label: 'bare uWS', args: [bare] };

interface Run {
  /** Median over the rounds. */
  reqPerSec: number;
  p99Ms: number;
  non2xx: number;
  /** The server process's CPU time (user + system) per request answered, over all rounds. */
  cpuUsPerReq: number;
  rounds: number[];
}

const median = (xs: readonly number[]): number => percentile(xs, 0.5);

/** Starts every target in its own process, warms each up, then loads them in turn for ROUNDS rounds. */
async function measure(targets: readonly Target[], pipelining: number): Promise<Run[]> {
  const dir = mkdtempSync(join(tmpdir(), 'chainpost-bench-'));
  const servers: Started[] = [];
  try {
    for (const [i, t] of targets.entries()) {
      // The rate limiter stays in the path, set high enough never to refuse.
      // Access logs off for all alike: the figure is the server, not stdout.
      const env = {
        CHAINPOST_DATA: join(dir, String(i)),
        CHAINPOST_PORT: '0',
        CHAINPOST_API_KEY: KEY,
        CHAINPOST_RATE_LIMIT: '1000000000',
        CHAINPOST_ACCESS_LOG: '0',
        CHAINPOST_CHAINS: 'none',
      };
      servers.push(await startProcess(t.args, env));
    }
    const opts = (server: Started) => ({
      url: `http://127.0.0.1:${server.port}${ROUTE}`,
      headers: { 'x-api-key': KEY },
      connections: CONNECTIONS,
      pipelining,
    });
    // Warm-up: JIT and connection pools.
    if (WARM_UP_S > 0) for (const server of servers) await autocannon({ ...opts(server), duration: WARM_UP_S });
    const results = targets.map(() => ({ rps: [] as number[], p99: [] as number[], non2xx: 0, requests: 0, cpuMs: 0 }));
    for (let round = 0; round < ROUNDS; round++) {
      // Each round starts with another server, so none always follows the same one.
      for (let k = 0; k < servers.length; k++) {
        const i = (round + k) % servers.length;
        const pid = servers[i]!.child.pid!;
        const before = cpuMs(pid);
        const r = await autocannon({ ...opts(servers[i]!), duration: DURATION_S });
        const res = results[i]!;
        res.cpuMs += cpuMs(pid) - before;
        res.requests += r.requests.total;
        res.rps.push(Math.round(r.requests.average));
        res.p99.push(r.latency.p99);
        res.non2xx += r.non2xx + r.errors;
      }
    }
    return results.map((res, i) => {
      const run: Run = {
        reqPerSec: median(res.rps),
        p99Ms: median(res.p99),
        non2xx: res.non2xx,
        cpuUsPerReq: round((res.cpuMs * 1000) / res.requests),
        rounds: res.rps,
      };
      console.log(
        `${targets[i]!.label}, pipelining ${pipelining}: ${run.reqPerSec} req/s (rounds ${run.rounds.join(', ')}), p99 ${run.p99Ms} ms, ${run.cpuUsPerReq} µs CPU/request, ${run.non2xx} non-2xx/errors`,
      );
      return run;
    });
  } finally {
    for (const server of servers) await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const [uws, fastify, nodeHttp, bareUws] = (await measure([CHAINPOST, FASTIFY, NODE_HTTP, BARE_UWS], PIPELINING)) as [Run, Run, Run, Run];
const [uws1, fastify1, bareUws1] = (await measure([CHAINPOST, FASTIFY, BARE_UWS], 1)) as [Run, Run, Run];
const ratioVsFastifyPipelining1 = +(uws1.reqPerSec / fastify1.reqPerSec).toFixed(2);
const ratioVsBareUwsPipelining1 = +(uws1.reqPerSec / bareUws1.reqPerSec).toFixed(2);

const ratioVsFastify = +(uws.reqPerSec / fastify.reqPerSec).toFixed(2);
const ratioVsBareUws = +(uws.reqPerSec / bareUws.reqPerSec).toFixed(2);
console.log('');
printRows([
  ['chainpost req/s', uws.reqPerSec, 'req/s', fastify.reqPerSec],
  ['fastify req/s', fastify.reqPerSec, 'req/s'],
  ['node:http req/s', nodeHttp.reqPerSec, 'req/s', fastify.reqPerSec],
  ['bare uWS req/s', bareUws.reqPerSec, 'req/s', fastify.reqPerSec],
  ['chainpost p99', uws.p99Ms, 'ms', fastify.p99Ms],
  ['fastify p99', fastify.p99Ms, 'ms'],
  ['node:http p99', nodeHttp.p99Ms, 'ms', fastify.p99Ms],
  ['chainpost req/s, pipelining 1', uws1.reqPerSec, 'req/s', fastify1.reqPerSec],
  ['fastify req/s, pipelining 1', fastify1.reqPerSec, 'req/s'],
  ['bare uWS req/s, pipelining 1', bareUws1.reqPerSec, 'req/s', fastify1.reqPerSec],
]);
const errors = [uws, fastify, nodeHttp, bareUws, uws1, fastify1, bareUws1].reduce((sum, r) => sum + r.non2xx, 0);
if (errors > 0) console.log(`warning: ${errors} non-2xx answers or errors during the run`);
const met = ratioVsFastify >= 2 && ratioVsBareUws >= 0.8 && errors === 0;
report(
  'http',
  'npm run bench:http',
  {
    chainpostReqPerSec: uws.reqPerSec,
    fastifyReqPerSec: fastify.reqPerSec,
    nodeHttpReqPerSec: nodeHttp.reqPerSec,
    bareUwsReqPerSec: bareUws.reqPerSec,
    chainpostP99Ms: uws.p99Ms,
    bareUwsP99Ms: bareUws.p99Ms,
    chainpostCpuUsPerReq: uws.cpuUsPerReq,
    bareUwsCpuUsPerReq: bareUws.cpuUsPerReq,
    cpuRatioVsBareUws: round(bareUws.cpuUsPerReq / uws.cpuUsPerReq),
    ratioVsFastify,
    ratioVsBareUws,
    chainpostReqPerSecPipelining1: uws1.reqPerSec,
    fastifyReqPerSecPipelining1: fastify1.reqPerSec,
    bareUwsReqPerSecPipelining1: bareUws1.reqPerSec,
    ratioVsFastifyPipelining1,
    ratioVsBareUwsPipelining1,
  },
  { ratioVsFastify: '>= 2', ratioVsBareUws: '>= 0.8' },
  met,
  [
    `autocannon: ${CONNECTIONS} connections, pipelining ${PIPELINING}, each server in its own process, all started at once and warmed up ${WARM_UP_S} s each, then ${ROUNDS} rounds of ${DURATION_S} s in which the servers take turns (the others idle); each req/s and p99 is the median of its rounds (chainpost ${uws.rounds.join(', ')}; bare uWS ${bareUws.rounds.join(', ')}; fastify ${fastify.rounds.join(', ')}). *CpuUsPerReq: the server process's CPU time (user + system, /proc) over all its rounds / requests answered. Route GET ${ROUTE} with x-api-key (in every server the same gate: the key checked against the cached keys, whose version stamp is read from LMDB, and a token bucket, on every request).`,
    `Bare uWS (bench/bare-uws.ts): uWebSockets.js answering the same route with a constant body and the same headers (content-type, x-request-id), nothing else; ratioVsBareUws = chainpost / bare uWS req/s. autocannon runs on the same 2 cores: where it, not the server, sets the pace, both answer about as fast as it asks and the ratio nears 1, so cpuRatioVsBareUws (bare uWS's CPU per request / chainpost's) says what chainpost's key check, rate limit, routing, metrics and JSON answer cost where the server is the limit.`,
    `fastify p99 ${fastify.p99Ms} ms, node:http p99 ${nodeHttp.p99Ms} ms.`,
    ...(ratioVsBareUws >= 0.8
      ? []
      : [
          `ratioVsBareUws missed: ${ratioVsBareUws} against 0.8 (${Math.round(0.8 * bareUws.reqPerSec - uws.reqPerSec)} req/s short). CPU per request: chainpost ${uws.cpuUsPerReq} µs, bare uWS ${bareUws.cpuUsPerReq} µs. A node --cpu-prof of chainpost under autocannon (2026-11-23) put the JavaScript of the request path (routing callback, key check with its LMDB read of the key version, token bucket, metrics, the answer's headers) near 2 µs a request; the rest is uWS's native parsing and writing and the kernel's loopback TCP, which bare uWS pays as well.`,
        ]),
    `Without pipelining: chainpost ${uws1.reqPerSec} req/s, fastify ${fastify1.reqPerSec} req/s, bare uWS ${bareUws1.reqPerSec} req/s (ratios ${ratioVsFastifyPipelining1} and ${ratioVsBareUwsPipelining1}); the goals are judged on the pipelined run.`,
  ],
);
console.log(
  `\nratioVsFastify ${ratioVsFastify} (goal >= 2), ratioVsBareUws ${ratioVsBareUws} (goal >= 0.8): ${met ? 'met' : 'not met'}; wrote bench/results/http.json and bench/RESULTS.md`,
);
