import { DERIVED_KEY_BYTES as KEY_BYTES, NO_DERIVED } from '../match/ports.js';
import { addressKey } from './filter.js';
import { deriveAddresses, parseExtendedKey, type Branch, type ExtendedKey } from './xpub.js';

/**
 * The addresses each stream's xpubs watch: on the receive (…/0/i) and change
 * (…/1/i) branch alike, every index up to `gap` past the last one used, so a
 * wallet's next addresses are watched before they are used. A use of an index
 * above the last used one moves it on: more addresses are derived, and the caller
 * recompiles the chain's filter set (and looks at the block again: the next
 * address may be used in the very same block).
 *
 * Adding or removing one xpub touches only that xpub's addresses, whatever else the stream holds: the
 * stream's key list (keysOf) is built again only when asked for, once per change (at the next compile).
 */
export interface XpubRef {
  /** The xpub's id on its stream. */
  id: string;
  xpub: string;
}

/** What a derived address is: whose, where on the wallet, and its key in the probe column (hex). */
export interface DerivedAddress {
  xpubId: string;
  xpub: string;
  address: string;
  branch: Branch;
  index: number;
}

/** The highest index used on each branch (−1: none yet). */
export type Used = [receive: number, change: number];

/** What a window is derived from: the key, the indexes used so far, and the gap. */
export interface WindowTask {
  xpub: string;
  used: Used;
  gap: number;
}

/** A window derived ahead (in the worker pool: app/worker.ts): per branch, its addresses from index 0 and their keys, end to end. */
export interface DerivedWindow {
  addresses: [receive: string[], change: string[]];
  keys: [receive: Uint8Array, change: Uint8Array];
}

/** Derives an added xpub's gap window (deriveWindow): in the worker pool (app/worker.ts), off the serving thread. */
export interface WindowDeriver {
  derive(task: WindowTask): Promise<DerivedWindow>;
}

/** The addresses a window watches, each branch up to `gap` past its last used index. */
export function deriveWindow(task: WindowTask): DerivedWindow {
  const key = parseExtendedKey(task.xpub);
  const [receive, change] = ([0, 1] as const).map((branch) => deriveRange(key, branch, 0, task.used[branch] + 1 + task.gap));
  return { addresses: [receive!.addresses, change!.addresses], keys: [receive!.keys, change!.keys] };
}

function deriveRange(key: ExtendedKey, branch: Branch, from: number, count: number): { addresses: string[]; keys: Uint8Array } {
  const addresses = deriveAddresses(key, branch, from, count);
  const keys = new Uint8Array(addresses.length * KEY_BYTES);
  addresses.forEach((a, i) => keys.set(addressKey(a), i * KEY_BYTES));
  return { addresses, keys };
}

interface Window {
  ref: XpubRef;
  /** Parsed when the window first moves on (a window derived ahead has not needed it). */
  key: ExtendedKey | undefined;
  used: Used;
  /** Per branch, how many addresses are derived (indexes 0 … derived − 1). */
  derived: [number, number];
  /** The probe-column keys (hex) of its derived addresses, to take them out when it goes. */
  keys: string[];
  /** The same keys' bytes, a run per range derived: what keysOf puts together. */
  bytes: Uint8Array[];
}

interface StreamWindows {
  /** Per xpub id. */
  windows: Map<string, Window>;
  /** Each derived address by its key (hex). */
  byKey: Map<string, DerivedAddress>;
  /** The windows' keys end to end, built when asked for after a change. */
  keys: Uint8Array | undefined;
}

export class XpubWindows {
  private readonly streams = new Map<string, StreamWindows>();

  constructor(readonly gap: number) {}

