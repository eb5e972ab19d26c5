import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChainpost, stopAndClean, until, type Running } from './helpers.js';

/** The access log's line for the request sent with `x-request-id: id`, once written. */
async function loggedLine(s: Running, id: string): Promise<Record<string, unknown>> {
  let line: string | undefined;
  expect(
    await until(
      () =>
        (line = s
          .output()
          .split('\n')
          .find((l) => l.includes(`"reqId":"${id}"`))) !== undefined,
      5_000,
    ),
  ).toBe(true);
  return JSON.parse(line!) as Record<string, unknown>;
}

const healthWith = async (s: Running, id: string, forwardedFor: string): Promise<void> => {
  expect((await s.call('/health', { headers: { 'x-request-id': id, 'x-forwarded-for': forwardedFor } })).status).toBe(200);
};

describe('the access log without CHAINPOST_TRUSTED_PROXIES', () => {
  let s: Running;
  beforeAll(async () => {
    s = await startChainpost();
  });
  afterAll(() => stopAndClean(s));

  it('logs the peer as the client, whatever X-Forwarded-For says', async () => {
    await healthWith(s, 'untrusted-1', '203.0.113.7');
    expect(await loggedLine(s, 'untrusted-1')).toMatchObject({ msg: 'request', client: '127.0.0.1' });
  });
});

describe('the access log behind a trusted proxy (CHAINPOST_TRUSTED_PROXIES=127.0.0.1)', () => {
  let s: Running;
  beforeAll(async () => {
    s = await startChainpost({ CHAINPOST_TRUSTED_PROXIES: '127.0.0.1' });
  });
  afterAll(() => stopAndClean(s));

  it('logs the client the proxy forwarded for', async () => {
    await healthWith(s, 'trusted-1', '203.0.113.7');
    expect(await loggedLine(s, 'trusted-1')).toMatchObject({ client: '203.0.113.7' });
  });

  it('logs the right-most forwarded address that is not a trusted proxy, not what the client put before it', async () => {
    await healthWith(s, 'trusted-2', '198.51.100.1, 203.0.113.7, 127.0.0.1');
    expect(await loggedLine(s, 'trusted-2')).toMatchObject({ client: '203.0.113.7' });
  });

  it("reads every X-Forwarded-For header, so a client's own header passed on beside the proxy's is not taken for the client", async () => {
    const socket = connect(s.port, '127.0.0.1');
    socket.end(
      'GET /health HTTP/1.1\r\nhost: x\r\nx-request-id: trusted-3\r\nx-forwarded-for: 198.51.100.1\r\nx-forwarded-for: 203.0.113.7\r\nconnection: close\r\n\r\n',
    );
    const answer = await new Promise<string>((done) => {
      let text = '';
      socket.on('data', (d: Buffer) => (text += d.toString()));
      socket.on('close', () => done(text));
    });
    expect(answer).toMatch(/^HTTP\/1\.1 200/);
    expect(await loggedLine(s, 'trusted-3')).toMatchObject({ client: '203.0.113.7' });
  });
});

describe('CHAINPOST_TRUSTED_PROXIES at the start', () => {
  it('refuses an entry that is no address or CIDR range, naming the variable', async () => {
    await expect(startChainpost({ CHAINPOST_TRUSTED_PROXIES: '127.0.0.1,10.0.0.0/33' })).rejects.toThrow(
      'CHAINPOST_TRUSTED_PROXIES: expected IP addresses and CIDR ranges (such as 10.0.0.0/8) separated by commas, got "10.0.0.0/33"',
    );
  });
});
