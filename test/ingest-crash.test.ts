import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blockKey } from '../engine/ingest/chain-store.js';
import { startAnvil, type Anvil } from '../http/clients/anvil.js';
import { jsonRpcUpstream } from '../http/clients/rpc.js';
import { openStore, type Store } from '../storage/env.js';
import { tempDir, until } from './helpers.js';

/**
 * A follower in its own process, killed with SIGKILL in the middle of catching
 * up, then started again on the same store. Its listener writes each event into
 * the store inside the transaction that records it, as the matcher enqueues
 * webhooks: after the restart every block is seen once and confirmed once, with
 * no gap and no repeat.
 */
const CHILD = `
import { ServiceClock } from './dist/engine/clock.js';
import { EvmFollower } from './dist/engine/evm/follower.js';
import { jsonLogger } from './dist/engine/log.js';
import { systemTicker } from './dist/app/process.js';
import { jsonRpcUpstream } from './dist/http/clients/rpc.js';
import { openStore } from './dist/storage/env.js';
import { workerPool } from './dist/app/worker-pool.js';
const [dir, url] = process.argv.slice(1);
const store = openStore(dir);
const journal = (e) => store.put('meta', 'journal/' + e, (store.get('meta', 'journal/' + e) ?? 0) + 1);
const events = { seen: (_c, n) => journal('seen/' + n), confirmed: (_c, n) => journal('confirmed/' + n), reorged: (_c, a, b) => journal('reorg/' + a + '-' + b) };
const clock = new ServiceClock(systemTicker, Date.now());
const f = new EvmFollower('0x539', jsonRpcUpstream(url), store, clock, events, jsonLogger(() => {}, () => clock.now(), 'error'), { confirmations: 2, pollMs: 20, pool: workerPool(dir, 1).ingest });
f.start();
`;

describe('a follower killed with SIGKILL', () => {
  let anvil: Anvil;
  let store: Store;
  let child: ChildProcess | undefined;
  const dir = tempDir();
  const run = (): ChildProcess =>
    spawn(process.execPath, ['--input-type=module', '-e', CHILD, dir, anvil.url], {
      cwd: new URL('..', import.meta.url),
      stdio: ['ignore', 'ignore', 'inherit'],
    });
  const head = (): number => store.get<{ head: number }>('chainState', '0x539')?.head ?? -1;
  const kill = async (c: ChildProcess): Promise<void> => {
    if (c.exitCode !== null || c.signalCode !== null) return;
    const gone = new Promise((r) => c.once('exit', r));
    c.kill('SIGKILL');
    await gone;
  };

  beforeAll(async () => {
    anvil = await startAnvil();
    store = openStore(dir);
  });
  afterAll(async () => {
    if (child !== undefined) await kill(child);
    await anvil.stop();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('resumes with no gap and no repeated event', async () => {
    const TOP = 160;
    const rpc = jsonRpcUpstream(anvil.url);
    await rpc.call('anvil_mine', [`0x${TOP.toString(16)}`]);
    await rpc.close();
    child = run();
    await until(() => head() >= TOP / 4, 30_000, 5);
    await kill(child);
    const killedAt = head();
    expect(killedAt).toBeGreaterThanOrEqual(TOP / 4);
    expect(killedAt).toBeLessThan(TOP);

    child = run();
    await until(() => head() === TOP && store.get<{ confirmed: number }>('chainState', '0x539')?.confirmed === TOP - 2, 60_000);
    await kill(child);
    const journal = new Map(
      store.range<number>('meta', { start: 'journal/', end: 'journal0' }).map((e) => [e.key.slice('journal/'.length), e.value]),
    );
    const expected = new Map<string, number>();
    for (let n = 0; n <= TOP; n++) expected.set(`seen/${n}`, 1);
    for (let n = 0; n <= TOP - 2; n++) expected.set(`confirmed/${n}`, 1);
    expect(journal).toEqual(expected);
    for (let n = 0; n <= TOP; n++) expect(store.has('blocks', blockKey('0x539', n))).toBe(true);
  }, 120_000);
});
