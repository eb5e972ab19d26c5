/**
 * npm run bench:triggers — one tenant's webhook latency with and without another tenant's stream whose triggers
 * call a function that never returns, on the same address. The real server follows a real anvil; one account
 * receives TXS value transfers, one at a time. Latency = this process's receiver getting the victim stream's
 * unconfirmed webhook − the transfer's receipt seen here. First the victim's stream alone (the baseline, in the same
 * run), then beside the hostile stream: CHAINPOST_MAX_TRIGGERS triggers of type tx, each an eth_call to an account
 * whose code loops forever (anvil_setCode), so each call burns all the gas a trigger call gets (CHAINPOST_TRIGGER_GAS).
 * bench:attacks runs the same measurement on an earlier build too (victimBesideTriggers).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { DEFAULT_LIMITS, TRIGGER_BUDGET_MS, TRIGGER_GAS, TRIGGER_SHARE_MS } from '../engine/streams/limits.js';
import { startAnvil } from '../http/clients/anvil.js';
import { jsonRpcUpstream } from '../http/clients/rpc.js';
import { startProcess } from '../test/kit/proc.js';
import { minedReceipt } from '../test/kit/anvil-rpc.js';
import { BIN, percentile, printRows, report, round, sized } from './report.js';

const TXS = Number(process.env['BENCH_TXS'] ?? sized(40, 3));
/** Transfers before the baseline (worker start, first compile, connections). */
const WARMUP_TXS = sized(5, 1);
/** Pause between transfers, so each block's webhooks are built while the hostile stream's calls run. */
const GAP_MS = 100;
const KEY = 'cpk_bench_triggers_key_0123456789ab';
const FROM = '0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266';
const WATCHED = '0x70997970c51812dc3a04c01e3f3b1b4fe8b8f0a2';
/** JUMPDEST PUSH1 0 JUMP: any call to it loops until its gas is gone. */
const SPIN = '0x5919000000000000000000000000000000005919';
const SPIN_CODE = '0x5b600056';
const SPIN_ABI = { type: 'function', name: 'spin', stateMutability: 'view', inputs: [], outputs: [{ name: 'n', type: 'uint256' }] };
/** A transfer whose victim webhook has not come within this long is lost. */
const TX_TIMEOUT_MS = 15_000;

/** One run of the measurement: the server `bin` (this build's or an earlier one), `transfers` timed alone and as many beside the hostile stream. */
export interface TriggersRun {
  bin: string;
  transfers: number;
  /** Triggers of the hostile stream. */
  triggers: number;
  /** What the server needs besides the run's own variables (an earlier build may want other ones). */
  env: Record<string, string>;
  /** How long to wait for the hostile stream's webhook of the last block, ms. */
  hostileWaitMs: number;
}

