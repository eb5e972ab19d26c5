import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { Kv } from '../ports.js';
import { streamKey, type DeliveryStream, type DeliveryStreams } from '../delivery/stream-port.js';
import { type ControlPlane, StoreControlPlane, type StreamHealthSet } from './control-plane.js';
import type { StoredStream } from './model.js';
import { settingsOf } from './settings.js';

export interface DeliveryStreamsOptions {
  /** Where a tenant's first settings (its signing secret) are written; default: the store's own control plane. */
  plane?: ControlPlane;
  /**
   * A cluster node's: the states delivery writes here (error, terminated) are written through `plane` too, so every
   * node shows them. A write the log refuses (the bus unreachable) is logged to `log` and written again every
   * SHARE_AGAIN_MS of `clock` until it is, as long as the stream is still in that state here.
   */
  sharedStates?: { log: Logger; clock: Clock };
}

/** How long a stream state the control log refused waits before it is written again, ms of service time. */
export const SHARE_AGAIN_MS = 1_000;

/**
 * Delivery's view of the streams in the store: their records, and each tenant's signing secret (made at first use
 * through the control plane, so every node of a cluster signs with the same one).
 */
export function deliveryStreams(
  kv: Kv,
  { plane = new StoreControlPlane(kv), sharedStates: shared }: DeliveryStreamsOptions = {},
): DeliveryStreams {
  const streams: DeliveryStreams = {
    all: () => kv.range<StoredStream>('streams').map((e) => e.value),
    get: (tenant, id) => kv.get<StoredStream>('streams', streamKey(tenant, id)),
    // The record delivery was answered, whole, with the state it changed.
    putState: (s) => kv.put('streams', streamKey(s.tenantId, s.id), s),
    secret: async (tenant) => (await settingsOf(kv, plane, tenant)).secretKey,
  };
  if (shared === undefined) return streams;
  const { log, clock } = shared;
  /** Whether the stream is still in the state `change` sets (else a later change superseded it: not written again). */
  const still = (change: StreamHealthSet): boolean => {
    try {
      const s = kv.get<StoredStream>('streams', streamKey(change.tenant, change.id));
      return s?.status === change.status && s.errorSince === change.errorSince;
    } catch {
      return false; // the store closed: the node stopped
    }
  };
  const write = (change: StreamHealthSet, attempt: number): void => {
    plane.write(change).then(
      () => {
        if (attempt > 1) log.info("a stream's state reached the control log", { streamId: change.id, status: change.status, attempt });
      },
      (err: unknown) => {
        // Decided while the bus was down: the other nodes, and the partition's next owner, learn it once it is back.
        if (attempt === 1)
          log.warn("a stream's state could not be written to the control log: written again until it is", {
            streamId: change.id,
            status: change.status,
            error: err instanceof Error ? err.message : String(err),
          });
        clock.at(clock.now() + SHARE_AGAIN_MS, () => {
          if (still(change)) write(change, attempt + 1);
        });
      },
    );
  };
  const share = (s: DeliveryStream): void => {
    if (s.status !== 'error' && s.status !== 'terminated') return;
    const { tenantId: tenant, id, status, statusMessage, updatedAt: at } = s;
    write({ kind: 'stream.health', tenant, id, status, statusMessage, errorSince: s.errorSince ?? at, at }, 1);
  };
  return { ...streams, stateCommitted: share };
}
