import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAnvil, type Anvil } from '../http/clients/anvil.js';
import { freePort } from './kit/free-port.js';
// The built binary: its stdout and stderr as a user (or a log collector) reads them, searched for secrets.
import { advance, cliInProcess, startBinary, stopAndClean, tempDir, until, type Running } from './helpers.js';
import { nodeProxy, type NodeProxy } from './node-proxy.js';
import { startReceiver, startSmtp } from './receiver.js';

/**
 * Secrets never reach a log line: the real server follows a real anvil through a node URL with
 * `user:pass@`, e-mails through an SMTP server that wants a password, and is called with its API
 * keys in node-access paths (both ports), a bad key, a failing node and alerts; every line it
 * printed (stdout and stderr, at debug level) is then scanned for each secret.
 */
const API_KEY = 'cpk_SECRETapikey_0123456789abcdefXYZ';
const NODE_PASS = 'nodePASSsecret7731';
const SMTP_PASS = 'smtpPASSsecret4412';

describe('secrets never logged', () => {
  let anvil: Anvil;
  let proxy: NodeProxy;
  let rx: Awaited<ReturnType<typeof startReceiver>>;
  let smtp: Awaited<ReturnType<typeof startSmtp>>;
  let s: Running;
  let rpcPort: number;
  let nodeUrl: URL;

  beforeAll(async () => {
    anvil = await startAnvil({ chainId: 1337 });
    proxy = await nodeProxy(anvil.url);
    rx = await startReceiver();
    smtp = await startSmtp({ user: 'mailer', pass: SMTP_PASS });
    nodeUrl = new URL(proxy.url);
    nodeUrl.username = 'nodeuser';
    nodeUrl.password = NODE_PASS;
    rpcPort = await freePort();
    s = await startBinary({
      CHAINPOST_API_KEY: API_KEY,
      CHAINPOST_CHAINS: `0x539=${nodeUrl}`,
      CHAINPOST_RPC_PORT: String(rpcPort),
      CHAINPOST_SMTP_URL: smtp.url,
      CHAINPOST_ALERT_EMAIL: 'ops@example.org',
      CHAINPOST_TEST_CLOCK: '1',
      CHAINPOST_POLL_MS: '20',
      CHAINPOST_RATE_LIMIT: '0',
      // Every logger call writes.
      CHAINPOST_LOG_LEVEL: 'debug',
    });
  }, 60_000);
  afterAll(async () => {
    await stopAndClean(s);
    await proxy?.close();
    await anvil?.stop();
    await rx?.close();
    await smtp?.close();
  });

  const rpc = async (url: string, method = 'eth_blockNumber', params: unknown[] = [], verb = 'POST') => {
    const res = await fetch(url, {
      method: verb,
      headers: { 'content-type': 'application/json' },
      ...(verb === 'POST' ? { body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) } : {}),
    });
    return { status: res.status, body: await res.text() };
  };
  const health = async () => (await s.call('/health')).body.chains[0];

  it('logs no API key, streams secret, node or SMTP password, and /health shows the node without its user or password', async () => {
    expect(await until(async () => (await health())?.head >= 0 && (await health()).nodeHead >= 0, 15_000)).toBe(true);
    const other = (await cliInProcess(['keys', 'create', '--name', 'other'], s.dir)).stdout.trim().split('\n').at(-1)!;
    const { secretKey } = (await s.call('/settings')).body;
    expect(secretKey).toMatch(/.{16,}/);

    // /health: the node's scheme and host, never its user or password.
    expect((await health()).node).toBe(`${nodeUrl.protocol}//${nodeUrl.host}`);
    expect(JSON.stringify((await s.call('/health')).body)).not.toMatch(new RegExp(`${NODE_PASS}|nodeuser`));

    // Node access with the key in the path, on both ports; a bad key; a wrong method and a trailing segment (no route).
    expect((await rpc(`${s.url}/rpc/0x539/${API_KEY}`)).status).toBe(200);
    expect((await rpc(`http://127.0.0.1:${rpcPort}/0x539/${other}`)).status).toBe(200);
    expect((await rpc(`${s.url}/rpc/0x539/cpk_not_a_key_0123456789abcdef`)).status).toBe(401);
    expect((await rpc(`${s.url}/rpc/0x539/${API_KEY}`, 'eth_blockNumber', [], 'GET')).status).toBe(404);
    expect((await rpc(`${s.url}/rpc/0x539/${API_KEY}/more`)).status).toBe(404);
    expect((await rpc(`http://127.0.0.1:${rpcPort}/0x539/${other}`, 'eth_blockNumber', [], 'GET')).status).toBe(404);
    // The key in headers, and as a bearer.
    expect((await s.call('/streams/evm', { headers: { authorization: `Bearer ${other}` } })).status).toBe(200);

    // A failing node: node access answers an error, the follower logs its failures.
    proxy.failWith(502);
    const failed = await rpc(`${s.url}/rpc/0x539/${API_KEY}`, 'eth_getBalance', ['0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266', 'latest']);
    expect(failed.status).not.toBe(200);
    expect(await until(async () => (await health()).upstream === 'failing', 15_000)).toBe(true);
    expect(JSON.stringify((await s.call('/health')).body)).not.toContain(NODE_PASS);
    proxy.failWith(undefined);
    expect(await until(async () => (await health()).upstream === 'ok', 15_000)).toBe(true);

    // Alerts e-mailed through the SMTP server that wants the password: 31 streams of one URL fail once each.
    const ids: string[] = [];
    rx.state.answer = (r) => (ids.includes(r.body.streamId) ? 500 : 200);
    for (let i = 0; i < 31; i++)
      ids.push(
        (
          await s.call('/streams/evm', {
            method: 'PUT',
            json: { webhookUrl: `${rx.url}?alerts`, chainIds: ['0x1'], includeNativeTxs: true },
          })
        ).body.id,
      );
    for (const id of ids)
      expect(
        (
          await s.call(`/admin/streams/${id}/webhooks`, {
            method: 'POST',
            json: { webhooks: [{ chainId: '0x1', block: { number: '1', hash: '0x', timestamp: '0' } }] },
          })
        ).status,
      ).toBe(200);
    await advance(s, 0);
    expect(await until(() => smtp.mails.length >= 31, 15_000), `alerts e-mailed:\n${s.output().slice(-2000)}`).toBe(true);

    await s.stop('SIGTERM');
    const lines = s
      .output()
      .split('\n')
      .filter((l) => l !== '');
    const secrets = {
      API_KEY,
      other,
      secretKey,
      NODE_PASS,
      SMTP_PASS,
      nodeBasicAuth: Buffer.from(`nodeuser:${NODE_PASS}`).toString('base64'),
      smtpUrl: smtp.url,
    };
    for (const [name, secret] of Object.entries(secrets)) {
      const leaks = lines.filter((l) => l.includes(secret) || l.includes(encodeURIComponent(secret)));
      expect(leaks, `${name} in the log`).toEqual([]);
    }
    // The scan read the lines of what was exercised: the masked paths, the node's failures, the alerts.
    const json = lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
    const paths = json.filter((l) => l['msg'] === 'request').map((l) => l['path']);
    expect(paths).toContain(`/rpc/0x539/${API_KEY.slice(0, 4)}…`);
    expect(paths).toContain(`/rpc/0x539/${API_KEY.slice(0, 4)}…/more`);
    expect(paths).toContain(`/0x539/${other.slice(0, 4)}…`);
    expect(paths).toContain('/rpc/0x539/cpk_…');
    expect(json.some((l) => l['msg'] === 'upstream failing')).toBe(true);
    expect(json.filter((l) => l['msg'] === 'stream alert e-mailed')).toHaveLength(31);
    expect(json.some((l) => l['msg'] === 'stopped')).toBe(true);
  }, 120_000);

  it('names a bad SMTP or node URL at the start without its password', async () => {
    for (const env of [
      { CHAINPOST_SMTP_URL: `http://mailer:${SMTP_PASS}@127.0.0.1:25` },
      { CHAINPOST_CHAINS: `0x539=ftp://nodeuser:${NODE_PASS}@127.0.0.1:1` },
    ] as Array<Record<string, string>>) {
      const dir = tempDir();
      try {
        const err = await startBinary(env, dir).then(
          () => undefined,
          (e: Error) => e.message,
        );
        expect(err).toContain(Object.keys(env)[0]);
        expect(err).toContain(':***@127.0.0.1');
        expect(err).not.toContain(SMTP_PASS);
        expect(err).not.toContain(NODE_PASS);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
  });
});