/** The victim's latencies alone and beside the hostile stream, on a fresh anvil, server and data directory; the figures bench:triggers reports. */
export async function victimBesideTriggers(opts: TriggersRun): Promise<Record<string, number>> {
  const { bin, transfers: TXS } = opts;
  const anvil = await startAnvil({ chainId: 1337 });
  const rpc = jsonRpcUpstream(anvil.url);
  await rpc.call('anvil_setCode', [SPIN, SPIN_CODE]);

  // The receiver: first arrival of each path's unconfirmed webhook per block, and the hostile bodies' triggers.
  const arrivals = new Map<string, number>();
  const waiting = new Map<string, () => void>();
  const hostileTriggers: Array<{ error?: string }> = [];
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = performance.now();
      const raw = Buffer.concat(chunks).toString();
      const body =
        raw === ''
          ? {}
          : (JSON.parse(raw) as {
              confirmed?: boolean;
              block?: { number?: string };
              txs?: Array<{ triggers?: Array<{ error?: string }> }>;
            });
      const key = `${req.url}/${body.block?.number ?? ''}`;
      if (body.confirmed === false && !arrivals.has(key)) {
        arrivals.set(key, at);
        if (req.url === '/hostile') for (const tx of body.txs ?? []) hostileTriggers.push(...(tx.triggers ?? []));
        waiting.get(key)?.();
      }
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;

  const dir = mkdtempSync(join(tmpdir(), 'chainpost-bench-triggers-'));
  // No confirmed webhooks during the run: each block brings each stream one.
  const server = await startProcess([bin, 'serve'], {
    CHAINPOST_DATA: dir,
    CHAINPOST_PORT: '0',
    CHAINPOST_API_KEY: KEY,
    CHAINPOST_CHAINS: `0x539=${anvil.url}`,
    CHAINPOST_CONFIRMATIONS: '0x539=100000',
    CHAINPOST_RATE_LIMIT: '0',
    CHAINPOST_ACCESS_LOG: '0',
    ...opts.env,
  });
  const api = async (key: string, method: string, path: string, json?: unknown): Promise<any> => {
    const res = await fetch(`http://127.0.0.1:${server.port}${path}`, {
      method,
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: json === undefined ? undefined : JSON.stringify(json),
    });
    const body = await res.json();
    if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(body)}`);
    return body;
  };
  const stream = async (key: string, path: string, extra: Record<string, unknown>): Promise<string> => {
    const { id } = await api(key, 'PUT', '/streams/evm', {
      webhookUrl: `${hook}${path}`,
      chainIds: ['0x539'],
      includeNativeTxs: true,
      ...extra,
    });
    await api(key, 'POST', `/streams/evm/${id}/address`, { address: [WATCHED] });
    return id as string;
  };

  /** Sends the transfers one by one; per block, the victim's arrival minus the receipt seen here. */
  const run = async (count: number): Promise<{ latencies: number[]; blocks: number[]; lost: number }> => {
    const latencies: number[] = [];
    const blocks: number[] = [];
    let lost = 0;
    for (let i = 0; i < count; i++) {
      const hash = await rpc.call<string>('eth_sendTransaction', [{ from: FROM, to: WATCHED, value: '0x1' }]);
      const receipt = await minedReceipt(rpc, hash);
      const mined = performance.now();
      const n = Number(receipt.blockNumber);
      const key = `/victim/${n}`;
      const came =
        arrivals.has(key) ||
        (await new Promise<boolean>((resolve) => {
          const t = setTimeout(() => resolve(false), TX_TIMEOUT_MS);
          waiting.set(key, () => {
            clearTimeout(t);
            resolve(true);
          });
        }));
      waiting.delete(key);
      if (!came) lost++;
      else {
        latencies.push(Math.max(0, arrivals.get(key)! - mined));
        blocks.push(n);
      }
      await new Promise((r) => setTimeout(r, GAP_MS));
    }
    return { latencies, blocks, lost };
  };

  let figures: Record<string, number>;
  try {
    // What one hostile call costs the node: a call with the gas of a trigger call (under the block gas limit), timed here.
    const { gasLimit } = await rpc.call<{ gasLimit: string }>('eth_getBlockByNumber', ['latest', false]);
    const gas = `0x${(BigInt(gasLimit) < BigInt(TRIGGER_GAS) ? BigInt(gasLimit) : BigInt(TRIGGER_GAS)).toString(16)}`;
    const spinCalls: number[] = [];
    for (let i = 0; i < 3; i++) {
      const t = performance.now();
      await rpc.call('eth_call', [{ to: SPIN, data: '0x', gas }, 'latest']).catch(() => null);
      spinCalls.push(performance.now() - t);
    }
    await stream(KEY, '/victim', {});
    // Warm-up (worker start, first compile, connections), then the baseline.
    await run(WARMUP_TXS);
    const baseline = await run(TXS);

    // The hostile tenant: its own key, its own tenant.
    const { stdout } = await promisify(execFile)(process.execPath, [bin, 'keys', 'create', '--name', 'hostile'], {
      env: { ...process.env, CHAINPOST_DATA: dir },
    });
    const hostileKey = stdout.trim().split('\n').at(-1)!;
    const triggers = Array.from({ length: opts.triggers }, () => ({ type: 'tx', contractAddress: SPIN, functionAbi: SPIN_ABI }));
    await stream(hostileKey, '/hostile', { triggers });
    const started = performance.now();
    const attack = await run(TXS);
    // The hostile stream's webhooks come too: each block's, its triggers answered or over budget.
    const last = attack.blocks.at(-1)!;
    await new Promise<void>((resolve) => {
      if (arrivals.has(`/hostile/${last}`)) return resolve();
      // Cleared once it came: the wait's timer would hold the process up to hostileWaitMs after the run.
      const timer = setTimeout(resolve, opts.hostileWaitMs);
      waiting.set(`/hostile/${last}`, () => {
        clearTimeout(timer);
        resolve();
      });
    });
    const hostileArrived = attack.blocks.filter((n) => arrivals.has(`/hostile/${n}`)).length;
    const hostileLatencies = attack.blocks.flatMap((n) =>
      arrivals.has(`/hostile/${n}`) ? [arrivals.get(`/hostile/${n}`)! - arrivals.get(`/victim/${n}`)!] : [],
    );
    const overBudget = hostileTriggers.filter((t) => t.error !== undefined).length;

    const b50 = percentile(baseline.latencies, 0.5);
    const a50 = percentile(attack.latencies, 0.5);
    figures = {
      baselineP50Ms: round(b50),
      baselineP99Ms: round(percentile(baseline.latencies, 0.99)),
      withHostileP50Ms: round(a50),
      withHostileP99Ms: round(percentile(attack.latencies, 0.99)),
      ratioP50: round(a50 / b50),
      ratioP99: round(percentile(attack.latencies, 0.99) / percentile(baseline.latencies, 0.99)),
      transfers: TXS,
      lost: baseline.lost + attack.lost,
      hostileTriggers: opts.triggers,
      triggerBudgetMs: TRIGGER_BUDGET_MS,
      triggerShareMs: TRIGGER_SHARE_MS,
      triggerGas: TRIGGER_GAS,
      hostileWebhooks: hostileArrived,
      hostileAfterVictimP50Ms: round(percentile(hostileLatencies, 0.5)),
      hostileTriggerResults: hostileTriggers.length,
      hostileOverBudget: overBudget,
      attackSeconds: round((performance.now() - started) / 1000, 1),
      spinCallMs: round(percentile(spinCalls, 0.5)),
    };
    printRows([
      ['victim p50, alone', figures['baselineP50Ms']!, 'ms'],
      ['victim p50, beside hostile', figures['withHostileP50Ms']!, 'ms', figures['baselineP50Ms']!],
      ['victim p99, alone', figures['baselineP99Ms']!, 'ms'],
      ['victim p99, beside hostile', figures['withHostileP99Ms']!, 'ms', figures['baselineP99Ms']!],
      ['hostile after victim, p50', figures['hostileAfterVictimP50Ms']!, 'ms'],
      ['one hostile call', figures['spinCallMs']!, 'ms'],
    ]);
    console.log(
      `hostile: ${hostileArrived}/${attack.blocks.length} webhooks, ${overBudget} of ${hostileTriggers.length} trigger results over budget; lost ${figures['lost']}`,
    );
  } finally {
    // Bounded: an earlier build may still be making the hostile calls. (The bound's timer cleared: it would hold the process.)
    let bound: NodeJS.Timeout | undefined;
    await Promise.race([server.stop('SIGTERM'), new Promise((r) => (bound = setTimeout(r, 10_000)))]);
    clearTimeout(bound);
    await server.stop('SIGKILL');
    receiver.close();
    await rpc.close();
    await anvil.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return figures;
}

async function main(): Promise<void> {
  const figures = await victimBesideTriggers({
    bin: BIN,
    transfers: TXS,
    triggers: DEFAULT_LIMITS.triggers,
    env: { CHAINPOST_PRIVATE_TARGETS: 'allow' },
    hostileWaitMs: 60_000,
  });
  const met = figures['ratioP50']! <= 2 && figures['lost'] === 0;
  report(
    'triggers',
    'npm run bench:triggers',
    figures,
    { ratioP50: '<= 2 (the victim beside the hostile stream vs alone)', lost: '= 0' },
    met,
    [
      `Latency is from this process seeing a transfer's receipt to its receiver getting the victim stream's unconfirmed webhook of that block; ${TXS} transfers to one watched account, one at a time ${GAP_MS} ms apart, first with the victim's stream alone (after ${WARMUP_TXS} for warm-up), then beside another tenant's stream on the same account with ${DEFAULT_LIMITS.triggers} triggers (CHAINPOST_MAX_TRIGGERS' default), each an eth_call to code that loops until its gas (CHAINPOST_TRIGGER_GAS, ${TRIGGER_GAS}) is gone, within CHAINPOST_TRIGGER_BUDGET_MS (${TRIGGER_BUDGET_MS} ms) per block and the hostile tenant's share of the node's time, CHAINPOST_TRIGGER_SHARE_MS (${TRIGGER_SHARE_MS} ms a second, one budget at once). The hostile stream's webhooks: hostileWebhooks of the blocks arrived, hostileAfterVictimP50Ms after the victim's of the same block; hostileOverBudget of its trigger results carry the over-budget error. The hostile calls run on the same anvil that mines the blocks and answers the server's block reads: anvil mines a block, and answers the follower's debug_traceBlockByNumber of a new block, only once the call under way has ended (its eth_getBlockByNumber and eth_getBlockReceipts are not held), and each call takes a core while it runs (spinCallMs, a call with the gas of a trigger call, timed in this run). Without the share the hostile stream kept anvil busy without pause (about ten budgets behind the chain); with it, after its first budget it keeps anvil busy a tenth of the time, so most victim blocks meet no hostile call.`,
    ],
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
