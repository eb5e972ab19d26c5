import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The complete mainnet block bundles of ../shared/fixtures/evm/chainstorage (block, receipts, callTracer traces). */
export const FIXTURE_BLOCKS = [4370006, 4404763, 7280016, 11098450, 13998626, 15753009, 16899757, 17053184] as const;

// ../shared beside the repository, whether this runs from source (tests) or from dist/bench (benches).
const repo = new URL(import.meta.url.includes('/dist/bench/') ? '../../' : '../', import.meta.url);
/** The folder of bundle n. */
export const fixtureDir = (n: number): string => fileURLToPath(new URL(`../shared/fixtures/evm/chainstorage/eth-mainnet-${n}/`, repo));

export interface Bundle {
  number: number;
  block: Record<string, unknown>;
  receipts: Array<Record<string, unknown>>;
  traces: Array<Record<string, unknown>>;
  /** The node's JSON, as bytes on disk. */
  jsonBytes: number;
}

export function bundle(n: number): Bundle {
  const files = ['block.json', 'receipts.json', 'traces.json'].map((f) => readFileSync(`${fixtureDir(n)}${f}`, 'utf8'));
  return { number: n, block: JSON.parse(files[0]!), receipts: JSON.parse(files[1]!), traces: JSON.parse(files[2]!), jsonBytes: files.reduce((a, f) => a + Buffer.byteLength(f), 0) };
}
