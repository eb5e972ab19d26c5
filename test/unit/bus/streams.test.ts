import { JetStreamApiCodes, JetStreamApiError, type JetStreamManager } from '@nats-io/jetstream';
import { describe, expect, it } from 'vitest';
import { CONTROL_STREAM, ensureControlStream, onceAssigned, type WaitClock } from '../../../bus/streams.js';

const notFound = (): JetStreamApiError =>
  new JetStreamApiError({ code: 404, err_code: JetStreamApiCodes.StreamNotFound, description: 'stream not found' });

/** A clock that moves only by the waits asked of it, each noted: nothing sleeps. */
function noSleep(): WaitClock & { waits: number[] } {
  let now = 0;
  const waits: number[] = [];
  return { waits, now: () => now, sleep: async (ms) => void (waits.push(ms), (now += ms)) };
}

describe('a stream just made on a NATS cluster', () => {
  it('is read again while JetStream answers it is not found, and any other failure is thrown at once', async () => {
    let asked = 0;
    expect(await onceAssigned(async () => (++asked < 3 ? Promise.reject(notFound()) : 'info'), 10_000, noSleep())).toBe('info');
    expect(asked).toBe(3);

    asked = 0;
    const timeout = new Error('timeout');
    await expect(onceAssigned(async () => (++asked, Promise.reject(timeout)), 10_000, noSleep())).rejects.toBe(timeout);
    expect(asked).toBe(1);
  });

  it('gives up once the wait passed, with the last answer, its waits growing and the last cut to what was left', async () => {
    const time = noSleep();
    let asked = 0;
    await expect(onceAssigned(() => (++asked, Promise.reject(notFound())), 1_000, time)).rejects.toThrow('stream not found');
    expect(time.waits).toEqual([100, 200, 400, 300]);
    expect(time.now()).toBe(1_000);
    expect(asked).toBe(5);
  });

  it('is read again and brought to this node’s replicas when its create is refused because it was made meanwhile', async () => {
    // Another node made it with one copy between this node's "not found" and its create (nats-server's 10058).
    const calls: string[] = [];
    let made = false;
    const jsm = {
      streams: {
        info: async (name: string) => {
          calls.push(`info ${name}`);
          if (!made) throw notFound();
          return { config: { name, num_replicas: 1, max_age: 0 } };
        },
        add: async (config: { name: string; num_replicas: number }) => {
          calls.push(`add ${config.name} ${config.num_replicas}`);
          made = true;
          throw new JetStreamApiError({ code: 400, err_code: 10058, description: 'stream name already in use' });
        },
        update: async (name: string, config: { num_replicas: number }) => void calls.push(`update ${name} ${config.num_replicas}`),
      },
    } as unknown as JetStreamManager;
    await ensureControlStream(jsm, { replicas: 3 });
    expect(calls).toEqual([`info ${CONTROL_STREAM}`, `add ${CONTROL_STREAM} 3`, `info ${CONTROL_STREAM}`, `update ${CONTROL_STREAM} 3`]);
  });
});
