import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DEVNET_STOP_GRACE_MS } from '../engine/config/config.js';
import { alive, serveDevnet } from './devnet-harness.js';
import { tempDir, until } from './helpers.js';

/**
 * `npm start` with embedded defaults: an anvil devnet from node_modules, followed as chain 0x539, gone when the
 * server stops. The binary: these are its signals (a SIGKILL of it: test/devnet-state.test.ts).
 */
describe('the embedded devnet', () => {
  it('runs anvil as chain 0x539, ingests it, and stops it with the server on SIGINT', async () => {
    // No interval blocks here: the head must be exactly what anvil_mine made.
    const s = await serveDevnet(tempDir(), { CHAINPOST_DEVNET_BLOCK_TIME: '3600' }, 'binary');
    const { devnet } = s;
    try {
      expect(devnet).toMatchObject({ chain: '0x539', rpc: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/) });
      expect(alive(devnet.pid)).toBe(true);
      // A block mined on the devnet shows up in the chain section of /health.
      await fetch(devnet.rpc, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"jsonrpc":"2.0","id":1,"method":"anvil_mine","params":["0x3"]}',
      });
      let chains: Array<{ chain: string; head: number; internalTransactions: boolean }> = [];
      await until(
        async () => {
          chains = (await s.call('/health')).body.chains;
          return (chains[0]?.head ?? -1) >= 3;
        },
        5_000,
        50,
      );
      expect(chains[0]).toMatchObject({ chain: '0x539', head: 3, internalTransactions: true, upstream: 'ok' });
      expect((await s.call('/metrics')).body).toMatch(/^chainpost_chain_head\{chain="0x539"\} 3$/m);
      s.child.kill('SIGINT');
      // The server's own words if it does not exit cleanly (a signal instead of an exit code, say).
      expect(await s.exited, `exit ${String(s.child.signalCode)}:\n${s.output().slice(-4000)}`).toBe(0);
      expect(await until(() => !alive(devnet.pid), 1_000, 20)).toBe(true);
    } finally {
      await s.stop('SIGKILL');
      if (alive(devnet.pid)) process.kill(devnet.pid, 'SIGKILL');
    }
  });

  it('stops on SIGTERM while anvil is busy with a long call: anvil is SIGKILLed after CHAINPOST_DEVNET_STOP_GRACE_MS', {
    timeout: 60_000,
  }, async () => {
    // A short grace and block time: the default grace (5 s, parseConfig's test) would be waited out in real time.
    const graceMs = 500;
    const blockTime = 0.5;
    const s = await serveDevnet(
      tempDir(),
      { CHAINPOST_DEVNET_BLOCK_TIME: String(blockTime), CHAINPOST_DEVNET_STOP_GRACE_MS: String(graceMs) },
      'binary',
    );
    const { pid, rpc } = s.devnet;
    try {
      expect(alive(pid)).toBe(true);
      // Straight to anvil, past node access's gas cap: a loop with a million blocks' gas keeps it busy for minutes.
      const loop =
        '{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"to":"0x00000000000000000000000000000000000100aa","gas":"0xe8d4a51000"},"latest",{"0x00000000000000000000000000000000000100aa":{"code":"0x5b600056"}}]}';
      const busy = fetch(rpc, { method: 'POST', headers: { 'content-type': 'application/json' }, body: loop }).then(
        (r) => r.text(),
        () => 'connection closed',
      );
      // anvil is inside the call once blocks stop coming (one every blockTime otherwise) while it burns a core: blocks
      // can also pause on a loaded machine, when a SIGTERM would find anvil idle (which uses next to no CPU).
      const blockNumber = async () =>
        (
          (await (
            await fetch(rpc, {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}',
            })
          ).json()) as { result: string }
        ).result;
      const cpuSeconds = (): number => {
        const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        return (Number(fields[11]) + Number(fields[12])) / 100;
      };
      const windowMs = blockTime * 2_500;
      const stopped = await until(async () => {
        const before = await blockNumber();
        const cpu = cpuSeconds();
        await new Promise((r) => setTimeout(r, windowMs));
        return (await blockNumber()) === before && cpuSeconds() - cpu >= (windowMs / 1000) * 0.25;
      }, 15_000);
      expect(stopped).toBe(true);
      const started = performance.now();
      s.child.kill('SIGTERM');
      // Bounded: without the SIGKILL the server waits for anvil, which waits for the call.
      const code = await Promise.race([s.exited, new Promise<string>((r) => setTimeout(() => r('still running after 30 s'), 30_000))]);
      const seconds = (performance.now() - started) / 1000;
      // The server's own words if it does not exit cleanly (a signal instead of an exit code, say).
      expect(code, `exit ${String(s.child.signalCode)}:\n${s.output().slice(-2000)}`).toBe(0);
      // It waited for anvil the configured grace, not the default one.
      expect(seconds).toBeGreaterThanOrEqual(graceMs / 1000);
      expect(seconds).toBeLessThan(DEVNET_STOP_GRACE_MS / 1000);
      // Gone with the server (the stop waited for its exit).
      expect(alive(pid)).toBe(false);
      expect(await busy).toBe('connection closed');
    } finally {
      await s.stop('SIGKILL');
      if (alive(pid)) process.kill(pid, 'SIGKILL');
    }
  });
});
