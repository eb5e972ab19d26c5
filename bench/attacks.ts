/**
 * npm run bench:attacks [-- --before <an earlier build>/bin/chainpost.js] [--only name,…] — the outside tester's
 * thirteen ways for one tenant to hurt the others or the operator, rerun against this build ("after") and, with
 * --before, an earlier one, one figure per attack side by side. Each attack starts the server it needs (each build in
 * turn, a fresh temp data directory, a real anvil where a chain is needed, receivers on loopback), scaled so the
 * whole bench ends within minutes and bounded so a build that falls for an attack cannot hang it (a call that
 * freezes the node is timed out at 10 s, a stop that hangs at 15 s, and the node it froze is killed).
 *
 * A build gets only the variables it reads (an earlier one ignores the operator's CHAINPOST_ADMIN_KEY, for one, and
 * takes the admin routes with any tenant key). The figures and the promise each "after" figure must keep are in
 * ATTACKS; bench/results/attacks.json has them all, `met` when every "after" figure keeps its promise.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, type Dirent } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs, promisify } from 'node:util';
import { createLocalJWKSet, decodeJwt, jwtVerify } from 'jose';
import { encodeAbiParameters, keccak256, toHex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { DEFAULT_LIMITS } from '../engine/streams/limits.js';
import { startAnvil } from '../http/clients/anvil.js';
import { freePort } from '../test/kit/free-port.js';
import { jsonRpcUpstream } from '../http/clients/rpc.js';
import { fairnessRig, fairnessRun, type Scale } from './fairness.js';
import { startProcess, type Started } from '../test/kit/proc.js';
import { listen, port } from './receiver-listen.js';
import { BENCH_DIR, BIN, percentile, report, round, sized } from './report.js';
import { victimBesideTriggers } from './triggers.js';
import { measureXpubs } from './xpubs.js';

const KEY = 'cpk_bench_attacks_key_0123456789ab';
const ADMIN_KEY = 'bench_attacks_admin_key_0123456789';
/** JUMPDEST PUSH1 0 JUMP: code that loops until its gas is gone. */
const LOOP_CODE = '0x5b600056';
const LOOPER = '0x00000000000000000000000000000000000100aa';
/** The gas of the reported call: a million blocks' worth. */
const HUGE_GAS = '0xe8d4a51000';
/** How long a looping call is waited for, and the window its chain's new blocks are counted in. */
const CALL_WINDOW_MS = sized(10_000, 2_000);
/** How long a stop is waited for before the server (and its node) are killed. */
const STOP_WAIT_MS = 15_000;
/** The stream scaled down from the reported 3,000 xpubs (and bench:xpubs' 1,000), with the limit set to it where the build has one. */
const XPUBS = sized(200, 80);
const CHALLENGES = sized(200, 5);
/** An attack still running after this long is given up, and the servers it started are killed. */
const ATTACK_CAP_MS = 240_000;

const yesNo = (b: boolean): string => (b ? 'yes' : 'no');

/** A figure: a number (ms, counts, MB), or a word (yes/no, a status, a kind of message). */
type Value = number | string;

/** A server binary and the variables it reads (found in its compiled code). */
interface Build {
  label: 'before' | 'after';
  bin: string;
  /** `env` without the CHAINPOST_ variables this build does not read. */
  env(env: Record<string, string>): Record<string, string>;
}

function build(label: Build['label'], bin: string): Build {
  const dist = join(dirname(bin), '..', 'dist');
  const code: string[] = [];
  const read = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true }) as Dirent[]) {
      if (e.isDirectory()) read(join(dir, e.name));
      else if (e.name.endsWith('.js')) code.push(readFileSync(join(dir, e.name), 'utf8'));
    }
  };
  // The CLI's folder: app/cli/ since 985fc01, cli/ in a build before it.
  for (const part of ['app', 'cli', 'engine', 'http']) if (existsSync(join(dist, part))) read(join(dist, part));
  const text = code.join('\n');
  const reads = new Map<string, boolean>();
  const knows = (name: string): boolean => {
    if (!reads.has(name)) {
      reads.set(name, text.includes(`'${name}'`) || text.includes(`"${name}"`));
      if (!reads.get(name)) console.log(`${label}: this build reads no ${name}; not passed to it`);
    }
    return reads.get(name)!;
  };
  return { label, bin, env: (env) => Object.fromEntries(Object.entries(env).filter(([k]) => !k.startsWith('CHAINPOST_') || knows(k))) };
}

interface Answer {
  status: number;
  body: any;
  text: string;
}

/** A server of one build on a fresh data directory. */
interface Serving {
  started: Started;
  url: string;
  dir: string;
  /** A request with `key` (the first tenant's by default), and on an admin route the operator's admin key. */
  call(path: string, init?: { method?: string; json?: unknown; key?: string; headers?: Record<string, string> }): Promise<Answer>;
  /** Another tenant's first key. */
  tenant(name: string): Promise<string>;
  /** The embedded devnet's node (CHAINPOST_CHAINS unset). */
  devnet?: { rpc: string; pid: number };
  /** SIGTERM, then SIGKILL after `waitMs` (and the devnet's anvil with it); the seconds the SIGTERM took, or undefined past the wait. */
  stop(waitMs?: number): Promise<number | undefined>;
}

