import type { Logger } from '../log.js';
import type { Kv } from '../ports.js';
import { streamKey, type DeliveryStream, type DeliveryStreams } from '../delivery/stream-port.js';
import { type ControlPlane, StoreControlPlane } from './control-plane.js';
import type { StoredStream } from './model.js';
import { settingsOf } from './settings.js';

export interface DeliveryStreamsOptions {
  /** Where a tenant's first settings (its signing secret) are written; default: the store's own control plane. */
  plane?: ControlPlane;
  /**
   * A cluster node's: the states delivery writes here (error, terminated) are written through `plane` too, so every
   * node shows them; a write the log refuses (it is unreachable) is logged here.
   */
  sharedStates?: Logger;
}

/**
 * Delivery's view of the streams in the store: their records, and each tenant's signing secret (made at first use
 * through the control plane, so every node of a cluster signs with the same one).
 */
export function deliveryStreams(
  kv: Kv,
  { plane = new StoreControlPlane(kv), sharedStates: log }: DeliveryStreamsOptions = {},
): DeliveryStreams {
  const streams: DeliveryStreams = {
    all: () => kv.range<StoredStream>('streams').map((e) => e.value),
    get: (tenant, id) => kv.get<StoredStream>('streams', streamKey(tenant, id)),
    // The record delivery was answered, whole, with the state it changed.
    putState: (s) => kv.put('streams', streamKey(s.tenantId, s.id), s),
    secret: async (tenant) => (await settingsOf(kv, plane, tenant)).secretKey,
  };
  if (log === undefined) return streams;
  const share = (s: DeliveryStream): void => {
    if (s.status !== 'error' && s.status !== 'terminated') return;
    const { tenantId: tenant, id, status, statusMessage, updatedAt: at } = s;
    plane.write({ kind: 'stream.health', tenant, id, status, statusMessage, errorSince: s.errorSince ?? at, at }).catch((err: unknown) =>
      log.warn("a stream's state could not be written to the control log: other nodes do not show it", {
        streamId: id,
        status,
        error: err instanceof Error ? err.message : String(err),
      }),
    );
  };
  return { ...streams, stateCommitted: share };
}
