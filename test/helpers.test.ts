import { describe, expect, it } from 'vitest';
import { apiCaller } from './helpers.js';
import { startReceiver } from './receiver.js';

describe('apiCaller', () => {
  it('behavior: rejects naming the call when the server takes the request and never answers, within its bound', async () => {
    const server = await startReceiver();
    server.state.answer = () => 'hang';
    try {
      const call = apiCaller(new URL(server.url).origin, 'cpk_test', 300);
      const started = performance.now();
      // A body: an empty one is the receiver's test webhook, which it answers.
      await expect(call('/streams/evm', { method: 'PUT', json: {} })).rejects.toThrow('PUT /streams/evm was not answered within 300 ms');
      expect(performance.now() - started).toBeLessThan(5_000);
    } finally {
      await server.close();
    }
  });
});