/**
 * The servers an attack started and has not stopped, what it leaves behind if given up: a set per attack run (two
 * run at once at the smoke size, and one failing stops only its own).
 */
const attackServers = new AsyncLocalStorage<Set<Serving>>();

async function serve(b: Build, env: Record<string, string>, node: string[] = []): Promise<Serving> {
  const dir = mkdtempSync(join(tmpdir(), 'chainpost-bench-attacks-'));
  const started = await startProcess(
    [...node, b.bin, 'serve'],
    b.env({
      CHAINPOST_DATA: dir,
      CHAINPOST_PORT: '0',
      CHAINPOST_API_KEY: KEY,
      CHAINPOST_ADMIN_KEY: ADMIN_KEY,
      CHAINPOST_CHAINS: 'none',
      CHAINPOST_RATE_LIMIT: '0',
      ...env,
    }),
    60_000,
  );
  const url = `http://127.0.0.1:${started.port}`;
  const devnetLine = started
    .output()
    .split('\n')
    .find((l) => l.includes('"msg":"devnet"'));
  const devnet = devnetLine === undefined ? undefined : (JSON.parse(devnetLine) as { rpc: string; pid: number });
  let stopped: Promise<number | undefined> | undefined;
  const live = attackServers.getStore();
  const serving: Serving = {
    started,
    url,
    dir,
    devnet,
    call: async (path, init = {}) => {
      const res = await fetch(`${url}${path}`, {
        method: init.method ?? (init.json === undefined ? 'GET' : 'POST'),
        headers: {
          'x-api-key': init.key ?? KEY,
          ...(path.startsWith('/admin/') ? { 'x-admin-key': ADMIN_KEY } : {}),
          'content-type': 'application/json',
          ...init.headers,
        },
        body: init.json === undefined ? undefined : JSON.stringify(init.json),
      });
      const text = await res.text();
      let body: any = text;
      try {
        body = JSON.parse(text);
      } catch {
        // Prometheus text, or anything else that is not JSON.
      }
      return { status: res.status, body, text };
    },
    tenant: async (name) =>
      (
        await promisify(execFile)(process.execPath, [b.bin, 'keys', 'create', '--name', name], {
          env: { ...process.env, CHAINPOST_DATA: dir },
        })
      ).stdout
        .trim()
        .split('\n')
        .at(-1)!,
    stop: (waitMs = 10_000) =>
      (stopped ??= (async () => {
        const t = performance.now();
        const code = await Promise.race([started.stop('SIGTERM'), sleep(waitMs).then(() => 'waiting' as const)]);
        const seconds = code === 'waiting' ? undefined : (performance.now() - t) / 1000;
        await started.stop('SIGKILL');
        if (devnet !== undefined) {
          try {
            process.kill(devnet.pid, 'SIGKILL');
          } catch {
            // Gone with the server.
          }
        }
        rmSync(dir, { recursive: true, force: true });
        live?.delete(serving);
        return seconds;
      })()),
  };
  live?.add(serving);
  return serving;
}

/** A JSON-RPC request straight to a node, its result (or undefined when it answered an error). */
async function rpcCall<T>(url: string, method: string, params: unknown[] = [], signal?: AbortSignal): Promise<T> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    ...(signal === undefined ? {} : { signal }),
  });
  return ((await res.json()) as { result: T }).result;
}
const blockNumber = async (rpc: string): Promise<number> => Number(await rpcCall<string>(rpc, 'eth_blockNumber'));

/** Seconds of the service clock moved forward through the test clock's admin route. */
const advance = async (s: Serving, seconds: number): Promise<void> => {
  const r = await s.call('/admin/clock/advance', { json: { seconds } });
  if (r.status !== 200) throw new Error(`clock advance: ${r.status} ${r.text}`);
};

/** A loopback server answering `body` to every request, counting them. */
async function loopbackService(body: string): Promise<{ server: Server; url: string; hits: () => number }> {
  let hits = 0;
  const server = await listen((req: IncomingMessage, res: ServerResponse) => {
    hits++;
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(body));
  });
  return { server, url: `http://127.0.0.1:${port(server)}`, hits: () => hits };
}

/** What a refusal's message says: the server's own rule, or the network error it met. */
const messageKind = (r: Answer): string =>
  r.status === 200 || r.status === 201
    ? 'accepted'
    : /CHAINPOST_PRIVATE_TARGETS|metadata address|loopback address|private address/.test(r.text)
      ? 'the rule'
      : `a network error (${/\b(E[A-Z]{3,}|HTTP \d{3})\b/.exec(r.text)?.[1] ?? String(r.body?.message ?? r.text).slice(0, 60)})`;

// ————— the attacks —————

