import { createServer, type AddressInfo, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { apiCaller } from './helpers.js';

describe('apiCaller', () => {
  it('behavior: rejects naming the call when the server takes the connection and never answers, within its bound', async () => {
    const held: Socket[] = [];
    const server = createServer((socket) => void held.push(socket));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const call = apiCaller(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, 'cpk_test', 300);
      const started = performance.now();
      await expect(call('/health')).rejects.toThrow('GET /health was not answered within 300 ms');
      expect(performance.now() - started).toBeLessThan(5_000);
    } finally {
      for (const s of held) s.destroy();
      await new Promise((r) => server.close(r));
    }
  });
});
