import { existsSync, rmSync } from 'node:fs';
import { dataChainRanges } from '../../engine/data-api/tables.js';
import { clearChain } from '../../engine/ingest/chain-store.js';
import type { Kv, Table } from '../../engine/ports.js';
import { DEVNET_CHAIN, devnetFiles } from './devnet.js';

/** Removes what was ingested from chain 0x539 (its follower's rows and its Data API indexes); the rows removed per table. */
const clearDevnetChain = (store: Kv): Promise<Partial<Record<Table, number>>> =>
  clearChain(store, DEVNET_CHAIN, dataChainRanges(DEVNET_CHAIN));

const total = (removed: Partial<Record<Table, number>>): number => Object.values(removed).reduce((a, b) => a + b, 0);

/**
 * `chainpost devnet reset`: the next start begins a new devnet. Deletes anvil's
 * state file and what was ingested from chain 0x539 (storage/README.md: its
 * chainState, blocks, probes, canon, blockHashes, blockEvents, tokens,
 * transfers and sales rows, and its Data API indexes). Streams, keys and webhooks already queued stay.
 * Call it holding the data directory's lock (no server may run it meanwhile). Returns the lines to print.
 */
export async function devnetReset(store: Kv, dataDir: string): Promise<string[]> {
  const removed = await clearDevnetChain(store);
  const lines = [
    `cleared chain ${DEVNET_CHAIN} from ${dataDir}: ${total(removed)} rows (${
      Object.entries(removed)
        .filter(([, n]) => n > 0)
        .map(([t, n]) => `${t} ${n}`)
        .join(', ') || 'none'
    })`,
  ];
  const { state } = devnetFiles(dataDir);
  lines.push(
    existsSync(state)
      ? `deleted the devnet state ${state}; the next start begins a new devnet`
      : `no devnet state at ${state}; the next start begins a new devnet`,
  );
  rmSync(state, { force: true });
  return lines;
}

/**
 * Before the embedded devnet starts: without its state file (a `backup` copy, which holds the store alone; a
 * server killed before anvil's first save; a file deleted) anvil begins a new chain, whose blocks are not
 * the stored ones. What was ingested from 0x539 is cleared first, as by `devnet reset`, so the follower starts
 * on the new chain instead of rolling the stored one back as a reorg of all of it. Cleared whenever the file
 * is missing, so a clear cut short is finished at the next start. The rows removed (none with the file there).
 */
export async function clearForNewDevnet(store: Kv, dataDir: string): Promise<number> {
  if (existsSync(devnetFiles(dataDir).state)) return 0;
  return total(await clearDevnetChain(store));
}
