import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isPrivateAddress, MAX_BYTES, TIMEOUT_MS, undiciMetadataFetcher } from '../http/clients/metadata-fetch.js';

/**
 * The NFT metadata fetcher (http/clients/metadata-fetch.ts) against a real HTTP
 * server on 127.0.0.1: private-network addresses refused unless allowed (by
 * address and by a name that resolves to one), the 1 MiB cap with and without
 * a declared length, the time limit, redirects and statuses.
 */

let server: Server;
let base: string;
const BIG = 'x'.repeat(MAX_BYTES + 1);

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === '/doc.json') res.writeHead(200, { 'content-type': 'application/json' }).end('{"name":"ok"}');
    else if (req.url === '/declared') res.writeHead(200, { 'content-length': String(BIG.length) }).end(BIG);
    else if (req.url === '/chunked') {
      res.writeHead(200);
      // No content-length: the cap must hold while reading.
      for (let i = 0; i < 5; i++) res.write('y'.repeat(MAX_BYTES / 4));
      res.end();
    } else if (req.url === '/redirect') res.writeHead(302, { location: '/doc.json' }).end();
    else if (req.url === '/loop') res.writeHead(302, { location: '/loop' }).end();
    else if (req.url === '/hang') res.writeHead(200).write('{'); // never ends
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

describe('the NFT metadata fetcher', () => {
  it('has the documented limits: 1 MiB and 5 s', () => {
    expect([MAX_BYTES, TIMEOUT_MS]).toEqual([1024 * 1024, 5000]);
  });

  it('tells private-network addresses from public ones', () => {
    for (const ip of ['127.0.0.1', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '::1', '::', 'fd00::1', 'fe80::1', '::ffff:127.0.0.1', '::ffff:10.0.0.1']) expect(isPrivateAddress(ip), ip).toBe(true);
    for (const ip of ['8.8.8.8', '172.32.0.1', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8']) expect(isPrivateAddress(ip), ip).toBe(false);
  });

  it('refuses 127.0.0.1 by address and by name unless private addresses are allowed', async () => {
    const strict = undiciMetadataFetcher({ allowPrivate: false });
    expect(await strict.get(`${base}/doc.json`)).toEqual({ error: '127.0.0.1 is a private-network address' });
    const byName = await strict.get(`${base.replace('127.0.0.1', 'localhost')}/doc.json`);
    expect('error' in byName && byName.error).toMatch(/localhost resolves to (127\.0\.0\.1|::1), a private-network address/);
    expect(await strict.get('file:///etc/passwd')).toEqual({ error: 'not an http(s) URL: file:' });
    await strict.close();
    const local = undiciMetadataFetcher({ allowPrivate: true });
    expect(await local.get(`${base}/doc.json`)).toEqual({ body: '{"name":"ok"}' });
    await local.close();
  });

  it('stops at 1 MiB, declared or not; follows up to 3 redirects; reports statuses; gives up after the time limit', async () => {
    const f = undiciMetadataFetcher({ allowPrivate: true, timeoutMs: 300 });
    expect(await f.get(`${base}/declared`)).toEqual({ error: `larger than ${MAX_BYTES} bytes` });
    expect(await f.get(`${base}/chunked`)).toEqual({ error: `larger than ${MAX_BYTES} bytes` });
    expect(await f.get(`${base}/redirect`)).toEqual({ body: '{"name":"ok"}' });
    expect(await f.get(`${base}/loop`)).toEqual({ error: 'more than 3 redirects' });
    expect(await f.get(`${base}/missing`)).toEqual({ error: 'HTTP 404' });
    const started = performance.now();
    expect(await f.get(`${base}/hang`)).toEqual({ error: 'no answer within 0.3 s' });
    expect(performance.now() - started).toBeLessThan(2_000);
    await f.close();
  });
});
