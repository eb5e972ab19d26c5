import { defineConfig } from 'vitest/config';

// `npm run test:system`: the suites too slow for `npm test` (bench smoke runs, the cluster of three nodes with its
// kills, the dashboard in chromium-headless-shell), run after it by .ci/run. The script builds dist/ and dist-bench/
// first, then runs the bench smoke runs at the lowest CPU priority beside the suites whose lease waits are generous,
// and the others after, alone (test/system/lanes.mjs). One file at a time in each: the cluster's files run three
// servers, anvil and nats-server on wall-time leases.
export default defineConfig({
  test: {
    include: ['test/system/**/*.test.ts'],
    setupFiles: ['test/running-file.ts'],
    globalSetup: ['test/global-setup.ts'],
    // After the summary, the logs of the servers a failed file started (test/failure-logs.ts).
    reporters: ['default', './test/failure-logs.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    fileParallelism: false,
    // Every concurrent test two at a time on two cores: the bench smoke runs, and the lease and cluster cases of
    // bus-leases, bus-nodes, bus-owners and cluster-chains.
    maxConcurrency: 2,
  },
});
