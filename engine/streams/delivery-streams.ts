import type { Kv } from '../ports.js';
import { streamKey, type DeliveryStreams } from '../delivery/stream-port.js';
import type { StoredStream } from './model.js';
import { settingsOf } from './settings.js';

/** Delivery's view of the streams in the store: their records, and each tenant's signing secret (made at first use). */
export function deliveryStreams(kv: Kv): DeliveryStreams {
  return {
    all: () => kv.range<StoredStream>('streams').map((e) => e.value),
    get: (tenant, id) => kv.get<StoredStream>('streams', streamKey(tenant, id)),
    // The record delivery was answered, whole, with the state it changed.
    putState: (s) => kv.put('streams', streamKey(s.tenantId, s.id), s),
    secret: (tenant) => settingsOf(kv, tenant).secretKey,
  };
}
