import { defineConfig } from 'vitest/config';

/** Unit tests that replace a module (vi.mock): each runs with the isolated integration files, in a module graph of its own. */
export const UNIT_ISOLATED = ['test/unit/engine/delivery/records.test.ts'];

/**
 * Integration files that run one after another in one process per worker (the `shared` project), which loads the
 * server (dist/app/server.js, about 2 CPU-s) and the tests' helpers once for all of them: those checked to pass
 * there: all of them today, the binaries' tests too (their children are processes of their own). A file not listed
 * runs in a process of its own (the `integration` project), as a new one does until checked here; a file that
 * replaces a module (vi.mock) never belongs here. The files using the official SDK do: test/sdk.ts points the one
 * Moralis of the process at each file's server.
 */
export const SHARED = [
  'test/auth.test.ts',
  'test/backfill.test.ts',
  'test/backup.test.ts',
  'test/bitcoin-core.test.ts',
  'test/bitcoin-follower.test.ts',
  'test/bitcoin-streams.test.ts',
  'test/bitcoin-tip.test.ts',
  'test/boundaries.test.ts',
  'test/cli.test.ts',
  'test/contracts.test.ts',
  'test/crash-ledger.test.ts',
  'test/crash.test.ts',
  'test/crosschain-bitcoin.test.ts',
  'test/crosschain-chaindata.test.ts',
  'test/crosschain-wallets.test.ts',
  'test/data-calls.test.ts',
  'test/data-candles.test.ts',
  'test/data-erc20-start.test.ts',
  'test/data-erc20.test.ts',
  'test/data-nft-fetch.test.ts',
  'test/data-nft-prices.test.ts',
  'test/data-nft.test.ts',
  'test/data-prices.test.ts',
  'test/data-scores.test.ts',
  'test/data-txs-index.test.ts',
  'test/data-txs.test.ts',
  'test/defi.test.ts',
  'test/devnet-state.test.ts',
  'test/devnet.test.ts',
  'test/dex-contracts.test.ts',
  'test/dex-v4.test.ts',
  'test/docs.test.ts',
  'test/fuzz-routes.test.ts',
  'test/ingest-crash.test.ts',
  'test/ingest-pool.test.ts',
  'test/ingest-server.test.ts',
  'test/ingest-standin.test.ts',
  'test/ingest.test.ts',
  'test/keys-rotate.test.ts',
  'test/lifecycle.test.ts',
  'test/limits.test.ts',
  'test/match-pool.test.ts',
  'test/nft-transfers.test.ts',
  'test/pnl.test.ts',
  'test/quickstart.test.ts',
  'test/readiness.test.ts',
  'test/removals.test.ts',
  'test/rpc.test.ts',
  'test/sdk-auth.test.ts',
  'test/sdk-readme.test.ts',
  'test/sdk-streams.test.ts',
  'test/sdk-walk.test.ts',
  'test/secrets.test.ts',
  'test/server.test.ts',
  'test/size-limits.test.ts',
  'test/solana-follower.test.ts',
  'test/solana-rpc.test.ts',
  'test/solana-streams.test.ts',
  'test/ssrf.test.ts',
  'test/startup-scale.test.ts',
  'test/store-upgrade.test.ts',
  'test/streams-alerts.test.ts',
  'test/streams-evm.test.ts',
  'test/streams-fairness.test.ts',
  'test/streams-families.test.ts',
  'test/streams-options.test.ts',
  'test/streams-triggers.test.ts',
  'test/streams-unfollowed.test.ts',
  'test/streams.test.ts',
  'test/tenants.test.ts',
  'test/trusted-proxies.test.ts',
  'test/usd-fields.test.ts',
  'test/vitest-config.test.ts',
  'test/wallet-swaps.test.ts',
];

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
          include: ['test/*.test.ts', ...UNIT_ISOLATED],
          exclude: SHARED,
          globalSetup: ['test/global-setup.ts'],
        },
      },
      {
        extends: true,
        // One process per worker for many files: dist/app/server.js (about 2 s of CPU to load) and the helpers load
        // once. test/shared-setup.ts fails a file that leaves a server, a child process or an environment change behind.
        test: {
          name: 'shared',
          include: SHARED,
          isolate: false,
          setupFiles: ['test/shared-setup.ts'],
          globalSetup: ['test/global-setup.ts'],
        },
      },
    ],
  },
});