/** A looping call with a huge gas through node access to the embedded devnet: how long it takes to answer, and the blocks mined meanwhile. */
async function loopingCall(b: Build, method: 'eth_call' | 'eth_estimateGas'): Promise<{ answerMs: Value; blocks: number }> {
  const s = await serve(b, {
    CHAINPOST_CHAINS: '',
    CHAINPOST_DEVNET_PORT: '0',
    CHAINPOST_DEVNET_BLOCK_TIME: '1',
    CHAINPOST_ACCESS_LOG: '0',
  });
  try {
    const rpc = s.devnet!.rpc;
    // A block first, so the devnet is mining before the call.
    const first = await blockNumber(rpc);
    while ((await blockNumber(rpc)) === first) await sleep(100);
    const from = await blockNumber(rpc);
    const t = performance.now();
    const answered = fetch(`${s.url}/rpc/0x539/${KEY}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method,
        params: [{ to: LOOPER, gas: HUGE_GAS }, 'latest', { [LOOPER]: { code: LOOP_CODE } }],
      }),
      signal: AbortSignal.timeout(CALL_WINDOW_MS),
    }).then(
      async (r) => (await r.text(), performance.now() - t),
      () => undefined,
    );
    const ms = await answered;
    await sleep(Math.max(0, t + CALL_WINDOW_MS - performance.now()));
    return {
      answerMs: ms === undefined ? `no answer in ${CALL_WINDOW_MS / 1000} s` : round(ms, 0),
      blocks: (await blockNumber(rpc)) - from,
    };
  } finally {
    await s.stop(2_000);
  }
}

/** anvil kept busy by a looping call sent to it directly: what /health says of the chain 40 s of service time later, and how long a SIGTERM takes. */
async function busyNode(b: Build): Promise<{ health: Value; stop: Value }> {
  const s = await serve(b, {
    CHAINPOST_CHAINS: '',
    CHAINPOST_DEVNET_PORT: '0',
    CHAINPOST_DEVNET_BLOCK_TIME: '1',
    CHAINPOST_TEST_CLOCK: '1',
    CHAINPOST_ACCESS_LOG: '0',
  });
  try {
    const rpc = s.devnet!.rpc;
    const busy = new AbortController();
    void rpcCall(rpc, 'eth_call', [{ to: LOOPER, gas: HUGE_GAS }, 'latest', { [LOOPER]: { code: LOOP_CODE } }], busy.signal).catch(
      () => undefined,
    );
    // anvil is inside the call once blocks stop coming (one a second otherwise).
    for (let i = 0; ; i++) {
      const n = await blockNumber(rpc);
      await sleep(sized(2_500, 1_500));
      if ((await blockNumber(rpc)) === n) break;
      if (i === 5) throw new Error('the devnet kept mining beside the looping call');
    }
    await advance(s, 40);
    const health = (await s.call('/health')).body as {
      status: string;
      chains?: Array<{ chain: string; stalled?: boolean; upstream?: string }>;
    };
    const chain = health.chains?.find((c) => c.chain === '0x539');
    const shown = chain?.stalled === true ? 'stalled' : `${health.status}, not stalled`;
    const seconds = await s.stop(STOP_WAIT_MS);
    busy.abort();
    return { health: shown, stop: seconds === undefined ? `not within ${STOP_WAIT_MS / 1000} s` : round(seconds, 1) };
  } finally {
    await s.stop(0);
  }
}

/** Another tenant's webhook latency alone and beside a stream of 100 triggers that call a looping view (bench:triggers, scaled). */
async function hostileTriggers(b: Build): Promise<{ aloneMs: number; besideMs: number; ratio: number }> {
  const f = await victimBesideTriggers({
    bin: b.bin,
    transfers: sized(8, 2),
    triggers: DEFAULT_LIMITS.triggers,
    env: b.env({ CHAINPOST_PRIVATE_TARGETS: 'allow' }),
    hostileWaitMs: 2_000,
  });
  return { aloneMs: f['baselineP50Ms']!, besideMs: f['withHostileP50Ms']!, ratio: f['ratioP50']! };
}

/** Tenant B's webhook latency alone and beside tenant A's 540 streams on receivers that never answer (bench:fairness, scaled). */
async function hangingReceivers(b: Build): Promise<{ aloneMs: number; besideMs: number; ratio: number; late: number }> {
  const rig = await fairnessRig();
  try {
    const scale: Scale = { bin: b.bin, hostile: sized(540, 18), queuedEach: 1, windowMs: sized(5_000, 1_000), drainMs: 20_000 };
    const alone = await fairnessRun(rig, `${b.label}: B alone`, 'none', {}, scale);
    const beside = await fairnessRun(rig, `${b.label}: B beside A's hanging receivers`, 'silent', {}, scale);
    return { aloneMs: alone.p50Ms, besideMs: beside.p50Ms, ratio: round(beside.p50Ms / alone.p50Ms), late: beside.late };
  } finally {
    await rig.close();
  }
}

/**
 * A server on loopback following a chain other than the devnet (anvil as chain 1), CHAINPOST_PRIVATE_TARGETS unset:
 * a tenant's webhookUrl on loopback, one on a closed loopback port, and an NFT whose tokenURI is a loopback URL.
 */
async function privateTargets(b: Build): Promise<{ webhook: Value; closedPort: Value; metadata: Value }> {
  const anvil = await startAnvil({ chainId: 1 });
  const internal = await loopbackService('{"name":"Internal"}');
  const receiver = await loopbackService('ok');
  let s: Serving | undefined;
  try {
    // An ERC-721 in twenty-odd bytes of code: a call with no data emits Transfer(0, holder, 1); any other answers the tokenURI.
    const nft = '0x00000000000000000000000000000000000721aa';
    await rpcCall(anvil.url, 'anvil_setCode', [
      nft,
      erc721Code(`${internal.url}/internal/1.json`, '0x70997970c51812dc3a04c01e3f3b1b4fe8b8f0a2'),
    ]);
    await rpcCall(anvil.url, 'eth_sendTransaction', [{ from: '0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266', to: nft }]);
    const head = await blockNumber(anvil.url);
    s = await serve(b, {
      CHAINPOST_CHAINS: `0x1=${anvil.url}`,
      CHAINPOST_START_BLOCKS: '0x1=0',
      CHAINPOST_POLL_MS: '20',
      CHAINPOST_PRIVATE_TARGETS: '',
    });
    const stream = (webhookUrl: string) =>
      s!.call('/streams/evm', {
        method: 'PUT',
        json: { webhookUrl, chainIds: ['0x1'], includeNativeTxs: true, description: 'internal', tag: 'internal' },
      });
    const webhook = await stream(`${receiver.url}/hook`);
    const closed = await stream(`http://127.0.0.1:${await freePort()}/hook`);
    for (let i = 0; i < 200 && ((await s.call('/health')).body.chains?.[0]?.head ?? -1) < head; i++) await sleep(50);
    const resync = await s.call(`/api/v2.2/nft/${nft}/1/metadata/resync?chain=0x1&flag=uri&mode=sync`);
    const status = String(resync.body?.status ?? resync.text);
    return {
      webhook: webhook.status === 200 ? `accepted (${receiver.hits()} POST)` : `refused: ${messageKind(webhook)}`,
      closedPort: messageKind(closed),
      metadata:
        internal.hits() > 0
          ? 'fetched'
          : /CHAINPOST_PRIVATE_TARGETS|loopback address/.test(status)
            ? 'refused: the rule'
            : `not fetched (${status.slice(0, 60)})`,
    };
  } finally {
    await s?.stop();
    internal.server.close();
    receiver.server.close();
    await anvil.stop();
  }
}

/** Runtime code of a minimal ERC-721: a call without data logs Transfer(0, holder, 1); any call with data returns abi.encode(uri). */
function erc721Code(uri: string, holder: string): string {
  const data = encodeAbiParameters([{ type: 'string' }], [uri]).slice(2);
  const len = (data.length / 2).toString(16).padStart(4, '0');
  const transfer = keccak256(toHex('Transfer(address,address,uint256)')).slice(2);
  // 0: CALLDATASIZE ISZERO PUSH1 0x14 JUMPI; 5: CODECOPY(0, 85, len); 14: RETURN(0, len); 20: JUMPDEST LOG4(0, 0, Transfer, 0, holder, 1) STOP; 85: the string.
  const code = `3615601457` + `61${len}6100556000 39` + `61${len}6000f3` + `5b600173${holder.slice(2)}60007f${transfer}60006000a400` + data;
  return `0x${code.replaceAll(' ', '')}`;
}

/** EVM sign-ins through two tenants for one site: does tenant B's token pass the verification tenant A's own token passes? */
async function crossTenantToken(b: Build): Promise<{ passes: Value }> {
  const s = await serve(b, {});
  try {
    const wallet = privateKeyToAccount(generatePrivateKey());
    const signIn = async (key: string): Promise<string> => {
      const req = await s.call('/challenge/request/evm', {
        key,
        json: { domain: 'defi.finance', uri: 'https://defi.finance/login', timeout: 120, chainId: 1, address: wallet.address },
      });
      const ok = await s.call('/challenge/verify/evm', {
        key,
        json: { message: req.body.message, signature: await wallet.signMessage({ message: req.body.message }) },
      });
      if (ok.status !== 201) throw new Error(`sign-in: ${ok.status} ${ok.text}`);
      return ok.body.token as string;
    };
    const a = await signIn(KEY);
    const other = await signIn(await s.tenant('tenant-b'));
    const jwks = createLocalJWKSet((await s.call('/.well-known/jwks.json')).body);
    // A's backend pins what its own tokens carry: the issuer, and the audience where there is one (docs/api.md, Authentication API).
    const mine = decodeJwt(a);
    const pinned = {
      algorithms: ['EdDSA'],
      ...(mine.iss === undefined ? {} : { issuer: mine.iss }),
      ...(typeof mine.aud === 'string' ? { audience: mine.aud } : {}),
    };
    await jwtVerify(a, jwks, pinned);
    return {
      passes: yesNo(
        await jwtVerify(other, jwks, pinned).then(
          () => true,
          () => false,
        ),
      ),
    };
  } finally {
    await s.stop();
  }
}

/** Bytes a directory takes on disk. */
function diskBytes(dir: string): number {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true }) as Dirent[])
    n += e.isDirectory() ? diskBytes(join(dir, e.name)) : statSync(join(dir, e.name)).blocks * 512;
  return n;
}

