import { defineConfig } from 'vitest/config';

/** Unit tests that replace a module (vi.mock): each runs with the isolated integration files, in a module graph of its own. */
export const UNIT_ISOLATED = ['test/unit/engine/delivery/records.test.ts'];

/**
 * Integration files that need a process of their own (the `integration` project): a file that replaces a module
 * (vi.mock), or one that leaves state a later file would see. None today: every other `test/*.test.ts` runs in the
 * `shared` project, one after another in one process per worker, which loads the server (dist/app/server.js) and the
 * tests' helpers once for all of them; the binaries' tests too (their children are processes of their own), and the
 * files using the official SDK (test/sdk.ts points the one Moralis of the process at each file's server).
 */
export const ISOLATED: string[] = [];

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
      // Servers, child processes, anvil, and the run's secret scan over their logs (both projects name the setup; it
      // runs once). test/system/ is `npm run test:system`'s (vitest.system.config.ts).
      {
        extends: true,
        // Each file in a fresh process and module graph.
        test: {
          name: 'integration',
          include: [...ISOLATED, ...UNIT_ISOLATED],
          globalSetup: ['test/global-setup.ts'],
        },
      },
      {
        extends: true,
        // One process per worker for many files: dist/app/server.js and the helpers load once. test/shared-setup.ts fails a file that leaves a server, a child process or an environment change behind.
        test: {
          name: 'shared',
          include: ['test/*.test.ts'],
          exclude: ISOLATED,
          isolate: false,
          setupFiles: ['test/shared-setup.ts'],
          globalSetup: ['test/global-setup.ts'],
        },
      },
    ],
  },
});
