import { existsSync, rmSync } from 'node:fs';
import { dataChainRanges } from '../../engine/data-api/indexes.js';
import { clearChain } from '../../engine/ingest/chain-store.js';
import type { Kv } from '../../engine/ports.js';
import { DEVNET_CHAIN, devnetFiles } from './devnet.js';

/**
 * `chainpost devnet reset`: the next start begins a new devnet. Deletes anvil's
 * state file and what was ingested from chain 0x539 (storage/README.md: its
 * chainState, blocks, probes, canon, blockHashes, blockEvents, tokens,
 * transfers and sales rows, and its Data API indexes). Streams, keys and webhooks already queued stay.
 * Call it holding the data directory's lock (no server may run it meanwhile). Returns the lines to print.
 */
export function devnetReset(store: Kv, dataDir: string): string[] {
  const removed = clearChain(store, DEVNET_CHAIN, dataChainRanges(DEVNET_CHAIN));
  const total = Object.values(removed).reduce((a, b) => a + b, 0);
  const lines = [`cleared chain ${DEVNET_CHAIN} from ${dataDir}: ${total} rows (${Object.entries(removed).filter(([, n]) => n > 0).map(([t, n]) => `${t} ${n}`).join(', ') || 'none'})`];
  const { state } = devnetFiles(dataDir);
  lines.push(existsSync(state) ? `deleted the devnet state ${state}; the next start begins a new devnet` : `no devnet state at ${state}; the next start begins a new devnet`);
  rmSync(state, { force: true });
  return lines;
}
