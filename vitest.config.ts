import { defineConfig } from 'vitest/config';

/** Unit tests that replace a module (vi.mock): each runs with the integration files, in a module graph of its own. */
export const UNIT_ISOLATED = ['test/unit/engine/delivery/records.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two files at a time on the 2-core CI machine: most test time is waiting (anvil, timers, child
    // processes), and one file at a time took 15 minutes. Timing rules run on the injected clock.
    maxWorkers: 2,
    // The compiled server (test/in-process.ts) is loaded by Node as the binary loads it, not transformed again.
    server: { deps: { external: [/\/dist\//] } },
    projects: [
      {
        extends: true,
        // Unit tests (no server, no child process) share one module graph per worker: loading engine/ afresh for
        // each file cost about as much CPU as the tests. vi.mock would replace a module for every file after it, so
        // a file that mocks runs in the integration project.
        test: { name: 'unit', include: ['test/unit/**/*.test.ts'], exclude: UNIT_ISOLATED, isolate: false },
      },
      // Servers, child processes, anvil: each file in a fresh module graph, and the run's secret scan over their logs.
      // test/system/ is `npm run test:system`'s (vitest.system.config.ts).
      {
        extends: true,
        test: { name: 'integration', include: ['test/*.test.ts', ...UNIT_ISOLATED], globalSetup: ['test/global-setup.ts'] },
      },
    ],
  },
});
