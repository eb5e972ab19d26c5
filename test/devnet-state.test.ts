import { existsSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { parseEther } from 'viem';
import { afterAll, describe, expect, it } from 'vitest';
import { startProcess, type Started } from './kit/proc.js';
import { freePort } from '../http/clients/anvil.js';
import { DEV_ACCOUNTS, deploy, walletClient } from './contracts.js';
import { BIN, cli, tempDir, until } from './helpers.js';
import { startReceiver } from './receiver.js';

/** The embedded devnet (CHAINPOST_CHAINS unset): interval mining, its chain kept across restarts, `devnet reset`, its port and accounts. */

const KEY = 'cpk_devnet_state_key_0123456789';
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

interface Node extends Started {
  /** Node access through chainpost for the devnet. */
  rpcUrl: string;
  devnet: { port: number; rpc: string; pid: number; accounts: string[]; blockTime: number; confirmations: number; state: string };
  rpc(method: string, params?: unknown[]): Promise<any>;
  head(): Promise<number>;
}

async function serve(dir: string, env: Record<string, string> = {}): Promise<Node> {
  const s = await startProcess([BIN, 'serve'], {
    CHAINPOST_DATA: dir,
    CHAINPOST_PORT: '0',
    CHAINPOST_API_KEY: KEY,
    CHAINPOST_CHAINS: undefined,
    CHAINPOST_POLL_MS: '50',
    CHAINPOST_DEVNET_PORT: '0',
    ...env,
  });
  const devnet = JSON.parse(
    s
      .output()
      .split('\n')
      .find((l) => l.includes('"msg":"devnet"'))!,
  );
  const rpcUrl = `http://127.0.0.1:${s.port}/rpc/0x539/${KEY}`;
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
    const { chains } = (await (await fetch(`http://127.0.0.1:${s.port}/health`)).json()) as { chains: Array<{ head: number }> };
    return chains[0]?.head ?? -1;
  };
  return { ...s, rpcUrl, devnet, rpc, head };
}

const hashes = async (n: Node, to: number): Promise<string[]> =>
  Promise.all(
    Array.from(
      { length: to + 1 },
      async (_, i) => ((await n.rpc('eth_getBlockByNumber', [`0x${i.toString(16)}`, false])) as { hash: string }).hash,
    ),
  );

