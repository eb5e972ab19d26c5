import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { UNIT_ISOLATED } from '../vitest.config.js';

it('runs every unit file that replaces a module (vi.mock) with the integration files: the unit project shares one module graph per worker, so its mock would replace the module for the files after it', () => {
  const unit = join(import.meta.dirname, 'unit');
  const mocking = readdirSync(unit, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.test.ts') && /\bvi\.(do)?mock\(/.test(readFileSync(join(unit, f), 'utf8')))
    .map((f) => `test/unit/${f}`);
  expect(mocking.length).toBeGreaterThan(0);
  expect(mocking.sort()).toEqual([...UNIT_ISOLATED].sort());
});