  /**
   * An xpub joins a stream (or is loaded at start, with the indexes used so far), its window derived here or,
   * when given, ahead (deriveWindow).
   */
  add(streamId: string, ref: XpubRef, used: Used = [-1, -1], ahead?: DerivedWindow): void {
    const w: Window = { ref, key: undefined, used: [...used], derived: [0, 0], keys: [], bytes: [] };
    let s = this.streams.get(streamId);
    if (s === undefined) this.streams.set(streamId, (s = { windows: new Map(), byKey: new Map(), keys: undefined }));
    const was = s.windows.get(ref.id);
    if (was !== undefined) this.drop(s, was);
    s.windows.set(ref.id, w);
    if (ahead !== undefined) {
      for (const branch of [0, 1] as const) this.install(s, w, branch, 0, ahead.addresses[branch], ahead.keys[branch]);
      s.keys = undefined;
    }
    this.extend(s, w);
  }

  remove(streamId: string, xpubId: string): void {
    const s = this.streams.get(streamId);
    const w = s?.windows.get(xpubId);
    if (s === undefined || w === undefined) return;
    s.windows.delete(xpubId);
    this.drop(s, w);
  }

  removeStream(streamId: string): void {
    this.streams.delete(streamId);
  }

  /** The probe-column keys of every address the stream's xpubs watch now, 32 bytes each, end to end. */
  keysOf(streamId: string): Uint8Array {
    const s = this.streams.get(streamId);
    if (s === undefined) return NO_DERIVED;
    // The windows' runs, a few thousand copies for forty thousand keys (a thousand xpubs).
    s.keys ??= Buffer.concat([...s.windows.values()].flatMap((w) => w.bytes));
    return s.keys;
  }

  /** The derived address with this probe-column key (hex), if one of the stream's xpubs watches it. */
  lookup(streamId: string, keyHex: string): DerivedAddress | undefined {
    return this.streams.get(streamId)?.byKey.get(keyHex);
  }

  /** The indexes used so far of an xpub (what is stored to rebuild the window at start). */
  used(streamId: string, xpubId: string): Used | undefined {
    return this.streams.get(streamId)?.windows.get(xpubId)?.used;
  }

  /**
   * A transaction used a derived address: the window moves on when that index is the highest used. True
   * when new addresses were derived (the filter set must be compiled again).
   */
  markUsed(streamId: string, d: DerivedAddress): boolean {
    const s = this.streams.get(streamId);
    const w = s?.windows.get(d.xpubId);
    if (s === undefined || w === undefined || d.index <= w.used[d.branch]) return false;
    w.used[d.branch] = d.index;
    return this.extend(s, w);
  }

  private drop(s: StreamWindows, w: Window): void {
    for (const k of w.keys) if (s.byKey.get(k)?.xpubId === w.ref.id) s.byKey.delete(k);
    s.keys = undefined;
  }

  /** Derives each branch up to `gap` past its last used index; true when anything was derived. */
  private extend(s: StreamWindows, w: Window): boolean {
    let grew = false;
    for (const branch of [0, 1] as const) {
      const want = w.used[branch] + 1 + this.gap;
      const from = w.derived[branch];
      if (want <= from) continue;
      const { addresses, keys } = deriveRange((w.key ??= parseExtendedKey(w.ref.xpub)), branch, from, want - from);
      this.install(s, w, branch, from, addresses, keys);
      grew = true;
    }
    if (grew) s.keys = undefined;
    return grew;
  }

  /** Addresses `from` … of a branch of the window, derived (with their keys, end to end), now watched. */
  private install(s: StreamWindows, w: Window, branch: Branch, from: number, addresses: readonly string[], keys: Uint8Array): void {
    const bytes = Buffer.from(keys.buffer, keys.byteOffset, keys.byteLength);
    addresses.forEach((address, k) => {
      const hex = bytes.toString('hex', k * KEY_BYTES, (k + 1) * KEY_BYTES);
      s.byKey.set(hex, { xpubId: w.ref.id, xpub: w.ref.xpub, address, branch, index: from + k });
      w.keys.push(hex);
    });
    w.bytes.push(keys);
    w.derived[branch] = from + addresses.length;
  }
}
