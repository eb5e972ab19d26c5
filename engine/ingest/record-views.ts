/**
 * The two ways to a block record's view, for every family's record: `of` bytes read from the store (copied:
 * such a read is valid only until the next one), and `shared` bytes the caller owns and leaves unchanged (a
 * matched block's copy), one view per bytes, so every stream built from the block shares what it decoded.
 */
export function recordViews<V>(over: (bytes: Uint8Array) => V): { of(stored: Uint8Array): V; shared(owned: Uint8Array): V } {
  const views = new WeakMap<Uint8Array, V>();
  return {
    of: (stored) => over(Uint8Array.prototype.slice.call(stored)),
    shared(owned) {
      let view = views.get(owned);
      if (view === undefined) views.set(owned, (view = over(owned)));
      return view;
    },
  };
}
