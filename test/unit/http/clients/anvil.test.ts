import { afterEach, describe, expect, it } from 'vitest';
import { anvilOn, PortTaken, type Anvil } from '../../../../http/clients/anvil.js';
import { startReceiver } from '../../../receiver.js';

describe('anvilOn', () => {
  let holder: Awaited<ReturnType<typeof startReceiver>> | undefined;
  let anvil: Anvil | undefined;
  afterEach(async () => {
    await anvil?.stop();
    anvil = undefined;
    await holder?.close();
    holder = undefined;
  });

  it('behavior: rejects with PortTaken when another process answers on the port, though it answers a POST with 200 (a test’s webhook receiver)', async () => {
    // A test's webhook receiver on the port: it answers anything with 200.
    holder = await startReceiver();
    const port = Number(new URL(holder.url).port);
    await expect(anvilOn(port)).rejects.toBeInstanceOf(PortTaken);
  });

  it('behavior: on port 0, resolves on the port the system gave anvil, which answers at once', async () => {
    anvil = await anvilOn(0, { chainId: 31337 });
    expect(anvil.port).toBeGreaterThan(0);
    expect(anvil.url).toBe(`http://127.0.0.1:${anvil.port}`);
    const res = await fetch(anvil.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}',
    });
    expect(await res.json()).toMatchObject({ result: '0x7a69' });
  });
});
