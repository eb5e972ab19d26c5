import { addressKey } from './filter.js';
import { deriveAddresses, parseExtendedKey, type Branch, type ExtendedKey } from './xpub.js';

/**
 * The addresses each stream's xpubs watch: on the receive (…/0/i) and change
 * (…/1/i) branch alike, every index up to `gap` past the last one used, so a
 * wallet's next addresses are watched before they are used. A use of an index
 * above the last used one moves it on: more addresses are derived, and the caller
 * recompiles the chain's filter set (and looks at the block again: the next
 * address may be used in the very same block).
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

interface Window {
  ref: XpubRef;
  key: ExtendedKey;
  used: Used;
  /** Per branch, how many addresses are derived (indexes 0 … derived − 1). */
  derived: [number, number];
}

export class XpubWindows {
  /** Per stream, per xpub id. */
  private readonly windows = new Map<string, Map<string, Window>>();
  /** Per stream, each derived address by its key (hex). */
  private readonly byKey = new Map<string, Map<string, DerivedAddress>>();
  private readonly keys = new Map<string, Uint8Array[]>();

  constructor(private readonly gap: number) {}

  /** An xpub joins a stream (or is loaded at start, with the indexes used so far). */
  add(streamId: string, ref: XpubRef, used: Used = [-1, -1]): void {
    const w: Window = { ref, key: parseExtendedKey(ref.xpub), used: [...used], derived: [0, 0] };
    let map = this.windows.get(streamId);
    if (map === undefined) this.windows.set(streamId, (map = new Map()));
    map.set(ref.id, w);
    this.extend(streamId, w);
  }

  remove(streamId: string, xpubId: string): void {
    const map = this.windows.get(streamId);
    if (map?.delete(xpubId) !== true) return;
    const byKey = this.byKey.get(streamId)!;
    for (const [k, d] of byKey) if (d.xpubId === xpubId) byKey.delete(k);
    this.keys.set(streamId, [...byKey.keys()].map((k) => Buffer.from(k, 'hex')));
  }

  removeStream(streamId: string): void {
    this.windows.delete(streamId);
    this.byKey.delete(streamId);
    this.keys.delete(streamId);
  }

  /** The probe-column keys of every address the stream's xpubs watch now. */
  keysOf(streamId: string): readonly Uint8Array[] {
    return this.keys.get(streamId) ?? [];
  }

  /** The derived address with this probe-column key (hex), if one of the stream's xpubs watches it. */
  lookup(streamId: string, keyHex: string): DerivedAddress | undefined {
    return this.byKey.get(streamId)?.get(keyHex);
  }

  /** The indexes used so far of an xpub (what is stored to rebuild the window at start). */
  used(streamId: string, xpubId: string): Used | undefined {
    return this.windows.get(streamId)?.get(xpubId)?.used;
  }

  /**
   * A transaction used a derived address: the window moves on when that index is the highest used. True
   * when new addresses were derived (the filter set must be compiled again).
   */
  markUsed(streamId: string, d: DerivedAddress): boolean {
    const w = this.windows.get(streamId)?.get(d.xpubId);
    if (w === undefined || d.index <= w.used[d.branch]) return false;
    w.used[d.branch] = d.index;
    return this.extend(streamId, w);
  }

  /** Derives each branch up to `gap` past its last used index; true when anything was derived. */
  private extend(streamId: string, w: Window): boolean {
    let byKey = this.byKey.get(streamId);
    if (byKey === undefined) this.byKey.set(streamId, (byKey = new Map()));
    let grew = false;
    for (const branch of [0, 1] as const) {
      const want = w.used[branch] + 1 + this.gap;
      const from = w.derived[branch];
      if (want <= from) continue;
      deriveAddresses(w.key, branch, from, want - from).forEach((address, k) => {
        byKey.set(Buffer.from(addressKey(address)).toString('hex'), { xpubId: w.ref.id, xpub: w.ref.xpub, address, branch, index: from + k });
      });
      w.derived[branch] = want;
      grew = true;
    }
    if (grew) this.keys.set(streamId, [...byKey.keys()].map((k) => Buffer.from(k, 'hex')));
    return grew;
  }
}
