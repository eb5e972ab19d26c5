/**
 * The address space every open of the store reserves for its map: 1 TiB, far beyond any store here. Without
 * it lmdb-js starts at 128 KiB and doubles the map as the file grows, and on each resize it keeps the old map
 * (for readers still holding it) until the environment closes: the same file pages stay mapped several times,
 * and RSS counts each mapping's resident pages again. Without MDB_WRITEMAP the file is not grown to this size;
 * the reservation is virtual only. Past it lmdb-js still resizes.
 */
export const MAP_SIZE = 2 ** 40;

/**
 * The size from which lmdb-js answers a read with a view of its memory map rather than a copy in its read buffer
 * (SHARED_BUFFER_THRESHOLD in its src/lmdb-js.h, 16 MiB): Store.mapped copies below it.
 */
export const MAPPED_FROM = 0x100_0000;

/**
 * A read of `getBinaryFast` as Store.mapped answers it: a view of the map from MAPPED_FROM bytes (valid while the row
 * stands), a copy below it (lmdb-js reuses its read buffer).
 */
export const mappedBytes = (b: Uint8Array | undefined): Uint8Array | undefined =>
  b === undefined ? undefined : b.length >= MAPPED_FROM ? b.subarray(0, b.length) : Uint8Array.prototype.slice.call(b, 0, b.length);
