import type { Watchlist } from '../match/watchlist.js';
import type { Kv } from '../ports.js';
import type { ChangeEffects } from '../streams/control-plane.js';
import { xpubCountKey, xpubKey, type StoredXpub } from '../streams/xpub-record.js';
import { deriveWindow, XpubWindows, type Used, type WindowDeriver } from './xpub-windows.js';

/** Derives on the calling thread (until the server's worker pool is wired: deriveWith). */
const HERE: WindowDeriver = { derive: async (task) => deriveWindow(task) };

/**
 * The xpubs of every Bitcoin stream, wired to the watchlist: their windows are
 * rebuilt at start from `streamXpubs` and the indexes used so far
 * (`xpubUsed`, written each time a window moves on, so a restart watches what
 * was watched before), and every change recompiles the chain's filter set.
 */
export class BitcoinWallets {
  private deriver = HERE;
  /** Told when a stream's derived keys change: the watchlist given to `watch`. */
  private watchlist: Pick<Watchlist, 'derivedChanged'> = { derivedChanged: () => {} };
  /** Windows of added xpubs being derived, by `streamId/xpubId`: one removed meanwhile is not installed. */
  private readonly deriving = new Map<string, object>();

  constructor(
    private readonly kv: Kv,
    readonly windows: XpubWindows,
  ) {}

  /** Where an added xpub's window is derived from now on (the server's worker pool). */
  deriveWith(deriver: WindowDeriver): void {
    this.deriver = deriver;
  }

  load(): void {
    const counts = new Map<string, number>();
    const keys = new Map<string, string>();
    for (const { key, value } of this.kv.range<StoredXpub>('streamXpubs')) {
      this.windows.add(value.streamId, { id: value.id, xpub: value.xpub }, this.kv.get<Used>('xpubUsed', key));
      counts.set(value.streamId, (counts.get(value.streamId) ?? 0) + 1);
      keys.set(xpubKey(value.streamId, value.xpub), value.id);
    }
    this.index(counts, keys);
  }

  /**
   * `xpubKeys` made to agree with `streamXpubs` (which an older chainpost, or a directory from before that
   * table, wrote without it): each key's id and each stream's count, by which an add finds what it needs.
   */
  private index(counts: Map<string, number>, keys: Map<string, string>): void {
    const want = new Map<string, string | number>(keys);
    for (const [streamId, n] of counts) want.set(xpubCountKey(streamId), n);
    this.kv.transact(() => {
      for (const { key, value } of this.kv.range<string | number>('xpubKeys')) {
        if (want.get(key) === value) want.delete(key);
        else if (!want.has(key)) this.kv.remove('xpubKeys', key);
      }
      for (const [key, value] of want) this.kv.put('xpubKeys', key, value);
    });
  }

  /**
   * The family's reactions to applied changes (engine/streams/change-effects.ts), on every node: a removed stream's
   * or xpub's windows go, their used indexes with the change; an added xpub's window is derived, and the change's
   * writer answers once it is watched. The watchlist is told from now on when a stream's derived keys change.
   */
  effects(watchlist: Pick<Watchlist, 'derivedChanged'>): ChangeEffects {
    this.watchlist = watchlist;
    return {
      'stream.remove': ({ id }) => {
        this.kv.removeRange('xpubUsed', { start: `${id}/`, end: `${id}/\uffff`, limit: Number.MAX_SAFE_INTEGER });
        return () => {
          for (const key of this.deriving.keys()) if (key.startsWith(`${id}/`)) this.deriving.delete(key);
          this.windows.removeStream(id);
        };
      },
      'xpub.add': (_change, { xpub, added }) => {
        const { streamId, id } = xpub;
        if (added) return () => this.derive(streamId, { id, xpub: xpub.xpub }).then(() => this.watchlist.derivedChanged(streamId));
      },
      'xpub.remove': ({ streamId, xpubId }) => {
        this.kv.remove('xpubUsed', `${streamId}/${xpubId}`);
        return () => {
          this.deriving.delete(`${streamId}/${xpubId}`);
          this.windows.remove(streamId, xpubId);
          this.watchlist.derivedChanged(streamId);
        };
      },
    };
  }

  /** An added xpub's window, derived off the serving thread (by the deriver) and then watched, unless it went meanwhile. */
  private async derive(streamId: string, ref: { id: string; xpub: string }): Promise<void> {
    const key = `${streamId}/${ref.id}`;
    const mine = {};
    this.deriving.set(key, mine);
    try {
      const window = await this.deriver.derive({ xpub: ref.xpub, used: [-1, -1], gap: this.windows.gap });
      if (this.deriving.get(key) === mine) this.windows.add(streamId, ref, [-1, -1], window);
    } finally {
      if (this.deriving.get(key) === mine) this.deriving.delete(key);
    }
  }

  /** A stream's windows moved on (a block or a mempool transaction used their addresses): kept, and compiled for what comes next. */
  grown(streamId: string): void {
    this.kv.transact(() => {
      for (const { value } of this.kv.range<StoredXpub>('streamXpubs', { start: `${streamId}/`, end: `${streamId}/\uffff` })) {
        const used = this.windows.used(streamId, value.id);
        if (used !== undefined) this.kv.put('xpubUsed', `${streamId}/${value.id}`, used);
      }
    });
    this.watchlist.derivedChanged(streamId);
  }
}

/** The Bitcoin family's state: its streams' xpubs, and the addresses they derive (compiled with the streams' own). */
export interface BitcoinState {
  wallets: BitcoinWallets;
  derived(id: string): Uint8Array;
}
