import type { Clock } from '../clock.js';
import type { StreamLimits } from '../streams/limits.js';
import type { Dispatcher } from '../delivery/dispatcher.js';
import { uuidV4 } from '../delivery/ids.js';
import { notFound, overLimit } from '../errors.js';
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

  /**
   * Adds a (valid, by the schema) key; the same key again answers the record it already has. Keyed reads only
   * (the stream, the key's entry and the stream's count in `xpubKeys`): an add costs the same whatever the
   * stream holds. Answers once the key's gap window is watched.
   */
  async addXpub(tenant: string, streamId: string, xpub: string): Promise<XpubView> {
    let added: StoredXpub | undefined;
    const record = await this.kv.transactAsync(() => {
      this.get(tenant, streamId);
      const knownId = this.kv.get<string>('xpubKeys', xpubKey(streamId, xpub));
      const same = knownId === undefined ? undefined : this.kv.get<StoredXpub>('streamXpubs', `${streamId}/${knownId}`);
      if (same !== undefined) return same;
      const held = this.kv.get<number>('xpubKeys', xpubCountKey(streamId)) ?? 0;
      if (held >= this.limits.xpubs) throw overLimit('xpub', 'a stream holds', this.limits.xpubs, 'CHAINPOST_MAX_XPUBS');
      const now = this.clock.now();
      added = { id: uuidV4(), streamId, xpub, createdAt: now, updatedAt: now };
      this.kv.put('streamXpubs', `${streamId}/${added.id}`, added);
      this.kv.put('xpubKeys', xpubKey(streamId, xpub), added.id);
      this.kv.put('xpubKeys', xpubCountKey(streamId), held + 1);
      return added;
    });
    if (added !== undefined) await this.watch?.xpubsChanged?.(streamId, [{ id: added.id, xpub }], []);
    return xpubView(record);
  }

  listXpubs(tenant: string, streamId: string, limit: number, cursor: string | null): Page<XpubView> {
    this.get(tenant, streamId);
    return page<StoredXpub, XpubView>(this.kv, 'streamXpubs', `${streamId}/`, { limit, cursor, map: xpubView });
  }

  async removeXpub(tenant: string, streamId: string, xpubId: string): Promise<true> {
    const key = `${streamId}/${xpubId}`;
    await this.kv.transactAsync(() => {
      this.get(tenant, streamId);
      const x = this.kv.get<StoredXpub>('streamXpubs', key);
      if (x === undefined) throw notFound(`no xpub ${xpubId} on stream ${streamId}`);
      this.kv.remove('streamXpubs', key);
      this.kv.remove('xpubKeys', xpubKey(streamId, x.xpub));
      const left = (this.kv.get<number>('xpubKeys', xpubCountKey(streamId)) ?? 1) - 1;
      if (left > 0) this.kv.put('xpubKeys', xpubCountKey(streamId), left);
      else this.kv.remove('xpubKeys', xpubCountKey(streamId));
    });
    await this.watch?.xpubsChanged?.(streamId, [], [xpubId]);
    return true;
  }
}

/** `xpubKeys`: a key's id on its stream, under `streamId/xpub`. */
export const xpubKey = (streamId: string, xpub: string): string => `${streamId}/${xpub}`;
/** `xpubKeys`: how many keys the stream holds, under `streamId/` (no key is empty). */
export const xpubCountKey = (streamId: string): string => `${streamId}/`;
