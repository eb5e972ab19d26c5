import { copyFileSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkBoundaries, ENGINE_MAX_LINES, formatReport, repositoryRoot, type BoundaryReport } from '../tools/boundaries.js';
import { tempDir } from './helpers.js';

describe('the import graph', () => {
  let report: BoundaryReport;
  beforeAll(async () => {
    report = await checkBoundaries();
  });

  // The expected value is the empty report, so a failure prints every finding, one per line.
  it('keeps the boundary rules: engine/ imports no adapter, no file or socket module and no adapter package, shared folders import no family, no file imports itself back', () => {
    expect(formatReport({ ...report, folderCycles: [], longFiles: [] })).toBe('');
  });

  it("has no cycle between folders (engine's root files count as the folder engine)", () => {
    expect(formatReport({ ...report, violations: [], longFiles: [] })).toBe('');
  });

  it(`has no engine file over ${ENGINE_MAX_LINES} lines`, () => {
    expect(formatReport({ ...report, violations: [], folderCycles: [] })).toBe('');
  });
});

describe('the boundary check', () => {
  // A scratch tree with one break of each kind, checked with the repository's own rules.
  let root: string;
  const plant = (file: string, text: string) => {
    mkdirSync(dirname(join(root, file)), { recursive: true });
    writeFileSync(join(root, file), text);
  };
  beforeAll(() => {
    root = tempDir();
    copyFileSync(join(repositoryRoot(), '.dependency-cruiser.cjs'), join(root, '.dependency-cruiser.cjs'));
    writeFileSync(join(root, 'package.json'), '{ "type": "module" }\n');
    symlinkSync(join(repositoryRoot(), 'node_modules'), join(root, 'node_modules'), 'dir');
    plant('http/server/route.ts', 'export interface Route { path: string }\n');
    plant(
      'engine/evm/route-use.ts',
      "import type { Route } from '../../http/server/route.js';\nexport const path = (r: Route) => r.path;\n",
    );
    plant(
      'engine/files.ts',
      "import { readFileSync } from 'node:fs';\nimport { connect } from 'net';\nexport const read = readFileSync;\nexport const dial = connect;\n",
    );
    plant('engine/store.ts', "import { open } from 'lmdb';\nexport const store = open;\n");
    plant('engine/solana/slots.ts', 'export const slots = 1;\n');
    plant('engine/match/walk.ts', "export const slots = async () => (await import('../solana/slots.js')).slots;\n");
    plant('engine/a.ts', "import { b } from './b.js';\nexport const a = () => b;\n");
    plant('engine/b.ts', "import { a } from './a.js';\nexport const b = () => a;\n");
    plant('engine/limits.ts', "import { classify } from './net/class.js';\nexport const limit = classify;\n");
    plant('engine/net/class.ts', 'export const classify = 1;\n');
    plant('engine/net/targets.ts', "import { limit } from '../limits.js';\nexport const targets = limit;\n");
    plant('engine/missing.ts', "import { gone } from './gone.js';\nexport const here = gone;\n");
    plant('engine/long.ts', 'export const line = 0;\n'.repeat(ENGINE_MAX_LINES + 1));
    plant('engine/just-short.ts', 'export const line = 0;\n'.repeat(ENGINE_MAX_LINES));
    plant(
      'engine/clock.ts',
      "import { setTimeout } from 'node:timers/promises';\nimport { performance } from 'perf_hooks';\nexport const later = [setTimeout, performance];\n",
    );
    plant('bench/solo/r.ts', 'export const r = 1;\n');
    plant('test/helpers.ts', 'export const h = 1;\n');
    plant('test/kit/k.ts', "import { r } from '../../bench/solo/r.js';\nexport const k = r;\n");
    plant('test/t.ts', "import { r } from '../bench/solo/r.js';\nexport const t = r;\n");
    plant('bench/b.ts', "import { h } from '../test/helpers.js';\nimport { k } from '../test/kit/k.js';\nexport const b = [h, k];\n");
    plant('app/uses-kit.ts', "import { k } from '../test/kit/k.js';\nexport const u = k;\n");
    plant('storage/env.ts', 'export const open = 1;\n');
    plant('bus/applier.ts', "import { open } from '../storage/env.js';\nexport const applier = open;\n");
    plant('engine/streams/bus-use.ts', "import { applier } from '../../bus/applier.js';\nexport const use = applier;\n");
    plant('bus/slot-blocks.ts', "import { slots } from '../engine/solana/slots.js';\nexport const blocks = slots;\n");
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('finds each kind of break: an adapter import (type-only; bus/ too), file and socket modules, an adapter package, a family imported (dynamically) by a shared folder (bus/ too), a file cycle, a folder cycle, an unresolvable import, a long engine file, the wall clock in engine/, test code in the server, test/ and bench/ importing each other (but for test/kit/), bus/ importing another adapter', async () => {
    const found = await checkBoundaries(root);
    expect(found.violations.map(({ rule, from, to }) => `${rule}: ${from} → ${to}`).sort()).toEqual([
      'bench-imports-test: bench/b.ts → test/helpers.ts',
      'bus-imports-adapter: bus/applier.ts → storage/env.ts',
      'engine-imports-adapter-package: engine/store.ts → node_modules/lmdb',
      'engine-imports-adapter: engine/evm/route-use.ts → http/server/route.ts',
      'engine-imports-adapter: engine/streams/bus-use.ts → bus/applier.ts',
      'engine-imports-io: engine/clock.ts → perf_hooks',
      'engine-imports-io: engine/clock.ts → timers/promises',
      'engine-imports-io: engine/files.ts → fs',
      'engine-imports-io: engine/files.ts → net',
      'file-cycle: engine/a.ts → engine/b.ts',
      'kit-imports-bench-or-tests: test/kit/k.ts → bench/solo/r.ts',
      'not-to-unresolvable: engine/missing.ts → ./gone.js',
      'server-imports-test-code: app/uses-kit.ts → test/kit/k.ts',
      'shared-imports-family: bus/slot-blocks.ts → engine/solana/slots.ts',
      'shared-imports-family: engine/match/walk.ts → engine/solana/slots.ts',
      'test-imports-bench: test/kit/k.ts → bench/solo/r.ts',
      'test-imports-bench: test/t.ts → bench/solo/r.ts',
    ]);
    expect(found.folderCycles).toEqual([
      {
        folders: ['engine', 'engine/net'],
        links: [
          { from: 'engine', to: 'engine/net', imports: [{ from: 'engine/limits.ts', to: 'engine/net/class.ts' }] },
          { from: 'engine/net', to: 'engine', imports: [{ from: 'engine/net/targets.ts', to: 'engine/limits.ts' }] },
        ],
      },
    ]);
    expect(found.longFiles).toEqual([{ file: 'engine/long.ts', lines: ENGINE_MAX_LINES + 1 }]);
  });
});
