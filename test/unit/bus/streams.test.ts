import { JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream';
import { describe, expect, it } from 'vitest';
import { onceAssigned } from '../../../bus/streams.js';

const notFound = (): JetStreamApiError =>
  new JetStreamApiError({ code: 404, err_code: JetStreamApiCodes.StreamNotFound, description: 'stream not found' });

describe('a stream just made on a NATS cluster', () => {
  it('is read again while JetStream answers it is not found, and any other failure is thrown at once', async () => {
    let asked = 0;
    expect(await onceAssigned(async () => (++asked < 3 ? Promise.reject(notFound()) : 'info'))).toBe('info');
    expect(asked).toBe(3);

    asked = 0;
    const timeout = new Error('timeout');
    await expect(onceAssigned(async () => (++asked, Promise.reject(timeout)))).rejects.toBe(timeout);
    expect(asked).toBe(1);
  });

  it('gives up once the wait passed, with the last answer', async () => {
    const from = performance.now();
    await expect(onceAssigned(() => Promise.reject(notFound()), 300)).rejects.toThrow('stream not found');
    expect(performance.now() - from).toBeGreaterThanOrEqual(295);
  });
});
