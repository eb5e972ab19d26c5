import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // test/system/: `npm run test:system` (vitest.system.config.ts).
    exclude: [...configDefaults.exclude, 'test/system/**'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two files at a time on the 2-core CI machine: most test time is waiting (anvil, timers, child
    // processes), and one file at a time took 15 minutes. Timing rules run on the injected clock.
    maxWorkers: 2,
    // The compiled server (test/in-process.ts) is loaded by Node as the binary loads it, not transformed again.
    server: { deps: { external: [/\/dist\//] } },
  },
});
