import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';

/**
 * The complete mainnet block bundles (block, receipts, callTracer traces) in test/fixtures/evm/chainstorage,
 * gzipped copies of the shared chainstorage fixtures (sources in test/fixtures/README.md).
 */
export const FIXTURE_BLOCKS = [4370006, 4404763, 7280016, 11098450, 13998626, 15753009, 16899757, 17053184] as const;

// The repository's test/fixtures, whether this runs from source (test/kit/, for tests) or from dist-bench/test/kit
// (benches): the build holds no fixtures.
const FIXTURES = new URL(import.meta.url.includes('/dist-bench/') ? '../../../test/fixtures/' : '../fixtures/', import.meta.url);

/** The node's JSON texts of bundle n, as they were on disk before compression: block, receipts, traces. */
export const bundleJson = (n: number): [string, string, string] =>
  (['block', 'receipts', 'traces'] as const).map((f) =>
    gunzipSync(readFileSync(new URL(`evm/chainstorage/eth-mainnet-${n}/${f}.json.gz`, FIXTURES))).toString('utf8'),
  ) as [string, string, string];

export interface Bundle {
  number: number;
  block: Record<string, unknown>;
  receipts: Array<Record<string, unknown>>;
  traces: Array<Record<string, unknown>>;
  /** The node's JSON, as bytes (uncompressed). */
  jsonBytes: number;
}

export function bundle(n: number): Bundle {
  const files = bundleJson(n);
  return {
    number: n,
    block: JSON.parse(files[0]),
    receipts: JSON.parse(files[1]),
    traces: JSON.parse(files[2]),
    jsonBytes: files.reduce((a, f) => a + Buffer.byteLength(f), 0),
  };
}
