import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { formatEther } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { indexedTo, startChainpost, stopAndClean, type Running } from './helpers.js';
import { startReceiver } from './receiver.js';

/**
 * README.md's "Using the Moralis SDK" file, run as written: the block marked `<!-- sdk:file:sdk.mjs -->` is
 * saved in a working directory whose node_modules is chainpost's and run with node, its placeholders CHAINPOST,
 * KEY and RECEIVER_PORT set to a real server on the embedded devnet and a real receiver, and
 * bench/loopback-only.mjs preloaded: a connection to any host but 127.0.0.1 throws, so a Streams or Auth call
 * the SDK still sends to its fixed hosted base URLs fails the run. What the file printed is checked against
 * the server.
 */

const README = readFileSync(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8');
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PRELOAD = fileURLToPath(new URL('./kit/loopback-only.mjs', import.meta.url));
const MARKER = '<!-- sdk:file:sdk.mjs -->';
const SNIPPET = new RegExp(`${MARKER}\n\`\`\`js\n([\\s\\S]*?)\n\`\`\`\n`).exec(README)?.[1];
/** The devnet's account (0), which the file signs in with. */
const ACCOUNT0 = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266';

let s: Running;
let rx: Awaited<ReturnType<typeof startReceiver>>;
let work: string;

beforeAll(async () => {
  rx = await startReceiver();
  // The embedded devnet (CHAINPOST_CHAINS unset), as the Quickstart's server has it.
  // In this process: the file under test is the one process of its own ('' is CHAINPOST_CHAINS unset).
  s = await startChainpost({ CHAINPOST_CHAINS: '', CHAINPOST_DEVNET_PORT: '0' });
  // The file asks for the latest block: the devnet has mined a few and the Data API holds them.
  expect(await indexedTo(s, 2)).toBe(true);
  work = mkdtempSync(join(tmpdir(), 'chainpost-sdk-readme-'));
  symlinkSync(join(ROOT, 'node_modules'), join(work, 'node_modules'));
});

afterAll(async () => {
  await stopAndClean(s);
  await rx?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

/** Runs `code` as sdk.mjs with the preload; answers its exit code, its output and the connections refused. */
async function runFile(code: string, name: string): Promise<{ code: number | null; out: string; refused: string }> {
  writeFileSync(join(work, name), code);
  const log = join(work, `${name}.refused`);
  // No proxy variables: axios would connect to the proxy instead, which is not what a plain run does.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/_proxy$/i.test(k)));
  const child = spawn(process.execPath, ['--import', PRELOAD, name], {
    cwd: work,
    env: { ...env, CHAINPOST: s.url, KEY: s.key, RECEIVER_PORT: new URL(rx.url).port, LOOPBACK_ONLY_LOG: log },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (c: Buffer) => void (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => void (out += c.toString()));
  const exit = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code: exit, out, refused: existsSync(log) ? readFileSync(log, 'utf8') : '' };
}

const rpc = async (method: string, params: unknown[]): Promise<any> =>
  (await s.call('/rpc/0x539/' + s.key, { method: 'POST', json: { jsonrpc: '2.0', id: 1, method, params } })).body.result;

describe("README.md's Moralis SDK file (moralis@2.27.2)", () => {
  it('is one marked block that sets evmApiBaseUrl and intercepts the axios moralis loads', () => {
    expect(README.split(MARKER)).toHaveLength(2);
    expect(SNIPPET).toBeDefined();
    expect(SNIPPET).toContain('evmApiBaseUrl');
    expect(SNIPPET!.split('\n').filter((l) => l.includes('axios.interceptors'))).toHaveLength(1);
  });

  it('runs as written against chainpost alone: a stream created and listed, a sign-in, three EvmApi calls, no connection off 127.0.0.1', async () => {
    const run = await runFile(`${SNIPPET!}\n`, 'sdk.mjs');
    expect(run.refused).toBe('');
    expect(run.code, run.out).toBe(0);

    // Streams: the stream is on the server, its test webhook reached the receiver, the list counted it.
    const [, id, listed] = /^stream (\S+), one of (\d+)$/m.exec(run.out) ?? [];
    expect(id, run.out).toBeDefined();
    const stream = await s.call(`/streams/evm/${id}`);
    expect(stream.status).toBe(200);
    expect(stream.body).toMatchObject({ tag: 'sdk', description: 'from the SDK', chainIds: ['0x539'], includeNativeTxs: true });
    expect(Number(listed)).toBe((await s.call('/streams/evm?limit=100')).body.result.length);
    expect(rx.received.some((r) => r.test && r.body.streamId === id)).toBe(true);

    // Auth: the verified challenge made a profile holding the account.
    const [, address, profileId] = /^signed in as (0x[0-9a-fA-F]{40}), profile (\S+)$/m.exec(run.out) ?? [];
    expect(address, run.out).toBe(ACCOUNT0);
    const profile = await s.call(`/profile/${profileId}/addresses`);
    expect(profile.status).toBe(200);
    expect((profile.body as string[]).map((a) => a.toLowerCase())).toEqual([ACCOUNT0.toLowerCase()]);

    // EvmApi: the block and the balance are the devnet's.
    const [, number, hash, ether] = /^block (\d+) (0x[0-9a-f]{64}), balance (\S+) ETH$/m.exec(run.out) ?? [];
    expect(number, run.out).toBeDefined();
    expect(Number(number)).toBeGreaterThanOrEqual(2);
    expect((await rpc('eth_getBlockByNumber', [`0x${Number(number).toString(16)}`, false])).hash).toBe(hash);
    expect(Number(ether)).toBe(Number(formatEther(BigInt(await rpc('eth_getBalance', [ACCOUNT0, 'latest'])))));
  });

  it('without its interceptor line, the same file is stopped at its first Streams call to the hosted service', async () => {
    const without = SNIPPET!
      .split('\n')
      .filter((l) => !l.includes('axios.interceptors'))
      .join('\n');
    const run = await runFile(`${without}\n`, 'sdk-without-interceptor.mjs');
    expect(run.code, run.out).not.toBe(0);
    expect(run.refused).toMatch(/^loopback-only: refused a TLS connection to api\.moralis-streams\.com$/m);
    expect(run.out).toContain('loopback-only: refused');
  });
});
