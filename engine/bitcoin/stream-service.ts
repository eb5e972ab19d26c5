import type { Clock } from '../clock.js';
import type { StreamLimits } from '../config.js';
import type { Dispatcher } from '../delivery/dispatcher.js';
import { uuidV4 } from '../delivery/ids.js';
import { notFound } from '../errors.js';
import { page, type Page } from '../page.js';
import type { TargetPolicy } from '../net/targets.js';
import type { Kv } from '../ports.js';
import { FamilyStreams, type StreamWatch } from '../streams/resources.js';
import type { FollowedChains } from '../streams/unfollowed.js';
import { BITCOIN_STREAMS, type BitcoinStreamDefinition } from './stream.js';

/** An extended public key on a stream, as stored in `streamXpubs` under `streamId/xpubId` (times in ms). */
export interface StoredXpub {
  id: string;
  streamId: string;
  xpub: string;
  createdAt: number;
  updatedAt: number;
}

/** BitcoinXpubType: the stored record with ISO date-times. */
export type XpubView = Omit<StoredXpub, 'createdAt' | 'updatedAt'> & { createdAt: string; updatedAt: string };

const xpubView = (x: StoredXpub): XpubView => ({ ...x, createdAt: new Date(x.createdAt).toISOString(), updatedAt: new Date(x.updatedAt).toISOString() });

/**
 * Bitcoin streams: the shared resources plus xpubs. The watchlist derives an
 * xpub's addresses (and keeps its gap window); they are not the stream's
 * addresses, so amountOfAddresses counts only those added through /address.
 */
export class BitcoinStreams extends FamilyStreams<BitcoinStreamDefinition> {
  constructor(kv: Kv, clock: Clock, dispatcher: Dispatcher, watch: StreamWatch | undefined, limits?: StreamLimits, targets?: TargetPolicy, followed?: FollowedChains) {
    super(kv, clock, dispatcher, watch, BITCOIN_STREAMS, limits, targets, followed);
  }

  /** Adds a (valid, by the schema) key; the same key again answers the record it already has. */
  addXpub(tenant: string, streamId: string, xpub: string): XpubView {
    let added: StoredXpub | undefined;
    const record = this.kv.transact(() => {
      this.get(tenant, streamId);
      const same = this.xpubsOf(streamId).find((x) => x.xpub === xpub);
      if (same !== undefined) return same;
      const now = this.clock.now();
      added = { id: uuidV4(), streamId, xpub, createdAt: now, updatedAt: now };
      this.kv.put('streamXpubs', `${streamId}/${added.id}`, added);
      return added;
    });
    if (added !== undefined) this.watch?.xpubsChanged?.(streamId, [{ id: added.id, xpub }], []);
    return xpubView(record);
  }

  listXpubs(tenant: string, streamId: string, limit: number, cursor: string | null): Page<XpubView> {
    this.get(tenant, streamId);
    return page<StoredXpub, XpubView>(this.kv, 'streamXpubs', `${streamId}/`, { limit, cursor, map: xpubView });
  }

  removeXpub(tenant: string, streamId: string, xpubId: string): true {
    const key = `${streamId}/${xpubId}`;
    this.kv.transact(() => {
      this.get(tenant, streamId);
      if (!this.kv.has('streamXpubs', key)) throw notFound(`no xpub ${xpubId} on stream ${streamId}`);
      this.kv.remove('streamXpubs', key);
    });
    this.watch?.xpubsChanged?.(streamId, [], [xpubId]);
    return true;
  }

  private xpubsOf(streamId: string): StoredXpub[] {
    return this.kv.range<StoredXpub>('streamXpubs', { start: `${streamId}/`, end: `${streamId}/\uffff` }).map((e) => e.value);
  }
}
