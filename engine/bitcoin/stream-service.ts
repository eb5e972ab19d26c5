import { z } from 'zod';
import type { Clock } from '../clock.js';
import type { StreamLimits } from '../streams/limits.js';
import type { Dispatcher } from '../delivery/dispatcher.js';
import { uuidV4 } from '../delivery/ids.js';
import { page, type Page } from '../page.js';
import type { TargetPolicy } from '../net/targets.js';
import type { Kv } from '../ports.js';
import type { ControlPlane } from '../streams/control-plane.js';
import { FamilyStreams } from '../streams/resources.js';
import type { FollowedChains } from '../streams/unfollowed.js';
import { BITCOIN_STREAMS, type BitcoinStreamDefinition } from './stream.js';
import type { StoredXpub } from '../streams/xpub-record.js';
import { pageOf } from '../streams/responses.js';

/** BitcoinXpubType: the stored record with ISO date-times. */
export type XpubView = Omit<StoredXpub, 'createdAt' | 'updatedAt'> & { createdAt: string; updatedAt: string };

const xpubView = (x: StoredXpub): XpubView => ({
  ...x,
  createdAt: new Date(x.createdAt).toISOString(),
  updatedAt: new Date(x.updatedAt).toISOString(),
});

/** BitcoinXpubType as the API answers it (xpubView): POST …/:id/xpub, and each of GET …/:id/xpub's page. */
const xpubAnswer = z.object({
  id: z.string(),
  streamId: z.string(),
  xpub: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
}) satisfies z.ZodType<XpubView>;

/** The answers of a stream's xpubs (its sub-resource, engine/bitcoin/index.ts): added, a page, removed (`true`). */
export const xpubAnswers = { add: xpubAnswer, list: pageOf(xpubAnswer), remove: z.literal(true) };

/**
 * Bitcoin streams: the shared resources plus xpubs. The watchlist derives an
 * xpub's addresses (and keeps its gap window); they are not the stream's
 * addresses, so amountOfAddresses counts only those added through /address.
 */
export class BitcoinStreams extends FamilyStreams<BitcoinStreamDefinition> {
  constructor(
    kv: Kv,
    clock: Clock,
    dispatcher: Dispatcher,
    limits?: StreamLimits,
    targets?: TargetPolicy,
    followed?: FollowedChains,
    plane?: ControlPlane,
  ) {
    super(kv, clock, dispatcher, BITCOIN_STREAMS, limits, targets, followed, plane);
  }

  /**
   * Adds a (valid, by the schema) key; the same key again answers the record it already has. Keyed reads only
   * (the stream, the key's entry and the stream's count in `xpubKeys`): an add costs the same whatever the
   * stream holds. Answers once the key's gap window is watched (the family's reaction to the change, BitcoinWallets.effects).
   */
  async addXpub(tenant: string, streamId: string, xpub: string): Promise<XpubView> {
    const now = this.clock.now();
    const candidate: StoredXpub = { id: uuidV4(), streamId, xpub, createdAt: now, updatedAt: now };
    const { xpub: record } = await this.plane.write({ kind: 'xpub.add', tenant, xpub: candidate, maxXpubs: this.limits.xpubs });
    return xpubView(record);
  }

  listXpubs(tenant: string, streamId: string, limit: number, cursor: string | null): Page<XpubView> {
    this.get(tenant, streamId);
    return page<StoredXpub, XpubView>(this.kv, 'streamXpubs', `${streamId}/`, { limit, cursor, map: xpubView });
  }

  async removeXpub(tenant: string, streamId: string, xpubId: string): Promise<true> {
    await this.plane.write({ kind: 'xpub.remove', tenant, streamId, xpubId });
    return true;
  }
}