/** 200 sign-in challenges of about 1 MB each (100 resources of 10,000 characters): how many are taken, and how much the store grows. */
async function oversizedChallenges(b: Build): Promise<{ accepted: number; storeMb: number }> {
  const s = await serve(b, { CHAINPOST_ACCESS_LOG: '0' });
  try {
    const address = privateKeyToAccount(generatePrivateKey()).address;
    const resources = Array.from({ length: 100 }, (_, i) => `https://defi.finance/${i}/${'r'.repeat(10_000)}`);
    const before = diskBytes(s.dir);
    let accepted = 0;
    for (let i = 0; i < CHALLENGES; i++) {
      const r = await s.call('/challenge/request/evm', {
        json: { domain: 'defi.finance', uri: 'https://defi.finance/login', timeout: 12_000, chainId: 1, address, resources },
      });
      if (r.status === 201) accepted++;
    }
    return { accepted, storeMb: round((diskBytes(s.dir) - before) / 2 ** 20, 1) };
  } finally {
    await s.stop();
  }
}

/** One Bitcoin stream filled to 200 xpubs (bench:xpubs, scaled): the add around the 10th and the last, /health p99 during the adds, and one add past the limit. */
async function manyXpubs(b: Build): Promise<{ add10thMs: number; addLastMs: number; healthP99Ms: number; pastLimit: Value }> {
  const run = await measureXpubs(b.bin, XPUBS, b.env({ CHAINPOST_MAX_XPUBS: String(XPUBS) }), true);
  return {
    add10thMs: round(run.addMsAround10th),
    addLastMs: round(run.addMsAround1000th),
    healthP99Ms: round(percentile(run.healthDuringAdds, 0.99)),
    pastLimit: run.oneMoreStatus === 200 ? 'accepted' : `refused (${run.oneMoreStatus})`,
  };
}

