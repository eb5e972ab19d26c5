import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { ISOLATED } from '../vitest.config.js';

/** The test files under test/ that replace a module (vi.mock, vi.doMock). */
const mocking = (): string[] => {
  const path = import.meta.dirname;
  return readdirSync(path, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.test.ts') && /\bvi\.(mock|doMock)\(/.test(readFileSync(join(path, f), 'utf8')))
    .map((f) => join('test', f))
    .sort();
};

it('runs every file that replaces a module (vi.mock) in a process of its own: the shared project runs one file after another in one module graph, where its mock would replace the module for the files after it', () => {
  const files = mocking();
  expect(files.length).toBeGreaterThan(0);
  expect(files).toEqual([...ISOLATED].sort());
});
