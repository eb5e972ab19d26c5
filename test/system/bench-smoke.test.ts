import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

/**
 * The benches as `npm run bench:NAME` runs them, from their own build (dist-bench/, which `npm run test:system`
 * builds first). One runs for real at a tiny size: bench:data-layout over 2 synthetic blocks (the stand-ins' kit
 * and the server's indexes in one process, about 10 s), its results written under BENCH_RESULTS_DIR instead of
 * bench/, whose measured figures it must leave alone.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const scripts = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
const benches = Object.entries(scripts).filter(([name]) => name.startsWith('bench:') || name === 'soak');

it('every bench script builds the benches and runs a built bench whose source is in bench/', () => {
  expect(benches.length).toBeGreaterThan(10);
  for (const [name, command] of benches) {
    const built = /^npm run -s build:bench && node (dist-bench\/bench\/([a-z0-9-]+)\.js)$/.exec(command);
    expect(built, `${name}: ${command}`).not.toBeNull();
    expect(existsSync(join(ROOT, built![1]!)), `${name}: ${built![1]} is not built`).toBe(true);
    expect(existsSync(join(ROOT, 'bench', `${built![2]}.ts`)), `${name}: no bench/${built![2]}.ts`).toBe(true);
  }
});

it('npm run bench:data-layout runs at a tiny size and writes its results JSON and RESULTS.md to BENCH_RESULTS_DIR only', async () => {
  const out = mkdtempSync(join(tmpdir(), 'chainpost-bench-'));
  const measured = join(ROOT, 'bench/results/data-layout.json');
  const before = existsSync(measured) ? readFileSync(measured, 'utf8') : undefined;
  try {
    const run = await promisify(execFile)('npm', ['run', '-s', 'bench:data-layout'], {
      cwd: ROOT,
      env: { ...process.env, BENCH_LAYOUT_BLOCKS: '2', BENCH_RESULTS_DIR: out },
      maxBuffer: 16 * 1024 * 1024,
    });
    expect(run.stdout).toContain('transfersPerSec');
    const result = JSON.parse(readFileSync(join(out, 'results/data-layout.json'), 'utf8')) as {
      name: string;
      figures: Record<string, number>;
    };
    expect(result.name).toBe('data-layout');
    expect(result.figures['transfers']).toBe(2_000); // 2 blocks of 1,000 transfers: the size asked for
    // Each figure measured, not NaN or 0: the load ran through the real indexes and the prototype, and pages were counted.
    for (const name of [
      'realTransfersPerSec',
      'realEntriesPerTransfer',
      'realBytesPerTransfer',
      'compactTransfersPerSec',
      'compactEntriesPerTransfer',
      'compactBytesPerTransfer',
    ])
      expect(result.figures[name], name).toBeGreaterThan(0);
    expect(readFileSync(join(out, 'RESULTS.md'), 'utf8')).toContain('<!-- data-layout -->');
    expect(existsSync(measured) ? readFileSync(measured, 'utf8') : undefined).toBe(before);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});
