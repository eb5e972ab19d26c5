/**
 * Words in shared memory for a bloom filter larger than the caches, starting on a page: its 32-byte blocks then each
 * lie in one 64-byte cache line, so that a probe of a key costs one miss. A SharedArrayBuffer's bytes start where the
 * allocator put them, 16 bytes past a line on this platform, which puts half the blocks across two lines (25.8 M → 41 M
 * blocks tested a second, a one-off harness of the blocks alone); a WebAssembly memory starts on a page.
 * docs/decisions/key-sets.md.
 */
export function sharedWords(length: number): Uint32Array {
  const bytes = Math.max(1, length) * 4;
  if (bytes < PAGED_FROM) return sharedArray(length);
  const pages = Math.ceil(bytes / WASM_PAGE);
  // Past a WebAssembly memory's 4 GiB (a base of billions of keys): a SharedArrayBuffer, its blocks where they fall.
  if (pages > MAX_PAGES) return sharedArray(length);
  try {
    return new Uint32Array(new WebAssembly.Memory({ initial: pages, maximum: pages, shared: true }).buffer, 0, length);
  } catch (err) {
    // V8 reserves some 10 GiB of address space a memory: under a limit (ulimit -v) it cannot, and the filter works
    // unaligned all the same.
    if (err instanceof RangeError) return sharedArray(length);
    throw err;
  }
}

/**
 * Views of `lengths` words each, one after the other in one shared memory (sharedWords): the filters of a set in parts,
 * which its column pass reads as one array (KeySet.probeParts). Each filter is whole 32-byte blocks, so every block
 * stays in one line.
 */
export function sharedBloomViews(lengths: readonly number[]): Uint32Array[] {
  const all = sharedWords(lengths.reduce((n, l) => n + l, 0));
  let at = 0;
  return lengths.map((l) => all.subarray(at, (at += l)));
}

/** Copies of `blooms` in one shared memory, in order (sharedBloomViews). */
export function sharedBlooms(blooms: readonly Uint32Array[]): Uint32Array[] {
  const views = sharedBloomViews(blooms.map((b) => b.length));
  views.forEach((v, i) => v.set(blooms[i]!));
  return views;
}

/** `length` words (at least one) in a SharedArrayBuffer of their own, wherever the allocator puts it. */
export const sharedArray = (length: number): Uint32Array => new Uint32Array(new SharedArrayBuffer(Math.max(1, length) * 4));

/** Smaller filters stay in the caches (the second-level cache is 1–2 MiB): no page of their own. */
const PAGED_FROM = 1 << 20;
const WASM_PAGE = 65_536;
const MAX_PAGES = 65_536;

/** The one WebAssembly API used (the project's TypeScript libraries leave WebAssembly out). */
declare const WebAssembly: {
  Memory: new (descriptor: { initial: number; maximum: number; shared: true }) => { readonly buffer: SharedArrayBuffer };
};
