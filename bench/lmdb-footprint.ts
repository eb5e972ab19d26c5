import type { Database } from 'lmdb';

/** What getStats() tells of one LMDB database. */
interface Stats {
  entryCount: number;
  pageSize: number;
  treeBranchPageCount: number;
  treeLeafPageCount: number;
  overflowPages: number;
}

/** Entries of `dbs` and the bytes of their B-tree and overflow pages, each per `per` (a transfer, say). */
export function footprint(dbs: Iterable<Pick<Database, 'getStats'>>, per: number): { entries: number; bytes: number } {
  let entries = 0;
  let bytes = 0;
  for (const db of dbs) {
    const s = db.getStats() as Stats;
    entries += s.entryCount;
    bytes += (s.treeBranchPageCount + s.treeLeafPageCount + s.overflowPages) * s.pageSize;
  }
  return { entries: Math.round((entries / per) * 10) / 10, bytes: Math.round(bytes / per) };
}
