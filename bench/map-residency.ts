/**
 * How much of an LMDB store's file a process has resident (RssFile) after writing it, with and without reading
 * back some of the rows it just wrote, as the dispatcher reads each webhook it queued. docs/reliability.md's soak section
 * cites it for why the server's RSS follows the store's size.
 *
 *   node dist-bench/bench/map-residency.js
 *
 * Each case runs in a process of its own, on a fresh store under the temp directory (removed after): 120
 * transactions of 1,000 rows of 3,500 bytes and 1,000 of 200 bytes (about 500 MB), opened as storage/env.ts opens
 * the server's store (no MDB_WRITEMAP, 1-TiB map). Prints RssFile before and after, and the file's size.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { open } from 'lmdb';
import { MAP_SIZE } from '../storage/map-size.js';

const TXNS = 120;
const ROWS = 1_000;

const rssFileMb = (): number => Number(/^RssFile:\s+(\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'))![1]) / 1024;

function run(readEvery: number, noReadAhead: boolean): void {
  const dir = mkdtempSync(join(tmpdir(), 'chainpost-residency-'));
  try {
    // noReadAhead (MDB_NORDAHEAD, madvise MADV_RANDOM) is an lmdb-js option its types leave out.
    const options = {
      path: dir,
      maxDbs: 4,
      encoding: 'binary' as const,
      compression: false,
      overlappingSync: false,
      mapSize: MAP_SIZE,
      noReadAhead,
    };
    const root = open(options);
    const big = root.openDB<Buffer, number>({ name: 'big', encoding: 'binary', keyEncoding: 'uint32' });
    const small = root.openDB<Buffer, number>({ name: 'small', encoding: 'binary', keyEncoding: 'uint32' });
    const value = Buffer.alloc(3_500, 7);
    const before = rssFileMb();
    let key = 0;
    for (let t = 0; t < TXNS; t++) {
      const first = key;
      root.transactionSync(() => {
        for (let i = 0; i < ROWS; i++, key++) {
          big.put(key, value);
          small.put(key, value.subarray(0, 200));
        }
      });
      if (readEvery > 0) for (let k = first; k < key; k += readEvery) big.getBinaryFast(k);
    }
    const after = rssFileMb();
    const fileMb = statSync(join(dir, 'data.mdb')).size / 1_048_576;
    console.log(
      `${readEvery === 0 ? 'writes only' : `writes, then every ${readEvery}th row read back`}${noReadAhead ? ' (noReadAhead: MADV_RANDOM)' : ''}: RssFile ${before.toFixed(0)} → ${after.toFixed(0)} MB (+${(after - before).toFixed(0)}) for a ${fileMb.toFixed(0)}-MB file`,
    );
    root.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const [readEvery, noReadAhead] = process.argv.slice(2);
if (readEvery !== undefined) run(Number(readEvery), noReadAhead === '1');
else {
  const self = fileURLToPath(import.meta.url);
  for (const args of [
    ['0', '0'],
    ['10', '0'],
    ['10', '1'],
  ])
    process.stdout.write(execFileSync(process.execPath, [self, ...args], { encoding: 'utf8' }));
}