describe('the embedded devnet', () => {
  it('mines a block every CHAINPOST_DEVNET_BLOCK_TIME with no transaction, and a transaction sent through node access at once', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const n = await serve(dir, { CHAINPOST_DEVNET_BLOCK_TIME: '2' });
    try {
      expect(n.devnet).toMatchObject({ blockTime: 2, confirmations: 12 });
      // Nothing is sent: blocks come from the interval alone, and the follower ingests them.
      expect(await until(async () => (await n.head()) >= 2, 10_000, 100)).toBe(true);
      const wallet = await walletClient(n.rpcUrl);
      // Sent just after an interval block: the next one is 2 s away, so a receipt within 1 s is mixed mining's.
      const head = await n.head();
      expect(await until(async () => (await n.head()) > head, 5_000, 20)).toBe(true);
      const hash = await wallet.sendTransaction({ to: DEV_ACCOUNTS[1].address, value: parseEther('1') });
      let receipt: unknown = null;
      expect(await until(async () => (receipt = await n.rpc('eth_getTransactionReceipt', [hash])) !== null, 1_000, 20)).toBe(true);
      expect(receipt).toMatchObject({ status: '0x1' });
    } finally {
      await n.stop('SIGKILL');
    }
  }, 60_000);

  it('continues the same chain after a restart, logs still in node access; `devnet reset` (refused while it runs) starts a new one', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const fast = { CHAINPOST_DEVNET_BLOCK_TIME: '0.5' };
    const receiver = await startReceiver();
    const first = await serve(dir, fast);
    let before: string[];
    let logs: unknown[];
    let logBlock: string;
    try {
      // A stream made before the restart, watching account (1).
      const call = (path: string, method: string, body: unknown) =>
        fetch(`http://127.0.0.1:${first.port}${path}`, {
          method,
          headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
      const stream = await call('/streams/evm', 'PUT', { webhookUrl: receiver.url, chainIds: ['0x539'], includeNativeTxs: true });
      expect(stream.status).toBe(200);
      expect((await call(`/streams/evm/${stream.body.id}/address`, 'POST', { address: DEV_ACCOUNTS[1].address })).status).toBe(200);
      const token = await deploy(first.rpcUrl, 'TestToken', ['Devnet Token', 'DVT', 18, 1000n]);
      logBlock = `0x${token.receipt.blockNumber.toString(16)}`;
      expect(await until(async () => (await first.head()) >= Number(token.receipt.blockNumber) + 2, 15_000, 50)).toBe(true);
      logs = await first.rpc('eth_getLogs', [{ fromBlock: logBlock, toBlock: logBlock }]);
      expect(logs).toHaveLength(1);
      before = await hashes(first, (await first.head()) - 1);
      // A server running the devnet: reset is refused, naming it.
      const refused = await cli(['devnet', 'reset'], dir);
      expect(refused.code).toBe(1);
      // The server's lock on the data directory names it.
      expect(refused.stderr).toContain(`is in use by another chainpost server (pid ${first.child.pid})`);
      // (That it cleared nothing shows below: the restart continues the same chain.)
    } finally {
      expect(await first.stop('SIGTERM')).toBe(0);
    }

    const second = await serve(dir, fast);
    try {
      const was = before.length - 1;
      expect(await until(async () => (await second.head()) > was + 2, 15_000, 50)).toBe(true);
      expect(await hashes(second, was)).toEqual(before);
      // The same logs, answered from the blocks ingested before the restart.
      expect(await second.rpc('eth_getLogs', [{ fromBlock: logBlock, toBlock: logBlock }])).toEqual(logs);
      const metrics = await (await fetch(`http://127.0.0.1:${second.port}/metrics`)).text();
      expect(metrics).toMatch(/chainpost_rpc_calls_total\{chain="0x539",method="eth_getLogs",served="store"\} 1/);
      expect(second.output()).not.toContain('"msg":"reorg"');
      // The stream goes on: a transfer to its address after the restart is delivered.
      const hash = await (await walletClient(second.rpcUrl)).sendTransaction({ to: DEV_ACCOUNTS[1].address, value: 1n });
      expect(
        await until(() => receiver.webhooks().some((w) => w.body.txs.some((t: { hash: string }) => t.hash === hash)), 10_000, 50),
        second.output().slice(-2000),
      ).toBe(true);
    } finally {
      expect(await second.stop('SIGTERM')).toBe(0);
      await receiver.close();
    }

    const reset = await cli(['devnet', 'reset'], dir);
    expect(reset.code, reset.stderr).toBe(0);
    // The token's transfer is its log's row (contractLogs): the follower writes `transfers` rows for NFTs alone.
    expect(reset.stdout).toMatch(
      /cleared chain 0x539 from .*: \d+ rows \(chainState 1, blocks \d+, probes \d+, canon \d+, blockHashes \d+, .*contractLogs \d+/,
    );
    expect(reset.stdout).toContain(`deleted the devnet state ${second.devnet.state}`);
    expect(existsSync(second.devnet.state)).toBe(false);

    const third = await serve(dir, { CHAINPOST_DEVNET_BLOCK_TIME: '3600' });
    try {
      // A new chain: its genesis differs (a new timestamp) and the follower starts from it with no reorg.
      expect(await third.rpc('eth_blockNumber')).toBe('0x0');
      expect(await until(async () => (await third.head()) === 0, 10_000, 50)).toBe(true);
      expect((await hashes(third, 0))[0]).not.toBe(before[0]);
      expect(await third.rpc('eth_getLogs', [{ fromBlock: '0x0', toBlock: 'latest' }])).toEqual([]);
      expect(third.output()).not.toContain('"msg":"reorg"');
    } finally {
      await third.stop('SIGKILL');
    }
  }, 90_000);

  it('saves its state every CHAINPOST_DEVNET_SAVE_INTERVAL s while running: after a SIGKILL the chain continues from the last save, and reset ignores the dead server', async () => {
    const dir = tempDir();
    dirs.push(dir);
    // Saved every second: the default 5 s (parseConfig's test) would be waited out in real time.
    const first = await serve(dir, { CHAINPOST_DEVNET_BLOCK_TIME: '0.5', CHAINPOST_DEVNET_SAVE_INTERVAL: '1' });
    /** The last block in anvil's state file (undefined while it is missing or being written). */
    const savedUpTo = (): number | undefined => {
      try {
        return (JSON.parse(readFileSync(first.devnet.state, 'utf8')) as { best_block_number: number }).best_block_number;
      } catch {
        return undefined;
      }
    };
    let saved: string[];
    try {
      // anvil is told the interval (its own --state-interval does the saving).
      const argv = readFileSync(`/proc/${first.devnet.pid}/cmdline`, 'utf8').split('\0');
      expect(argv[argv.indexOf('--state-interval') + 1]).toBe('1');
      // No clean stop writes the file here: only the periodic save (anvil dies with the server, by the kernel).
      expect(await until(() => (savedUpTo() ?? 0) >= 2, 15_000, 100)).toBe(true);
      saved = await hashes(first, savedUpTo()!);
    } finally {
      await first.stop('SIGKILL');
    }
    const second = await serve(dir, { CHAINPOST_DEVNET_BLOCK_TIME: '3600' });
    try {
      // What was saved is the same chain; blocks mined after the save may be mined again (the follower's reorg).
      expect(await hashes(second, saved.length - 1)).toEqual(saved);
      expect(await until(async () => (await second.head()) >= saved.length - 1, 10_000, 50)).toBe(true);
    } finally {
      await second.stop('SIGKILL');
    }
    // The killed server's lock is stale (its process is gone), so reset goes ahead.
    const reset = await cli(['devnet', 'reset'], dir);
    expect(reset.code, reset.stderr).toBe(0);
    expect(existsSync(second.devnet.state)).toBe(false);
  }, 60_000);

  it('`devnet reset` refuses a directory with no store and creates none; `devnet` without `reset` is a usage error', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const reset = await cli(['devnet', 'reset'], dir);
    expect(reset.code).toBe(1);
    expect(reset.stderr).toContain('CHAINPOST_DATA');
    expect(existsSync(`${dir}/data.mdb`)).toBe(false);
    const wrong = await cli(['devnet', 'restart'], dir);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain('unknown devnet command "restart"');
  });

  it('listens on CHAINPOST_DEVNET_PORT, or on the next free port when it is taken, and lists its funded accounts', async () => {
    // Never the default 8545 here (other tests and engineers share this machine): a port this test holds itself.
    const held: Server = createServer();
    const taken = await new Promise<number>((resolve) =>
      held.listen(0, '127.0.0.1', () => resolve((held.address() as { port: number }).port)),
    );
    const dir = tempDir();
    dirs.push(dir);
    try {
      const n = await serve(dir, { CHAINPOST_DEVNET_PORT: String(taken), CHAINPOST_DEVNET_BLOCK_TIME: '3600' });
      try {
        expect(n.devnet.port).toBeGreaterThan(taken);
        expect(n.devnet.port).toBeLessThan(taken + 100);
        expect(n.devnet.rpc).toBe(`http://127.0.0.1:${n.devnet.port}`);
        expect(n.output()).toContain(`devnet 0x539 (chain id 1337) at http://127.0.0.1:${n.devnet.port}`);
        // The banner (stderr) and the log line list anvil's funded accounts; the banner with their keys.
        expect(n.devnet.accounts).toHaveLength(10);
        expect(n.devnet.accounts[0]).toBe(DEV_ACCOUNTS[0].address);
        expect(n.output()).toContain(`(0) ${DEV_ACCOUNTS[0].address}  0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80`);
        expect(n.output()).toContain(`(1) ${DEV_ACCOUNTS[1].address}  0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d`);
        const balance = await n.rpc('eth_getBalance', [DEV_ACCOUNTS[2].address, 'latest']);
        expect(BigInt(balance)).toBe(parseEther('10000'));
      } finally {
        await n.stop('SIGKILL');
      }
      // A free port asked for is the port used.
      const free = await freePort();
      const m = await serve(tempDir(), { CHAINPOST_DEVNET_PORT: String(free), CHAINPOST_DEVNET_BLOCK_TIME: '3600' });
      dirs.push(m.devnet.state.replace(/\/devnet\/state\.json$/, ''));
      try {
        expect(m.devnet.port).toBe(free);
      } finally {
        await m.stop('SIGKILL');
      }
    } finally {
      held.close();
    }
  }, 60_000);
});