/** Node-access URLs that spell the key in ways the access log's mask missed: how many logged request lines hold the key. */
async function keysInAccessLog(b: Build): Promise<{ lines: number; of: number }> {
  const rpcPort = await freePort();
  const s = await serve(b, { CHAINPOST_RPC_PORT: String(rpcPort), CHAINPOST_ACCESS_LOG: '1' });
  try {
    const encoded = [...KEY].map((c) => `%${c.charCodeAt(0).toString(16)}`).join('');
    const paths = [
      `${s.url}/rpc//0x539/${KEY}`,
      `${s.url}/rpc/0x539/${KEY}%20`,
      `${s.url}/rpc/0x539/${KEY}%23x`,
      `${s.url}/rpc/0x539/${KEY}%0a`,
      `${s.url}/rpc/0x539/${encoded}`,
      `http://127.0.0.1:${rpcPort}//0x539/${KEY}`,
      `http://127.0.0.1:${rpcPort}/0x539//${KEY}`,
    ];
    for (const url of paths)
      await (
        await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}',
        })
      ).text();
    const lines = () =>
      s.started
        .output()
        .split('\n')
        .filter((l) => l.includes('"msg":"request"'));
    for (let i = 0; i < 50 && lines().length < paths.length; i++) await sleep(100);
    return { lines: lines().filter((l) => l.includes(KEY.slice(4)) || l.includes(encoded.slice(12))).length, of: paths.length };
  } finally {
    await s.stop();
  }
}

/** With CHAINPOST_TEST_CLOCK=1, a tenant that is not the operator moves the server's clock an hour. */
async function tenantMovesClock(b: Build): Promise<{ status: number }> {
  const s = await serve(b, { CHAINPOST_TEST_CLOCK: '1' });
  try {
    const other = await s.tenant('not-the-operator');
    return {
      status: (await s.call('/admin/clock/advance', { key: other, json: { seconds: 3600 }, headers: { 'x-admin-key': '' } })).status,
    };
  } finally {
    await s.stop();
  }
}

/** A message verified 20 s after its expirationTime (within the 30-s skew allowance): is the token issued expired at issue? */
async function expiredAtIssue(b: Build): Promise<{ expBeforeIat: Value }> {
  const s = await serve(b, { CHAINPOST_TEST_CLOCK: '1', CHAINPOST_NOW: '2026-11-22T12:00:00Z' });
  try {
    const wallet = privateKeyToAccount(generatePrivateKey());
    const now = Date.parse((await s.call('/admin/clock')).body.now);
    const req = await s.call('/challenge/request/evm', {
      json: {
        domain: 'defi.finance',
        uri: 'https://defi.finance/login',
        timeout: 600,
        chainId: 1,
        address: wallet.address,
        expirationTime: new Date(now + 10_000).toISOString(),
      },
    });
    await advance(s, 20);
    const ok = await s.call('/challenge/verify/evm', {
      json: { message: req.body.message, signature: await wallet.signMessage({ message: req.body.message }) },
    });
    if (ok.status !== 201) return { expBeforeIat: `no token (${ok.status})` };
    const { exp, iat } = decodeJwt(ok.body.token as string);
    return { expBeforeIat: yesNo(exp! <= iat!) };
  } finally {
    await s.stop();
  }
}

/** A request with two different Content-Length values: the status it gets. */
async function duplicateContentLength(b: Build): Promise<{ status: Value }> {
  const s = await serve(b, {});
  try {
    const body = JSON.stringify({
      domain: 'defi.finance',
      uri: 'https://defi.finance/login',
      chainId: 1,
      address: privateKeyToAccount(generatePrivateKey()).address,
    });
    const raw = `POST /challenge/request/evm HTTP/1.1\r\nHost: x\r\nx-api-key: ${KEY}\r\ncontent-type: application/json\r\nContent-Length: ${body.length}\r\nContent-Length: ${body.length + 1}\r\nConnection: close\r\n\r\n${body}`;
    const text = await new Promise<string>((resolve) => {
      let got = '';
      const sock = connect(s.started.port, '127.0.0.1', () => sock.write(raw));
      const timer = setTimeout(() => sock.destroy(), 5_000);
      sock.on('data', (d: Buffer) => void (got += d.toString()));
      sock.on('error', () => undefined);
      sock.on('close', () => {
        clearTimeout(timer);
        resolve(got);
      });
    });
    return { status: Number(/^HTTP\/1\.1 (\d+)/.exec(text)?.[1] ?? 0) || 'no answer' };
  } finally {
    await s.stop();
  }
}

