import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_BYTES, TIMEOUT_MS, undiciMetadataFetcher } from '../http/clients/metadata-fetch.js';
import { systemResolver } from '../http/clients/dns.js';
import { TargetPolicy } from '../engine/net/targets.js';

/**
 * The NFT metadata fetcher (http/clients/metadata-fetch.ts) against a real HTTP
 * server on 127.0.0.1: loopback refused unless allowed (by address and by a
 * name that resolves to it; the whole policy is test/ssrf.test.ts), the 1 MiB cap with and without
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
    else if (req.url === '/hang')
      res.writeHead(200).write('{'); // never ends
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

  it('refuses 127.0.0.1 by address and by name unless private addresses are allowed', async () => {
    const strict = undiciMetadataFetcher({ targets: new TargetPolicy('deny', systemResolver) });
    expect(await strict.get(`${base}/doc.json`)).toEqual({
      error: 'metadata URL: host 127.0.0.1 is a loopback address; CHAINPOST_PRIVATE_TARGETS=allow permits it',
    });
    const byName = await strict.get(`${base.replace('127.0.0.1', 'localhost')}/doc.json`);
    expect('error' in byName && byName.error).toMatch(
      /^metadata URL: host localhost resolves to (127\.0\.0\.1|::1), a loopback address; CHAINPOST_PRIVATE_TARGETS=allow permits it$/,
    );
    expect(await strict.get('file:///etc/passwd')).toEqual({ error: 'not an http(s) URL: file:' });
    await strict.close();
    const local = undiciMetadataFetcher({ targets: new TargetPolicy('allow', systemResolver) });
    expect(await local.get(`${base}/doc.json`)).toEqual({ body: '{"name":"ok"}' });
    await local.close();
  });

  it('stops at 1 MiB, declared or not; follows up to 3 redirects; reports statuses; gives up after the time limit', async () => {
    const f = undiciMetadataFetcher({ targets: new TargetPolicy('allow', systemResolver), timeoutMs: 300 });
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
