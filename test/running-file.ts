import { beforeAll, expect } from 'vitest';
import { RUNNING_FILE } from './kit/proc.js';

/**
 * Run before each test file (every vitest config's setupFiles): names the file running in this process, so each log
 * kept for a server or child it starts is marked with it (test/kit/proc.ts, keptLogBase) and test/failure-logs.ts
 * prints a failed file's.
 */
beforeAll(() => {
  (globalThis as { [RUNNING_FILE]?: string })[RUNNING_FILE] = expect.getState().testPath;
});
