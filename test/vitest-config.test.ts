import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { ISOLATED, UNIT_ISOLATED } from '../vitest.config.js';

/** The test files of `dir` (relative to test/) that replace a module (vi.mock, vi.doMock). */
const mocking = (dir: string): string[] => {
  const path = join(import.meta.dirname, dir);
  return readdirSync(path, { recursive: dir !== '.', encoding: 'utf8' })
    .filter((f) => f.endsWith('.test.ts') && /\bvi\.(mock|doMock)\(/.test(readFileSync(join(path, f), 'utf8')))
    .map((f) => join('test', dir, f))
    .sort();
};

it('runs every unit file that replaces a module (vi.mock) with the integration files: the unit project shares one module graph per worker, so its mock would replace the module for the files after it', () => {
  const unit = mocking('unit');
  expect(unit.length).toBeGreaterThan(0);
  expect(unit).toEqual([...UNIT_ISOLATED].sort());
});

it('runs every integration file that replaces a module (vi.mock) in a process of its own: the shared project runs one file after another in one module graph', () => {
  const integration = mocking('.');
  expect(integration.filter((f) => !ISOLATED.includes(f))).toEqual([]);
});
