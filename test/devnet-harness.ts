import { readFileSync } from 'node:fs';
import { startBinary, startChainpost, type Running, type RunningBinary } from './helpers.js';

/** A server on the embedded devnet (CHAINPOST_CHAINS unset): test/devnet.test.ts and test/devnet-state.test.ts. */

export const DEVNET_KEY = 'cpk_devnet_state_key_0123456789';

export interface Devnet extends Running {
  /** Node access through chainpost for the devnet. */
  rpcUrl: string;
  /** The server's `devnet` log line. */
  devnet: {
    chain: string;
    port: number;
    rpc: string;
    pid: number;
    accounts: string[];
    blockTime: number;
    confirmations: number;
    state: string;
  };
  rpc(method: string, params?: unknown[]): Promise<any>;
  /** The follower's head of the devnet's chain (/health). */
  head(): Promise<number>;
}

/** A server on the embedded devnet over `dir`: in this process, or the built binary where the test signals or kills it. */
export async function serveDevnet(dir: string, env: Record<string, string>): Promise<Devnet>;
export async function serveDevnet(dir: string, env: Record<string, string>, binary: 'binary'): Promise<Devnet & RunningBinary>;
export async function serveDevnet(dir: string, env: Record<string, string>, binary?: 'binary'): Promise<Devnet> {
  // '' is unset to the configuration: the embedded devnet.
  const given = { CHAINPOST_CHAINS: '', CHAINPOST_API_KEY: DEVNET_KEY, CHAINPOST_POLL_MS: '50', CHAINPOST_DEVNET_PORT: '0', ...env };
  const s = binary === undefined ? await startChainpost(given, dir) : await startBinary(given, dir);
  const devnet = JSON.parse(
    s
      .output()
      .split('\n')
      .find((l) => l.includes('"msg":"devnet"'))!,
  );
  const rpcUrl = `${s.url}/rpc/0x539/${DEVNET_KEY}`;
  const rpc = async (method: string, params: unknown[] = []): Promise<any> => {
    const res = (await (
      await fetch(rpcUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
      })
    ).json()) as { result?: unknown; error?: unknown };
    if (res.error !== undefined) throw new Error(`${method}: ${JSON.stringify(res.error)}`);
    return res.result;
  };
  const head = async (): Promise<number> => {
    const { chains } = (await (await fetch(`${s.url}/health`)).json()) as { chains: Array<{ head: number }> };
    return chains[0]?.head ?? -1;
  };
  return Object.assign(s, { rpcUrl, devnet, rpc, head });
}

/** The hashes of blocks 0 to `to`, through node access. */
export const hashes = async (n: Devnet, to: number): Promise<string[]> =>
  Promise.all(
    Array.from(
      { length: to + 1 },
      async (_, i) => ((await n.rpc('eth_getBlockByNumber', [`0x${i.toString(16)}`, false])) as { hash: string }).hash,
    ),
  );

/** Whether pid is a live process: a zombie (dead, not yet reaped by init, which here reaps orphans only about once a second) counts as gone. */
export const alive = (pid: number): boolean => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !['Z', 'X'].includes(stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3));
  } catch {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  }
};

/** Whether anything answers a JSON-RPC call at `url` within a second. */
export const answers = (url: string): Promise<boolean> =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}',
    signal: AbortSignal.timeout(1_000),
  }).then(
    () => true,
    () => false,
  );
