import { cpSync, existsSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { parseEther } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from './kit/free-port.js';
import { DEV_ACCOUNTS, deploy, walletClient } from './contracts.js';
import { alive, answers, hashes, serveDevnet, type Devnet } from './devnet-harness.js';
import { cliInProcess, tempDir, until } from './helpers.js';
import { startReceiver } from './receiver.js';

/**
 * The embedded devnet (CHAINPOST_CHAINS unset): interval mining, its chain kept across restarts, `devnet reset`, its
 * port and accounts. The server runs in this process (a restart stops and starts it over the same data directory,
 * anvil with it), but where the server process is killed: what a SIGKILL leaves is the binary's.
 */

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const newDir = (): string => {
  const dir = tempDir();
  dirs.push(dir);
  return dir;
};

describe('the embedded devnet', () => {
  // One server for the port and the mining tests: neither needs a fresh one. It asks for a port this file holds
  // itself (never the default 8545 here: other tests and engineers share this machine).
  const held: Server = createServer();
  let taken: number;
  let n: Devnet;
  beforeAll(async () => {
    taken = await new Promise<number>((resolve) => held.listen(0, '127.0.0.1', () => resolve((held.address() as { port: number }).port)));
    n = await serveDevnet(newDir(), { CHAINPOST_DEVNET_PORT: String(taken), CHAINPOST_DEVNET_BLOCK_TIME: '2' });
  });
  afterAll(async () => {
    await n?.stop();
    held.close();
  });

  it('listens on CHAINPOST_DEVNET_PORT, or on the next free port when it is taken, and lists its funded accounts', async () => {
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
    // (A free port asked for is the port used: the restart test's first server.)
  });

  it('mines a block every CHAINPOST_DEVNET_BLOCK_TIME with no transaction, and a transaction sent through node access at once', async () => {
    expect(n.devnet).toMatchObject({ blockTime: 2, confirmations: 12 });
    const wallet = await walletClient(n.rpcUrl);
    // Nothing is sent: blocks come from the interval alone (two at least), and the follower ingests them. Waited for
    // as it comes, so the transaction below is sent just after an interval block.
    const head = await n.head();
    expect(await until(async () => (await n.head()) >= Math.max(2, head + 1), 10_000, 20)).toBe(true);
    // The next interval block is 2 s away, so a receipt within 1 s is mixed mining's.
    const hash = await wallet.sendTransaction({ to: DEV_ACCOUNTS[1].address, value: parseEther('1') });
    let receipt: unknown = null;
    expect(await until(async () => (receipt = await n.rpc('eth_getTransactionReceipt', [hash])) !== null, 1_000, 20)).toBe(true);
    expect(receipt).toMatchObject({ status: '0x1' });
  });
});

describe('the embedded devnet', () => {
  it('continues the same chain after a restart, logs still in node access; `devnet reset` (refused while it runs) starts a new one', async () => {
    const dir = newDir();
    const fast = { CHAINPOST_DEVNET_BLOCK_TIME: '0.5' };
    const receiver = await startReceiver();
    // A free port asked for is the port used.
    const free = await freePort();
    const first = await serveDevnet(dir, { ...fast, CHAINPOST_DEVNET_PORT: String(free) });
    let before: string[];
    let logs: unknown[];
    let logBlock: string;
    try {
      expect(first.devnet.port).toBe(free);
      // A stream made before the restart, watching account (1).
      const stream = await first.call('/streams/evm', {
        method: 'PUT',
        json: { webhookUrl: receiver.url, chainIds: ['0x539'], includeNativeTxs: true },
      });
      expect(stream.status).toBe(200);
      expect(
        (await first.call(`/streams/evm/${stream.body.id}/address`, { method: 'POST', json: { address: DEV_ACCOUNTS[1].address } })).status,
      ).toBe(200);
      const token = await deploy(first.rpcUrl, 'TestToken', ['Devnet Token', 'DVT', 18, 1000n]);
      logBlock = `0x${token.receipt.blockNumber.toString(16)}`;
      expect(await until(async () => (await first.head()) >= Number(token.receipt.blockNumber) + 2, 15_000, 50)).toBe(true);
      logs = await first.rpc('eth_getLogs', [{ fromBlock: logBlock, toBlock: logBlock }]);
      expect(logs).toHaveLength(1);
      before = await hashes(first, (await first.head()) - 1);
      // A server running the devnet: reset is refused, naming it.
      const refused = await cliInProcess(['devnet', 'reset'], dir);
      expect(refused.code).toBe(1);
      // The server's lock on the data directory names it (this process: the server runs here).
      expect(refused.stderr).toContain(`is in use by another chainpost server (pid ${first.pid})`);
      // (That it cleared nothing shows below: the restart continues the same chain.)
    } finally {
      expect(await first.stop()).toBe(0);
    }

    const second = await serveDevnet(dir, fast);
    try {
      const was = before.length - 1;
      expect(await until(async () => (await second.head()) > was + 2, 15_000, 50)).toBe(true);
      expect(await hashes(second, was)).toEqual(before);
      // The same logs, answered from the blocks ingested before the restart.
      expect(await second.rpc('eth_getLogs', [{ fromBlock: logBlock, toBlock: logBlock }])).toEqual(logs);
      const metrics = (await second.call('/metrics')).body as string;
      expect(metrics).toMatch(/chainpost_rpc_calls_total\{chain="0x539",method="eth_getLogs",served="store"\} 1/);
      expect(second.output()).not.toContain('"msg":"reorg"');
      // The stream goes on: a transfer to its address after the restart is delivered.
      const hash = await (await walletClient(second.rpcUrl)).sendTransaction({ to: DEV_ACCOUNTS[1].address, value: 1n });
      expect(
        await until(() => receiver.webhooks().some((w) => w.body.txs.some((t: { hash: string }) => t.hash === hash)), 10_000, 50),
        second.output().slice(-2000),
      ).toBe(true);
    } finally {
      expect(await second.stop()).toBe(0);
      await receiver.close();
    }

    const reset = await cliInProcess(['devnet', 'reset'], dir);
    expect(reset.code, reset.stderr).toBe(0);
    // The token's transfer is its log's row (contractLogs): the follower writes `transfers` rows for NFTs alone.
    expect(reset.stdout).toMatch(
      /cleared chain 0x539 from .*: \d+ rows \(chainState 1, blocks \d+, probes \d+, canon \d+, blockHashes \d+, .*contractLogs \d+/,
    );
    expect(reset.stdout).toContain(`deleted the devnet state ${second.devnet.state}`);
    expect(existsSync(second.devnet.state)).toBe(false);

    const third = await serveDevnet(dir, { CHAINPOST_DEVNET_BLOCK_TIME: '3600' });
    try {
      // A new chain: its genesis differs (a new timestamp) and the follower starts from it with no reorg.
      expect(await third.rpc('eth_blockNumber')).toBe('0x0');
      expect(await until(async () => (await third.head()) === 0, 10_000, 50)).toBe(true);
      expect((await hashes(third, 0))[0]).not.toBe(before[0]);
      expect(await third.rpc('eth_getLogs', [{ fromBlock: '0x0', toBlock: 'latest' }])).toEqual([]);
      expect(third.output()).not.toContain('"msg":"reorg"');
    } finally {
      await third.stop();
    }
  }, 90_000);

  it('saves its state every CHAINPOST_DEVNET_SAVE_INTERVAL s while running: after a SIGKILL of the server anvil is gone with it, the chain continues from the last save, and reset ignores the dead server', async () => {
    const dir = newDir();
    // The binary: what a SIGKILL of the server leaves. Saved every second: the default 5 s (parseConfig's test) would be waited out in real time.
    const first = await serveDevnet(dir, { CHAINPOST_DEVNET_BLOCK_TIME: '0.5', CHAINPOST_DEVNET_SAVE_INTERVAL: '1' }, 'binary');
    const pid = first.devnet.pid;
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
      expect(alive(pid)).toBe(true);
      // anvil is told the interval (its own --state-interval does the saving).
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      expect(argv[argv.indexOf('--state-interval') + 1]).toBe('1');
      // No clean stop writes the file here: only the periodic save.
      expect(await until(() => (savedUpTo() ?? 0) >= 2, 15_000, 100)).toBe(true);
      saved = await hashes(first, savedUpTo()!);
      // No exit handler runs on SIGKILL: only the kernel can take anvil down with the server.
      first.child.kill('SIGKILL');
      await first.exited;
      expect(await until(() => !alive(pid), 2_000, 20)).toBe(true);
      expect(await answers(first.devnet.rpc)).toBe(false);
    } finally {
      await first.stop('SIGKILL');
      // Do not leave an orphan behind if an assertion failed.
      if (alive(pid)) process.kill(pid, 'SIGKILL');
    }
    // What the killed server left, copied as it is (its stale lock with it) for reset below: the restart takes the
    // original's lock over.
    const copy = newDir();
    cpSync(dir, copy, { recursive: true });
    const second = await serveDevnet(dir, { CHAINPOST_DEVNET_BLOCK_TIME: '3600' });
    try {
      // What was saved is the same chain; blocks mined after the save may be mined again (the follower's reorg).
      expect(await hashes(second, saved.length - 1)).toEqual(saved);
      expect(await until(async () => (await second.head()) >= saved.length - 1, 10_000, 50)).toBe(true);
    } finally {
      await second.stop();
    }
    // The killed server's lock is stale (its process is gone), so reset goes ahead.
    const reset = await cliInProcess(['devnet', 'reset'], copy);
    expect(reset.code, reset.stderr).toBe(0);
    expect(reset.stdout).toContain(`deleted the devnet state ${join(copy, 'devnet', 'state.json')}`);
    expect(existsSync(join(copy, 'devnet', 'state.json'))).toBe(false);
  }, 60_000);

  it('`devnet reset` refuses a directory with no store and creates none; `devnet` without `reset` is a usage error', async () => {
    const dir = newDir();
    const [reset, wrong] = await Promise.all([cliInProcess(['devnet', 'reset'], dir), cliInProcess(['devnet', 'restart'], dir)]);
    expect(reset.code).toBe(1);
    expect(reset.stderr).toContain('CHAINPOST_DATA');
    expect(existsSync(`${dir}/data.mdb`)).toBe(false);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain('unknown devnet command "restart"');
  });
});