/** What /metrics and /health show a tenant (no key but its own): another tenant's stream id, and the user name in a node URL. */
async function operatorPages(b: Build): Promise<{ streamIds: Value; nodeUser: Value }> {
  const receiver = await loopbackService('ok');
  const dead = await freePort();
  const s = await serve(b, {
    CHAINPOST_CHAINS: `0x1=http://nodeuser:nodepass@127.0.0.1:${dead}/v3/provider-key`,
    CHAINPOST_TEST_CLOCK: '1',
    CHAINPOST_PRIVATE_TARGETS: 'allow',
    CHAINPOST_ACCESS_LOG: '0',
  });
  try {
    const made = await s.call('/streams/evm', {
      method: 'PUT',
      json: { webhookUrl: `${receiver.url}/hook`, chainIds: ['0x1'], includeNativeTxs: true, description: 'a', tag: 'a' },
    });
    if (made.status !== 200) throw new Error(`stream: ${made.status} ${made.text}`);
    const id = made.body.id as string;
    await s.call(`/admin/streams/${id}/webhooks`, {
      json: { webhooks: [{ chainId: '0x1', block: { number: '1', hash: '0x', timestamp: '0' } }] },
    });
    for (let i = 0; i < 50 && receiver.hits() < 2; i++) await sleep(100);
    const tenant = await s.tenant('tenant-b');
    const [metrics, health] = await Promise.all([s.call('/metrics', { key: tenant }), s.call('/health', { key: tenant })]);
    return { streamIds: yesNo(metrics.text.includes(id)), nodeUser: yesNo(`${metrics.text}${health.text}`.includes('nodeuser')) };
  } finally {
    await s.stop();
    receiver.server.close();
  }
}

/**
 * A webhookUrl at 168.63.129.16 (a cloud platform's metadata address) with CHAINPOST_PRIVATE_TARGETS=deny: does the
 * server go on to reach it? The server runs with test/kit/loopback-only.mjs preloaded, which refuses (and logs) any
 * connection off loopback, so an attempt is seen and never leaves the machine.
 */
async function metadataAddress(b: Build): Promise<{ reached: Value }> {
  const log = join(mkdtempSync(join(tmpdir(), 'chainpost-bench-attacks-guard-')), 'refused.log');
  const s = await serve(b, { CHAINPOST_PRIVATE_TARGETS: 'deny', LOOPBACK_ONLY_LOG: log }, [
    '--import',
    `${BENCH_DIR}../test/kit/loopback-only.mjs`,
  ]);
  try {
    const r = await s.call('/streams/evm', {
      method: 'PUT',
      json: { webhookUrl: 'http://168.63.129.16/hook', chainIds: ['0x1'], includeNativeTxs: true, description: 'm', tag: 'm' },
    });
    let tried = '';
    try {
      tried = readFileSync(log, 'utf8');
    } catch {
      // No attempt: nothing written.
    }
    return {
      reached: tried.includes('168.63.129.16')
        ? `yes (${r.status}, the connection stopped by the preload)`
        : r.status === 200
          ? 'yes'
          : `no (${r.status}, ${messageKind(r)})`,
    };
  } finally {
    await s.stop();
    rmSync(dirname(log), { recursive: true, force: true });
  }
}

// ————— the table —————

interface FigureDef {
  key: string;
  label: string;
  /** A quantity (ms, blocks, MB, a count): its after ÷ before is shown. */
  ratio?: true;
  /** The promise the "after" figure keeps. */
  goal: string;
  /** Whether `after` keeps it; `same`: the other figures of the attack on the same build. */
  meets: (after: Value, same: Record<string, Value>) => boolean;
}

interface Attack {
  name: string;
  /** The issue's item, briefly. */
  title: string;
  run: (b: Build) => Promise<Record<string, Value>>;
  figures: FigureDef[];
}

const num = (v: Value): number => (typeof v === 'number' ? v : NaN);

