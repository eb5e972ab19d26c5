import { describe, expect, it } from 'vitest';
import { apiCaller, silentServer } from './helpers.js';

describe('apiCaller', () => {
  it('behavior: rejects naming the call when the server takes the connection and never answers, within its bound', async () => {
    const server = await silentServer();
    try {
      const call = apiCaller(server.url, 'cpk_test', 300);
      const started = performance.now();
      await expect(call('/health')).rejects.toThrow('GET /health was not answered within 300 ms');
      expect(performance.now() - started).toBeLessThan(5_000);
    } finally {
      await server.close();
    }
  });
});
