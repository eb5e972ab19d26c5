import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { anvilOn, PortTaken, type Anvil } from '../../../../http/clients/anvil.js';

describe('anvilOn', () => {
  let holder: Server | undefined;
  let anvil: Anvil | undefined;
  afterEach(async () => {
    await anvil?.stop();
    anvil = undefined;
    await new Promise((r) => (holder ? holder.close(r) : r(undefined)));
    holder = undefined;
  });

  it('behavior: rejects with PortTaken when another process answers on the port, though it answers a JSON-RPC POST with 200', async () => {
    // As a test's webhook receiver on the port: it answers anything.
    holder = createServer((_req, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","id":1,"result":"0x539"}'),
    );
    await new Promise<void>((r) => holder!.listen(0, '127.0.0.1', r));
    const port = (holder.address() as AddressInfo).port;
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