const ATTACKS: Attack[] = [
  {
    name: 'looping-call',
    title: 'one node-access call stops the chain',
    run: async (b) => {
      const call = await loopingCall(b, 'eth_call');
      const estimate = await loopingCall(b, 'eth_estimateGas');
      return { callMs: call.answerMs, callBlocks: call.blocks, estimateMs: estimate.answerMs, estimateBlocks: estimate.blocks };
    },
    figures: [
      {
        key: 'callMs',
        ratio: true,
        label: 'eth_call looping, huge gas: answered in (ms, capped at 10 s)',
        goal: '< 5000',
        meets: (v) => num(v) < 5_000,
      },
      {
        key: 'callBlocks',
        ratio: true,
        label: 'eth_call: blocks mined in the 10 s from the call (1 a second)',
        goal: '>= 5',
        meets: (v) => num(v) >= 5,
      },
      {
        key: 'estimateMs',
        ratio: true,
        label: 'eth_estimateGas the same: answered in (ms, capped at 10 s)',
        goal: '< 5000',
        meets: (v) => num(v) < 5_000,
      },
      { key: 'estimateBlocks', ratio: true, label: 'eth_estimateGas: blocks mined in the 10 s', goal: '>= 5', meets: (v) => num(v) >= 5 },
    ],
  },
  {
    name: 'busy-node',
    title: 'a frozen chain on /health; SIGTERM while anvil is busy',
    run: async (b) => busyNode(b),
    figures: [
      {
        key: 'health',
        label: '/health of the devnet frozen by a call for 40 s (service time)',
        goal: 'stalled',
        meets: (v) => v === 'stalled',
      },
      {
        key: 'stop',
        ratio: true,
        label: 'SIGTERM with anvil busy: stopped within (s, waited 15 s)',
        goal: '< 10',
        meets: (v) => num(v) < 10,
      },
    ],
  },
  {
    name: 'triggers',
    title: "a stream's triggers delay every tenant's webhooks",
    run: async (b) => hostileTriggers(b),
    figures: [
      { key: 'aloneMs', ratio: true, label: 'victim webhook p50 alone (ms)', goal: '(baseline)', meets: () => true },
      {
        key: 'besideMs',
        ratio: true,
        label: 'victim webhook p50 beside 100 looping triggers (ms)',
        goal: '(see ratio)',
        meets: () => true,
      },
      { key: 'ratio', label: 'victim p50 beside ÷ alone', goal: '<= 2', meets: (v) => num(v) <= 2 },
    ],
  },
  {
    name: 'fairness',
    title: 'delivery has no per-tenant fairness',
    run: async (b) => hangingReceivers(b),
    figures: [
      { key: 'aloneMs', ratio: true, label: "tenant B's webhook p50 alone (ms)", goal: '(baseline)', meets: () => true },
      {
        key: 'besideMs',
        ratio: true,
        label: "B's p50 beside A's 540 never-answering receivers (ms)",
        goal: '(see ratio)',
        meets: () => true,
      },
      { key: 'ratio', label: "B's p50 beside ÷ alone", goal: '<= 2', meets: (v) => num(v) <= 2 },
      { key: 'late', label: "B's webhooks not arrived 20 s after the window", goal: '= 0', meets: (v) => v === 0 },
    ],
  },
  {
    name: 'private-targets',
    title: 'private targets allowed by default behind a reverse proxy',
    run: async (b) => privateTargets(b),
    figures: [
      {
        key: 'webhook',
        label: 'loopback webhookUrl, server following chain 1',
        goal: 'refused: the rule',
        meets: (v) => v === 'refused: the rule',
      },
      { key: 'closedPort', label: "a closed loopback port's webhookUrl: the 400 says", goal: 'the rule', meets: (v) => v === 'the rule' },
      { key: 'metadata', label: 'loopback tokenURI of an NFT', goal: 'refused: the rule', meets: (v) => v === 'refused: the rule' },
    ],
  },
  {
    name: 'token-tenant',
    title: 'sign-in tokens not bound to their tenant',
    run: async (b) => crossTenantToken(b),
    figures: [
      {
        key: 'passes',
        label: "tenant B's token passes tenant A's verification (issuer, audience pinned)",
        goal: 'no',
        meets: (v) => v === 'no',
      },
    ],
  },
  {
    name: 'challenges',
    title: 'challenges have no size or count bound',
    run: async (b) => oversizedChallenges(b),
    figures: [
      { key: 'accepted', ratio: true, label: `~1 MB challenges accepted, of ${CHALLENGES}`, goal: '= 0', meets: (v) => v === 0 },
      { key: 'storeMb', ratio: true, label: 'store growth (MB)', goal: '< 1', meets: (v) => num(v) < 1 },
    ],
  },
  {
    name: 'xpubs',
    title: 'xpubs unbounded, each add linear on the event loop',
    run: async (b) => manyXpubs(b),
    figures: [
      { key: 'add10thMs', ratio: true, label: 'xpub add around the 10th (ms)', goal: '(baseline)', meets: () => true },
      {
        key: 'addLastMs',
        ratio: true,
        label: `xpub add around the ${XPUBS}th (ms)`,
        goal: '<= 1.5 × the 10th',
        meets: (v, same) => num(v) <= 1.5 * num(same['add10thMs']!),
      },
      { key: 'healthP99Ms', ratio: true, label: '/health p99 during a burst of adds (ms)', goal: '< 20', meets: (v) => num(v) < 20 },
      {
        key: 'pastLimit',
        label: `an add past ${XPUBS} (CHAINPOST_MAX_XPUBS=${XPUBS} where read)`,
        goal: 'refused (400)',
        meets: (v) => v === 'refused (400)',
      },
    ],
  },
  {
    name: 'access-log',
    title: 'API keys in the access log',
    run: async (b) => keysInAccessLog(b),
    figures: [
      { key: 'lines', ratio: true, label: 'access-log lines holding the key, of 7 URL shapes', goal: '= 0', meets: (v) => v === 0 },
    ],
  },
  {
    name: 'test-clock',
    title: 'any tenant moves the test clock',
    run: async (b) => tenantMovesClock(b),
    figures: [{ key: 'status', label: "another tenant's POST /admin/clock/advance: status", goal: '403', meets: (v) => v === 403 }],
  },
  {
    name: 'token-exp',
    title: 'a token with exp before iat',
    run: async (b) => expiredAtIssue(b),
    figures: [
      {
        key: 'expBeforeIat',
        label: 'token for a message verified 20 s past its expirationTime: exp <= iat',
        goal: 'no',
        meets: (v) => v === 'no',
      },
    ],
  },
  {
    name: 'content-length',
    title: 'duplicate Content-Length accepted',
    run: async (b) => duplicateContentLength(b),
    figures: [{ key: 'status', label: 'two different Content-Length values: status', goal: '400', meets: (v) => v === 400 }],
  },
  {
    name: 'metrics',
    title: '/metrics and /health show tenants stream ids and node user names',
    run: async (b) => operatorPages(b),
    figures: [
      { key: 'streamIds', label: "another tenant's stream id on /metrics", goal: 'no', meets: (v) => v === 'no' },
      { key: 'nodeUser', label: "a node URL's user name on /metrics or /health", goal: 'no', meets: (v) => v === 'no' },
    ],
  },
  {
    name: 'metadata-address',
    title: '168.63.129.16 not on the deny list',
    run: async (b) => metadataAddress(b),
    figures: [
      {
        key: 'reached',
        label: 'webhookUrl http://168.63.129.16/ (deny mode): the server goes to reach it',
        goal: 'no',
        meets: (v) => String(v).startsWith('no'),
      },
    ],
  },
];

