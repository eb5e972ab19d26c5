import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { getAddress } from 'viem/utils';
import { startAnvil, type Anvil } from './anvil.js';
import type { Config } from '../../engine/config/config.js';

/**
 * The embedded devnet of `chainpost serve` (CHAINPOST_CHAINS unset): anvil as
 * chain 0x539 (id 1337), mining a block every `blockTime` seconds and at once
 * for each transaction, its chain kept under the data directory so a restart
 * continues it. Files, in `<CHAINPOST_DATA>/devnet/`:
 *   state.json     anvil's state (--state): loaded at start, written at stop and every CHAINPOST_DEVNET_SAVE_INTERVAL s
 *   accounts.json  anvil's --config-out: its funded accounts, rewritten at each start
 */
export const DEVNET_CHAIN = '0x539';
export const DEVNET_CHAIN_ID = 1337;

export interface DevnetAccount {
  address: string;
  privateKey: string;
}

export interface Devnet extends Anvil {
  /** anvil's funded dev accounts (its test mnemonic), addresses checksummed. */
  accounts: DevnetAccount[];
  stateFile: string;
}

export const devnetFiles = (dataDir: string) => {
  const dir = join(dataDir, 'devnet');
  return { dir, state: join(dir, 'state.json'), accounts: join(dir, 'accounts.json') };
};

/** Starts the devnet on `port` (or the next free one; 0: any free port), as config.devnet says. */
export async function startDevnet(dataDir: string, opts: Config['devnet']): Promise<Devnet> {
  const files = devnetFiles(dataDir);
  mkdirSync(files.dir, { recursive: true });
  let anvil: Anvil;
  try {
    // --mixed-mining: --block-time alone would leave a transaction waiting for the next interval.
    const args = [
      '--block-time',
      String(opts.blockTime),
      '--mixed-mining',
      '--state',
      files.state,
      '--state-interval',
      String(opts.saveInterval),
      '--config-out',
      files.accounts,
    ];
    anvil = await startAnvil({ chainId: DEVNET_CHAIN_ID, port: opts.port, args, stopGraceMs: opts.stopGraceMs });
  } catch (err) {
    if (!existsSync(files.state)) throw err;
    throw new Error(
      `${(err as Error).message}\nthe devnet could not start from its state file ${files.state}; \`chainpost devnet reset\` starts a new devnet`,
    );
  }
  let out: DevnetConfigOut;
  try {
    out = await readConfigOut(files.accounts);
  } catch (err) {
    await anvil.stop();
    throw err;
  }
  const accounts = out.available_accounts.map((a, i) => ({ address: getAddress(a), privateKey: out.private_keys[i]! }));
  return {
    ...anvil,
    accounts,
    stateFile: files.state,
    async stop() {
      // anvil writes its state file as it exits.
      await anvil.stop();
    },
  };
}

/** What anvil's --config-out holds that the devnet reads: its funded accounts and their keys. */
interface DevnetConfigOut {
  available_accounts: string[];
  private_keys: string[];
}

/** How long anvil may take to write its --config-out once it answers, ms. */
const CONFIG_OUT_WITHIN_MS = 5_000;

/**
 * anvil's --config-out, once written whole: anvil may answer its first request before it has written (or rewritten)
 * the file, so a missing or partial file is read again, every 25 ms, for `withinMs` at most.
 */
export async function readConfigOut(file: string, withinMs = CONFIG_OUT_WITHIN_MS): Promise<DevnetConfigOut> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    let why: string;
    try {
      const out = JSON.parse(readFileSync(file, 'utf8')) as Partial<DevnetConfigOut>;
      if (Array.isArray(out.available_accounts) && Array.isArray(out.private_keys) && out.available_accounts.length > 0)
        return out as DevnetConfigOut;
      why = 'it lists no accounts';
    } catch (err) {
      why = (err as Error).message;
    }
    if (Date.now() >= deadline)
      throw new Error(`the devnet's accounts file ${file} was not written by anvil within ${withinMs} ms (${why})`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** The start banner's account lines: each funded account with its private key. */
export const accountsBanner = (accounts: readonly DevnetAccount[]): string =>
  accounts.map((a, i) => `  (${i}) ${a.address}  ${a.privateKey}\n`).join('');
