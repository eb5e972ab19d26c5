import { defineConfig } from 'vitest/config';

/**
 * Test files that need a process and module graph of their own (the `isolated` project): a file that replaces a
 * module (vi.mock) would replace it for every file after it in a shared process. Every other file, unit or
 * integration, runs in the `shared` project: one file after another in one process per worker, which loads the
 * server (dist/app/server.js), engine/ and the tests' helpers once for all of them; the binaries' tests too (their
 * children are processes of their own), and the files using the official SDK (test/sdk.ts points the one Moralis of
 * the process at each file's server).
 */
export const ISOLATED: string[] = ['test/unit/engine/delivery/records.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // After the summary, the logs of the servers a failed file started: all a CI run shows of a failure.
    reporters: ['default', './test/failure-logs.ts'],
    pool: 'forks',
    // Two files at a time on the 2-core CI machine: most test time is waiting (anvil, timers, child
    // processes), and one file at a time took 15 minutes. Timing rules run on the injected clock.
    maxWorkers: 2,
    // Fewer young-generation collections in the long-lived shared workers (GC was about an eighth of their CPU).
    execArgv: ['--max-semi-space-size=64'],
    // The compiled server (test/in-process.ts) is loaded by Node as the binary loads it, not transformed again.
    server: { deps: { external: [/\/dist\//] } },
    projects: [
      // Servers, child processes, anvil, and the run's secret scan over their logs (both projects name the setup; it
      // runs once). test/system/ is `npm run test:system`'s (vitest.system.config.ts).
      {
        extends: true,
        test: { name: 'isolated', include: ISOLATED, setupFiles: ['test/running-file.ts'], globalSetup: ['test/global-setup.ts'] },
      },
      {
        extends: true,
        // Unit and integration files in one queue, longest first: the unit files' CPU fills the time the integration
        // files spend waiting (anvil, timers, children), instead of running after them as a project of their own.
        // test/shared-setup.ts fails a file that leaves a server, a child process or an environment change behind.
        test: {
          name: 'shared',
          include: ['test/*.test.ts', 'test/unit/**/*.test.ts'],
          exclude: ISOLATED,
          isolate: false,
          setupFiles: ['test/running-file.ts', 'test/shared-setup.ts'],
          globalSetup: ['test/global-setup.ts'],
        },
      },
    ],
  },
});
