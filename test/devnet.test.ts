import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { startProcess } from './kit/proc.js';
import { BIN, tempDir, until } from './helpers.js';
import { DEVNET_STOP_GRACE_MS } from '../engine/config/config.js';

/** Whether pid is a live process: a zombie (dead, not yet reaped by init, which here reaps orphans only about once a second) counts as gone. */
const alive = (pid: number): boolean => {
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

/** `npm start` with embedded defaults: an anvil devnet from node_modules, followed as chain 0x539, gone when the server stops. */
describe('the embedded devnet', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)('runs anvil as chain 0x539, ingests it, and stops it with the server on %s', async (signal) => {
    // No interval blocks here: the head must be exactly what anvil_mine made.
    const s = await startProcess([BIN, 'serve'], {
      CHAINPOST_DATA: tempDir(),
      CHAINPOST_PORT: '0',
      CHAINPOST_API_KEY: 'cpk_devnet_test_key_0123456789',
      CHAINPOST_CHAINS: undefined,
      CHAINPOST_POLL_MS: '50',
      CHAINPOST_DEVNET_PORT: '0',
      CHAINPOST_DEVNET_BLOCK_TIME: '3600',
    });
    try {
      const devnet = JSON.parse(
        s
          .output()
          .split('\n')
          .find((l) => l.includes('"msg":"devnet"'))!,
      );
      expect(devnet).toMatchObject({ chain: '0x539', rpc: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/) });
      expect(alive(devnet.pid)).toBe(true);
      // A block mined on the devnet shows up in the chain section of /health.
      await fetch(devnet.rpc, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"jsonrpc":"2.0","id":1,"method":"anvil_mine","params":["0x3"]}',
      });
      let chains: Array<{ chain: string; head: number; internalTransactions: boolean }> = [];
      for (let i = 0; i < 100 && (chains[0]?.head ?? -1) < 3; i++) {
        chains = ((await (await fetch(`http://127.0.0.1:${s.port}/health`)).json()) as { chains: typeof chains }).chains;
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(chains[0]).toMatchObject({ chain: '0x539', head: 3, internalTransactions: true, upstream: 'ok' });
      const metrics = await (await fetch(`http://127.0.0.1:${s.port}/metrics`)).text();
      expect(metrics).toMatch(/^chainpost_chain_head\{chain="0x539"\} 3$/m);
      s.child.kill(signal);
      // The server's own words if it does not exit cleanly (a signal instead of an exit code, say).
      expect(await s.exited, `exit ${String(s.child.signalCode)}:\n${s.output().slice(-4000)}`).toBe(0);
      for (let i = 0; i < 50 && alive(devnet.pid); i++) await new Promise((r) => setTimeout(r, 20));
      expect(alive(devnet.pid)).toBe(false);
    } finally {
      await s.stop('SIGKILL');
    }
  });

  it('stops on SIGTERM while anvil is busy with a long call: anvil is SIGKILLed after CHAINPOST_DEVNET_STOP_GRACE_MS', {
    timeout: 60_000,
  }, async () => {
    // A short grace and block time: the default grace (5 s, parseConfig's test) would be waited out in real time.
    const graceMs = 500;
    const blockTime = 0.5;
    const s = await startProcess([BIN, 'serve'], {
      CHAINPOST_DATA: tempDir(),
      CHAINPOST_PORT: '0',
      CHAINPOST_API_KEY: 'cpk_devnet_test_key_0123456789',
      CHAINPOST_CHAINS: undefined,
      CHAINPOST_POLL_MS: '50',
      CHAINPOST_DEVNET_PORT: '0',
      CHAINPOST_DEVNET_BLOCK_TIME: String(blockTime),
      CHAINPOST_DEVNET_STOP_GRACE_MS: String(graceMs),
    });
    let pid: number | undefined;
    try {
      const devnet = JSON.parse(
        s
          .output()
          .split('\n')
          .find((l) => l.includes('"msg":"devnet"'))!,
      );
      pid = devnet.pid as number;
      // Straight to anvil, past node access's gas cap: a loop with a million blocks' gas keeps it busy for minutes.
      const loop =
        '{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"to":"0x00000000000000000000000000000000000100aa","gas":"0xe8d4a51000"},"latest",{"0x00000000000000000000000000000000000100aa":{"code":"0x5b600056"}}]}';
      const busy = fetch(devnet.rpc, { method: 'POST', headers: { 'content-type': 'application/json' }, body: loop }).then(
        (r) => r.text(),
        () => 'connection closed',
      );
      // anvil is inside the call once blocks stop coming (one every blockTime otherwise).
      const blockNumber = async () =>
        (
          (await (
            await fetch(devnet.rpc, {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}',
            })
          ).json()) as { result: string }
        ).result;
      const stopped = await until(async () => {
        const before = await blockNumber();
        await new Promise((r) => setTimeout(r, blockTime * 2_500));
        return (await blockNumber()) === before;
      }, 15_000);
      expect(stopped).toBe(true);
      const started = performance.now();
      s.child.kill('SIGTERM');
      // Bounded: without the SIGKILL the server waits for anvil, which waits for the call.
      const code = await Promise.race([s.exited, new Promise<string>((r) => setTimeout(() => r('still running after 30 s'), 30_000))]);
      const seconds = (performance.now() - started) / 1000;
      expect(code, s.output().slice(-2000)).toBe(0);
      // It waited for anvil the configured grace, not the default one.
      expect(seconds).toBeGreaterThanOrEqual(graceMs / 1000);
      expect(seconds).toBeLessThan(DEVNET_STOP_GRACE_MS / 1000);
      expect(alive(pid)).toBe(false);
      expect(await busy).toBe('connection closed');
    } finally {
      await s.stop('SIGKILL');
      if (pid !== undefined && alive(pid)) process.kill(pid, 'SIGKILL');
    }
  });

  it('does not orphan anvil when the server is killed with SIGKILL', async () => {
    const s = await startProcess([BIN, 'serve'], {
      CHAINPOST_DATA: tempDir(),
      CHAINPOST_PORT: '0',
      CHAINPOST_API_KEY: 'cpk_devnet_test_key_0123456789',
      CHAINPOST_CHAINS: undefined,
      CHAINPOST_POLL_MS: '50',
      CHAINPOST_DEVNET_PORT: '0',
    });
    let pid: number | undefined;
    try {
      const devnet = JSON.parse(
        s
          .output()
          .split('\n')
          .find((l) => l.includes('"msg":"devnet"'))!,
      );
      pid = devnet.pid as number;
      expect(alive(pid)).toBe(true);
      // No exit handler runs on SIGKILL: only the kernel can take anvil down with the server.
      s.child.kill('SIGKILL');
      await s.exited;
      for (let i = 0; i < 100 && alive(pid); i++) await new Promise((r) => setTimeout(r, 20));
      expect(alive(pid)).toBe(false);
      const answered = await fetch(devnet.rpc, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}',
        signal: AbortSignal.timeout(1_000),
      }).then(
        () => true,
        () => false,
      );
      expect(answered).toBe(false);
    } finally {
      await s.stop('SIGKILL');
      // Do not leave an orphan behind if the assertion failed.
      if (pid !== undefined && alive(pid)) process.kill(pid, 'SIGKILL');
    }
  });
});