// ————— main —————

const { values } = parseArgs({ options: { before: { type: 'string' }, only: { type: 'string' } } });
const only = values.only === undefined ? undefined : new Set(values.only.split(','));
const attacks = ATTACKS.filter((a) => only === undefined || only.has(a.name));
const builds = [...(values.before === undefined ? [] : [build('before', values.before)]), build('after', BIN)];
const started = performance.now();
const got = new Map<string, Partial<Record<Build['label'], Record<string, Value>>>>();
/** Attacks run at once: one at full size (each measures a server alone on the machine); two at the smoke size, whose figures are only checked for being there. */
const AT_ONCE = sized(1, 2);
const queue = [...attacks];
async function runAttacks(): Promise<void> {
  for (let a = queue.shift(); a !== undefined; a = queue.shift()) {
    for (const b of builds) {
      const t = performance.now();
      let result: Record<string, Value>;
      const servers = new Set<Serving>();
      try {
        const running = attackServers.run(servers, () => a.run(b));
        running.catch(() => undefined);
        result = await Promise.race([
          running,
          sleep(ATTACK_CAP_MS).then(() => Promise.reject(new Error(`still running after ${ATTACK_CAP_MS / 1000} s`))),
        ]);
      } catch (err) {
        await Promise.all([...servers].map((s) => s.stop(0)));
        // One attack failing to run leaves the others their figures.
        console.log(`${a.name} (${b.label}) failed: ${(err as Error).stack ?? String(err)}`);
        result = Object.fromEntries(a.figures.map((f) => [f.key, 'failed to run']));
      }
      got.set(a.name, { ...got.get(a.name), [b.label]: result });
      console.log(`${a.name} (${b.label}, ${round((performance.now() - t) / 1000, 1)} s): ${JSON.stringify(result)}`);
    }
  }
}
await Promise.all(Array.from({ length: AT_ONCE }, () => runAttacks()));

interface Row {
  before?: Value;
  after: Value;
  ratio?: number;
  goal: string;
  met: boolean;
}
const figures: Record<string, Row> = {};
const goal: Record<string, string> = {};
const table: string[] = ['| attack | figure | before | after | after ÷ before | promise | kept |', '|---|---|---|---|---|---|---|'];
for (const a of attacks) {
  const r = got.get(a.name)!;
  for (const f of a.figures) {
    const after = r.after![f.key]!;
    const before = r.before?.[f.key];
    const ratio = f.ratio && typeof before === 'number' && typeof after === 'number' && before !== 0 ? round(after / before) : undefined;
    const met = f.meets(after, r.after!);
    figures[`${a.name}.${f.key}`] = {
      ...(before === undefined ? {} : { before }),
      after,
      ...(ratio === undefined ? {} : { ratio }),
      goal: f.goal,
      met,
    };
    goal[`${a.name}.${f.key}`] = f.goal;
    table.push(`| ${a.name} | ${f.label} | ${before ?? ''} | ${after} | ${ratio ?? ''} | ${f.goal} | ${met ? 'yes' : '**no**'} |`);
  }
}
const met = Object.values(figures).every((f) => f.met);
console.log(
  `\n${table.join('\n')}\n\n${round((performance.now() - started) / 1000, 1)} s in all; every promise kept: ${met ? 'yes' : 'no'}`,
);
report(
  'attacks',
  values.before === undefined ? 'npm run bench:attacks' : 'npm run bench:attacks -- --before <the build before>/bin/chainpost.js',
  figures,
  goal,
  met,
  [
    'Each attack on a fresh server and data directory per build, as the outside tester ran it but scaled down: 8 transfers alone and 8 beside the hostile stream (triggers), 540 never-answering streams with one webhook each and a 5-s window of B (fairness), 200 xpubs with the limit set to 200 where the build has one (xpubs). A call or stop that hangs is cut at its cap and the node killed. Latencies are from a shared 2-core machine.',
  ],
  table,
);
process.exit(0);
