import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../../helpers.js';

/**
 * Two opens of one data directory in one process, a synchronous write through one while asynchronous transactions
 * of the other are under way (storage/README.md, One environment per process). Run in a child process with a time
 * limit: when they deadlock, the process never moves again, and a test in this process would hang with it.
 */
const SCENE = `
const { openStore } = await import(process.env.ENV_MODULE);
const [dir, rounds] = [process.env.DIR, 200];
const a = openStore(dir);
const b = openStore(dir);
let last;
for (let i = 0; i < rounds; i++) {
  last = a.transactAsync(() => a.put('meta', 'async/' + i, i));
  void a.writeBehind(() => a.put('meta', 'behind/' + i, i));
  b.transact(() => b.put('meta', 'sync/' + i, i));
  await new Promise((r) => setImmediate(r));
}
await last;
const seen = [a.get('meta', 'sync/199'), b.get('meta', 'async/199')];
await b.close();
a.put('meta', 'after', 1);
const after = a.get('meta', 'after');
await a.close();
process.stdout.write(JSON.stringify({ seen, after }));
`;

const LIMIT_MS = 20_000;

/** Runs SCENE on `dir`: its output, or 'hung' when it did not end within LIMIT_MS. */
function scene(dir: string): Promise<string> {
  const env = { ...process.env, DIR: dir, ENV_MODULE: new URL('../../../dist/storage/env.js', import.meta.url).href };
  const child = spawn(process.execPath, ['--input-type=module', '-e', SCENE], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      resolve('hung');
    }, LIMIT_MS);
    child.on('exit', () => {
      clearTimeout(timer);
      resolve(out);
    });
  });
}

describe('two opens of one data directory in one process', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it('behavior: a synchronous write through one never waits for the other’s asynchronous transactions for good; each sees the other’s writes, and one closed leaves the other open', async () => {
    const dir = tempDir();
    dirs.push(dir);
    expect(await scene(dir)).toBe(JSON.stringify({ seen: [199, 199], after: 1 }));
  }, 30_000);
});
