import { defineConfig } from 'vitest/config';

// `npm run test:system`: the suites too slow for `npm test` (bench smoke runs; later the cluster's kill tests and
// the browser tests), run after it by .ci/run. The script builds dist/ and dist-bench/ first.
export default defineConfig({
  test: {
    include: ['test/system/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
  },
});
