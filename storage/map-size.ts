/**
 * The address space every open of the store reserves for its map: 1 TiB, far beyond any store here. Without
 * it lmdb-js starts at 128 KiB and doubles the map as the file grows, and on each resize it keeps the old map
 * (for readers still holding it) until the environment closes: the same file pages stay mapped several times,
 * and RSS counts each mapping's resident pages again. Without MDB_WRITEMAP the file is not grown to this size;
 * the reservation is virtual only. Past it lmdb-js still resizes.
 */
export const MAP_SIZE = 2 ** 40;

/**
 * The size above which lmdb-js answers a read with a view of its memory map rather than a copy in its read buffer
 * (SHARED_BUFFER_THRESHOLD in its src/lmdb-js.h, 16 MiB: a value of exactly that size still fits the buffer and is
 * copied).
 */
export const MAPPED_FROM = 0x100_0000;

/**
 * A read of `getBinaryFast` as Store.mapped answers it: a view of the map (valid while the row stands), or a copy when
 * lmdb-js answered with its read buffer, which the next read overwrites. The read buffer is marked `isGlobal`, as
 * lmdb-js's own getBinary tells it; a size alone misses the value of exactly MAPPED_FROM bytes (a stored base's bloom
 * filter at 4.2–8.4 M keys a part), whose view then held the next read's bytes.
 */
export const mappedBytes = (b: (Uint8Array & { isGlobal?: boolean }) | undefined): Uint8Array | undefined =>
  b === undefined ? undefined : b.isGlobal === true ? Uint8Array.prototype.slice.call(b, 0, b.length) : b.subarray(0, b.length);
