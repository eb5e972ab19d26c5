import { open } from 'lmdb';
import { TABLES } from '../storage/env.js';
import { MAP_SIZE } from '../storage/map-size.js';
import { footprint } from './lmdb-footprint.js';

/** One table's share of a store: its entries and the bytes of its B-tree and overflow pages. */
export interface TableSize {
  table: string;
  entries: number;
  mb: number;
}

const MB = 1024 * 1024;

/**
 * What a stopped server's store holds, read-only: the file's used extent (pages up to the last one written) and
 * each table's pages. The extent minus the tables is free pages LMDB keeps for reuse (and its own free list):
 * a growing extent with tables that do not grow would be pages never reused.
 */
export function storeBreakdown(path: string): { extentMb: number; tablesMb: number; tables: TableSize[] } {
  const root = open({ path, readOnly: true, maxDbs: 96, encoding: 'binary', noSubdir: false, mapSize: MAP_SIZE });
  try {
    const tables: TableSize[] = [];
    for (const name of TABLES) {
      const { entries, bytes } = footprint([root.openDB({ name, encoding: 'binary' })], 1);
      tables.push({ table: name, entries, mb: Math.round((bytes * 10) / MB) / 10 });
    }
    const { lastPageNumber: last, pageSize } = root.getStats() as { lastPageNumber: number; pageSize: number };
    tables.sort((a, b) => b.mb - a.mb);
    return {
      extentMb: Math.round(((last + 1) * pageSize * 10) / MB) / 10,
      tablesMb: Math.round(tables.reduce((s, t) => s + t.mb, 0) * 10) / 10,
      tables,
    };
  } finally {
    root.close();
  }
}
