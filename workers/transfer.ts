import { move, transferableSymbol, valueSymbol } from 'piscina';

/** Byte arrays that are the whole of their own ArrayBuffer: moving those moves nothing else (a Buffer from Node's shared pool is never one). */
export function ownBuffers(arrays: ReadonlyArray<Uint8Array | null>): ArrayBuffer[] {
  const own = (b: Uint8Array | null): b is Uint8Array =>
    b !== null && b.byteOffset === 0 && b.byteLength === b.buffer.byteLength && b.buffer instanceof ArrayBuffer;
  return [...new Set(arrays.filter(own).map((b) => b.buffer as ArrayBuffer))];
}

/** A task's result whose byte arrays are moved to the other thread, not copied (piscina's movable). */
export function movable<T>(value: T, arrays: ReadonlyArray<Uint8Array | null>): T {
  return move({ [transferableSymbol]: ownBuffers(arrays), [valueSymbol]: value } as never) as unknown as T;
}
