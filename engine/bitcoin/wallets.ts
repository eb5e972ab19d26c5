import type { Watchlist } from '../match/watchlist.js';
import type { Kv } from '../ports.js';
import type { StreamWatch } from '../streams/resources.js';
import type { StoredXpub } from './stream-service.js';
import { XpubWindows, type Used } from './xpub-windows.js';

/**
 * The xpubs of every Bitcoin stream, wired to the watchlist: their windows are
 * rebuilt at start from `streamXpubs` and the indexes used so far
 * (`xpubUsed`, written each time a window moves on, so a restart watches what
 * was watched before), and every change recompiles the chain's filter set.
 */
export class BitcoinWallets {
  constructor(
    private readonly kv: Kv,
    readonly windows: XpubWindows,
    private readonly watchlist: Pick<Watchlist, 'derivedChanged'>,
  ) {}

  load(): void {
    for (const { key, value } of this.kv.range<StoredXpub>('streamXpubs')) {
      this.windows.add(value.streamId, { id: value.id, xpub: value.xpub }, this.kv.get<Used>('xpubUsed', key));
    }
  }

  /** The streams service's port: the watchlist's, with xpubs going to their windows. */
  watch(watchlist: StreamWatch): StreamWatch {
    return {
      stream: (s) => watchlist.stream(s),
      addressesChanged: (id, added, removed) => watchlist.addressesChanged(id, added, removed),
      removed: (id) => {
        watchlist.removed(id);
        this.windows.removeStream(id);
        this.kv.transact(() => this.kv.removeRange('xpubUsed', { start: `${id}/`, end: `${id}/\uffff`, limit: Number.MAX_SAFE_INTEGER }));
      },
      xpubsChanged: (id, added, removed) => {
        for (const x of added) this.windows.add(id, x);
        for (const xpubId of removed) this.windows.remove(id, xpubId);
        if (removed.length > 0) this.kv.transact(() => removed.forEach((xpubId) => this.kv.remove('xpubUsed', `${id}/${xpubId}`)));
        this.watchlist.derivedChanged(id);
      },
    };
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
