import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { ServiceClock } from '../../../../engine/clock.js';
import { unavailable } from '../../../../engine/errors.js';
import { jsonLogger } from '../../../../engine/log.js';
import { type Change, type ControlPlane, StoreControlPlane } from '../../../../engine/streams/control-plane.js';
import { SHARE_AGAIN_MS, deliveryStreams } from '../../../../engine/streams/delivery-streams.js';
import type { DeliveryStream } from '../../../../engine/delivery/stream-port.js';
import type { StoredStream } from '../../../../engine/streams/model.js';
import { openStore, type Store } from '../../../../storage/env.js';
import { lmdbKeyStore } from '../../../../storage/keys.js';
import { manualTicker, tempDir, until } from '../../../helpers.js';
import { storedStream } from '../../../stored-stream.js';

/**
 * A cluster node's delivery writes the stream states its rules decide (error, terminated) through the control log
 * too: one the log refuses (the bus down) is written again until it is, unless the stream left that state meanwhile.
 * Two real LMDB stores: this node's, and the other node's, which applies what reaches the log.
 */
const T0 = Date.UTC(2026, 0, 1);
const TENANT = 't_shared';
const stores: Store[] = [];
const open = (): Store => {
  const s = openStore(tempDir());
  stores.push(s);
  return s;
};
afterEach(async () => {
  for (const s of stores.splice(0)) {
    await s.close();
    rmSync(s.path, { recursive: true, force: true });
  }
});

/** This node and the other, each with the stream; the log reaches the other while `down` is false. */
async function nodes() {
  const [here, there] = [open(), open()];
  const [herePlane, therePlane] = [here, there].map((s) => new StoreControlPlane(s, lmdbKeyStore(s)));
  for (const p of [herePlane!, therePlane!])
    await p.write({ kind: 'stream.create', stream: storedStream(TENANT, 's1', T0), maxStreams: 10 });
  const bus = { down: true, writes: 0 };
  const log: ControlPlane = {
    write: async <C extends Change>(change: C) => {
      bus.writes++;
      if (bus.down) throw unavailable("the cluster's message bus (NATS) is unreachable", 5);
      await herePlane!.write(change);
      return therePlane!.write(change);
    },
  };
  const { ticker, pass } = manualTicker();
  const clock = new ServiceClock(ticker, T0 + 1_000);
  const lines: string[] = [];
  const streams = deliveryStreams(here, {
    plane: log,
    sharedStates: {
      log: jsonLogger(
        (l) => lines.push(l),
        () => T0,
        'info',
      ),
      clock,
    },
  });
  /** The rules put the stream in error here, committed. */
  const toError = (): DeliveryStream => {
    const s = streams.get(TENANT, 's1')!;
    Object.assign(s, { status: 'error', statusMessage: 'Stream in error: test', errorSince: clock.now(), updatedAt: clock.now() });
    here.transact(() => streams.putState(s));
    streams.stateCommitted!(s);
    return s;
  };
  const settle = () => new Promise((resolve) => setImmediate(resolve));
  return { here, there, herePlane: herePlane!, bus, clock, pass, lines, toError, settle };
}

describe('the stream states a cluster node’s delivery decides', () => {
  it('are written to the control log again until it takes them: the other node then shows the error, with its instant', async () => {
    const n = await nodes();
    const decided = n.toError();
    await n.settle();
    expect(n.bus.writes).toBe(1);
    expect(n.there.get<StoredStream>('streams', `${TENANT}/s1`)?.status).toBe('active');
    expect(n.lines.filter((l) => l.includes('could not be written to the control log'))).toHaveLength(1);
    // Still down a second on: tried again, logged once.
    await n.pass(SHARE_AGAIN_MS);
    await n.settle();
    expect(n.bus.writes).toBe(2);
    n.bus.down = false;
    await n.pass(SHARE_AGAIN_MS);
    await n.settle();
    expect(n.bus.writes).toBe(3);
    expect(await until(() => n.there.get<StoredStream>('streams', `${TENANT}/s1`)?.status === 'error', 2_000)).toBe(true);
    expect(n.there.get<StoredStream>('streams', `${TENANT}/s1`)?.errorSince).toBe(decided.errorSince);
    expect(n.lines.filter((l) => l.includes('reached the control log'))).toHaveLength(1);
    await n.pass(10 * SHARE_AGAIN_MS);
    expect(n.bus.writes).toBe(3);
  });

  it('are not written again once the stream left that state here (set active meanwhile)', async () => {
    const n = await nodes();
    n.toError();
    await n.settle();
    await n.herePlane.write({
      kind: 'stream.status',
      tenant: TENANT,
      id: 's1',
      family: 'evm',
      unmarked: true,
      status: 'active',
      at: T0 + 5_000,
    });
    n.bus.down = false;
    await n.pass(SHARE_AGAIN_MS);
    await n.settle();
    expect(n.bus.writes).toBe(1);
    expect(n.there.get<StoredStream>('streams', `${TENANT}/s1`)?.status).toBe('active');
  });
});
