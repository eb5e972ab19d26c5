import { findChain } from '../../engine/chains/registry.js';
import type { EmbeddedDevnet } from '../../engine/evm/devnet.js';
import { DEVNET_CHAIN, DEVNET_CHAIN_ID, accountsBanner, devnetFiles, startDevnet } from './devnet.js';
import { clearForNewDevnet } from './devnet-reset.js';

/** The EVM family's embedded devnet: anvil under the data directory (http/clients/devnet.ts). */
export const embeddedDevnet: EmbeddedDevnet = {
  async start({ config, log, kv, notice }) {
    const cleared = await clearForNewDevnet(kv, config.dataDir);
    if (cleared > 0)
      log.info('no devnet state: a new devnet begins, and what was ingested from its chain is cleared', {
        chain: DEVNET_CHAIN,
        state: devnetFiles(config.dataDir).state,
        rows: cleared,
      });
    const devnet = await startDevnet(config.dataDir, config.devnet);
    const confirmations = config.confirmations.get(DEVNET_CHAIN) ?? findChain(DEVNET_CHAIN)!.confirmations;
    const { blockTime } = config.devnet;
    log.info('devnet', {
      chain: DEVNET_CHAIN,
      rpc: devnet.url,
      port: devnet.port,
      pid: devnet.child.pid,
      blockTime,
      confirmations,
      state: devnet.stateFile,
      accounts: devnet.accounts.map((a) => a.address),
    });
    // To stderr, as the key banner: stdout stays JSON lines. The keys are anvil's public test keys.
    notice(
      `chainpost: devnet ${DEVNET_CHAIN} (chain id ${DEVNET_CHAIN_ID}) at ${devnet.url}: a block every ${blockTime} s and one per transaction, confirmed at ${confirmations} blocks, kept in ${devnet.stateFile}\n` +
        `funded accounts (anvil's test mnemonic "test test test test test test test test test test test junk"; these keys are public: never use them on a real chain):\n${accountsBanner(devnet.accounts)}`,
    );
    return { chain: DEVNET_CHAIN, url: devnet.url, stop: () => devnet.stop() };
  },
};
