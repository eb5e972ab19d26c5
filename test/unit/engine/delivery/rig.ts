import { rmSync } from 'node:fs';
import { ServiceClock } from '../../../../engine/clock.js';
import {
  createDelivery,
  type DeliveryGate,
  type DeliveryParts,
  type DispatcherOptions,
  type UnitCapture,
} from '../../../../engine/delivery/dispatcher.js';
import { systemTicker } from '../../../../app/process.js';
import { TargetPolicy } from '../../../../engine/net/targets.js';
import { deliveryStreams } from '../../../../engine/streams/delivery-streams.js';
import type { Kv } from '../../../../engine/ports.js';
import { systemResolver } from '../../../../http/clients/dns.js';
import { undiciSender } from '../../../../http/clients/webhook.js';
import { openStore, type Store } from '../../../../storage/env.js';
import { tempDir } from '../../../helpers.js';
import { quietLog } from '../../../kit/quiet-log.js';

/**
 * What engine tests build streams on: a real LMDB store on a temp directory, the service clock from `start`, a
 * sender that may reach the receivers on loopback, and a dispatcher writing through `wrap(store)` (the store
 * itself unless a test watches its writes), with `opts.partitionOf` (absent: every stream in partition 0) and a capture
 * made over that store (`opts.capture`), and `gate` (the partitions a cluster node owns). `close` stops them and removes the directory.
 */
export function deliveryRig(
  start: number,
  { capture, ...opts }: Partial<DispatcherOptions> & Pick<DeliveryParts, 'partitionOf'> & { capture?: (kv: Kv) => UnitCapture } = {},
  wrap: (store: Store) => Kv = (store) => store,
  gate?: DeliveryGate,
) {
  const store = openStore(tempDir());
  const clock = new ServiceClock(systemTicker, start);
  // As the server wires them: the sender's pool holds as many connections as the dispatcher sends at once to one receiver.
  const sender = undiciSender({
    targets: new TargetPolicy('allow', systemResolver),
    ticker: systemTicker,
    ...(opts.maxInFlightPerOrigin === undefined ? {} : { connectionsPerOrigin: opts.maxInFlightPerOrigin }),
  });
  const kv = wrap(store);
  const dispatcher = createDelivery({
    kv,
    clock,
    sender,
    log: quietLog(() => clock.now()),
    streams: deliveryStreams(kv),
    alertEmail: undefined,
    awaitDeliveriesOnWake: true,
    ...opts,
    ...(capture === undefined ? {} : { capture: capture(kv) }),
    ...(gate === undefined ? {} : { gate }),
  });
  return {
    store,
    kv,
    clock,
    dispatcher,
    async close(): Promise<void> {
      await dispatcher.stop();
      await sender.close();
      await store.close();
      rmSync(store.path, { recursive: true, force: true });
    },
  };
}
