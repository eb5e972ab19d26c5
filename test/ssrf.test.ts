import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startAnvil, type Anvil } from '../http/clients/anvil.js';
import { freePort } from './kit/free-port.js';
import { undiciMetadataFetcher } from '../http/clients/metadata-fetch.js';
import { parseConfig } from '../engine/config/config.js';
import type { Service } from '../app/server.js';
import { TargetPolicy, type PrivateTargets } from '../engine/net/targets.js';
import type { Resolver } from '../engine/ports.js';
import { apiCaller, startChainpost, stopAndClean, TEST_KEY, tempDir, until, type Running } from './helpers.js';
import { startReceiver } from './receiver.js';
import { serverModule } from './in-process.js';
import { deploy, publicClient, write, type Deployed } from './contracts.js';
import { devnetApi } from './data-api.js';
import { A1, serverEnv } from './streams-harness.js';

/**
 * The SSRF guard end to end (docs/configuration.md, CHAINPOST_PRIVATE_TARGETS): the real server on a loopback port with
 * CHAINPOST_PRIVATE_TARGETS set, a real webhook receiver on 127.0.0.1, and a
 * resolver injected in place of the system's that answers what each test says
 * for hooks.example.test (a name no real resolver knows: whatever reaches the
 * receiver went through this resolver). With deny, a webhookUrl whose host
 * resolves to a loopback, private, metadata or IPv4-mapped address is refused
 * at create and update, a name that answers a public address when checked and a
 * private one when connected (DNS rebinding) is refused where the socket opens,
 * and a delivery to such a host fails into history; the receiver gets nothing.
 * With allow, the same name is delivered to. NFT metadata the same way: the
 * fetcher alone, and a token URI on anvil read by the server following it.
 */

const NAME = 'hooks.example.test';
const PUBLIC = '93.184.216.34';
const allowHint = 'CHAINPOST_PRIVATE_TARGETS=allow permits it';

/** Answers each name with the address lists given, one list per lookup, the last one from then on; counts lookups. */
function scriptedResolver() {
  const script = new Map<string, string[][]>();
  const lookups: string[] = [];
  const resolver: Resolver = {
    async lookup(host) {
      lookups.push(host);
      const lists = script.get(host);
      if (lists === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
      const list = lists.length > 1 ? lists.shift()! : lists[0]!;
      return list.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    },
  };
  return { resolver, lookups, answer: (host: string, ...lists: string[][]) => void script.set(host, lists) };
}

type Rx = Awaited<ReturnType<typeof startReceiver>>;
interface Served {
  service: Service;
  call: Running['call'];
}

/** The server in this process on a free loopback port, on the test clock, with `resolver` for every outbound name. */
async function serve(
  dir: string,
  mode: PrivateTargets,
  resolver: Resolver,
  more: Record<string, string> = { CHAINPOST_CHAINS: 'none', CHAINPOST_TEST_CLOCK: '1', CHAINPOST_NOW: '2026-11-22T12:00:00Z' },
): Promise<Served> {
  const port = await freePort();
  const env = {
    CHAINPOST_DATA: dir,
    CHAINPOST_PORT: String(port),
    CHAINPOST_API_KEY: TEST_KEY,
    CHAINPOST_RATE_LIMIT: '0',
    CHAINPOST_PRIVATE_TARGETS: mode,
    ...more,
  };
  const { startService } = await serverModule();
  const service = await startService({ config: parseConfig(env), out: () => {}, adapters: { resolver } });
  return { service, call: apiCaller(`http://127.0.0.1:${port}`, TEST_KEY) };
}

const hookUrl = (rx: Rx, host = NAME): string => rx.url.replace('127.0.0.1', host);
const evmStream = (webhookUrl: string) => ({ webhookUrl, chainIds: ['0x1'], includeNativeTxs: true, tag: 'ssrf' });
const webhook = {
  confirmed: false,
  chainId: '0x1',
  abi: [],
  block: { number: '7', hash: `0x${'07'.repeat(32)}`, timestamp: '1763812800' },
  logs: [],
  txs: [],
  txsInternal: [],
  erc20Transfers: [],
  erc20Approvals: [],
  nftTransfers: [],
  nftTokenApprovals: [],
  nftApprovals: { ERC721: [], ERC1155: [] },
  nativeBalances: [],
};

describe('webhook targets with CHAINPOST_PRIVATE_TARGETS=deny', () => {
  const dns = scriptedResolver();
  let rx: Rx;
  let s: Served;
  const dir = tempDir();
  beforeAll(async () => {
    rx = await startReceiver();
    s = await serve(dir, 'deny', dns.resolver);
  });
  afterAll(async () => {
    await s?.service.stop();
    await rx?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(() => void dns.lookups.splice(0));

  it('refuses a stream whose webhookUrl resolves to a loopback, private, metadata or IPv4-mapped address: 400 naming webhookUrl, nothing sent', async () => {
    for (const [address, kind] of [
      ['127.0.0.1', 'a loopback address'],
      ['10.0.0.5', 'a private address'],
      ['169.254.169.254', 'a cloud metadata address'],
      ['168.63.129.16', 'a cloud metadata address'],
      ['::ffff:127.0.0.1', 'a loopback address'],
      ['fd00:ec2::254', 'a cloud metadata address'],
    ] as const) {
      dns.answer(NAME, [address]);
      const r = await s.call('/streams/evm', { method: 'PUT', json: evmStream(hookUrl(rx)) });
      expect(r.status, address).toBe(400);
      expect(r.body).toEqual({
        message: `webhookUrl: host ${NAME} resolves to ${address}, ${kind}; ${allowHint}`,
        details: { field: 'webhookUrl' },
      });
    }
    // A name with a public and a private address is refused: the connection could go to either.
    dns.answer(NAME, [PUBLIC, '10.1.2.3']);
    expect((await s.call('/streams/solana', { method: 'PUT', json: { webhookUrl: hookUrl(rx) } })).body.message).toBe(
      `webhookUrl: host ${NAME} resolves to 10.1.2.3, a private address; ${allowHint}`,
    );
    // Addresses in the URL (Node connects to those without a lookup), in any spelling the URL parser accepts.
    for (const [host, shown] of [
      ['127.0.0.1', '127.0.0.1'],
      ['[::ffff:7f00:1]', '::ffff:7f00:1'],
      ['[::ffff:127.0.0.1]', '::ffff:7f00:1'],
      ['2130706433', '127.0.0.1'],
      ['[::1]', '::1'],
    ] as const) {
      const r = await s.call('/streams/evm', { method: 'PUT', json: evmStream(hookUrl(rx, host)) });
      expect(r.status, host).toBe(400);
      expect(r.body.details.field).toBe('webhookUrl');
      expect(r.body.message).toMatch(new RegExp(`^webhookUrl: host ${shown.replace(/\./g, '\\.')} is a loopback address; `));
    }
    expect(rx.received).toHaveLength(0);
    expect((await s.call('/streams/evm')).body.total).toBe(0);
  });

  it('refuses where the socket opens a name that answers a public address when checked and a private one when connected (DNS rebinding)', async () => {
    dns.answer(NAME, [PUBLIC], ['127.0.0.1']);
    const url = hookUrl(rx);
    const r = await s.call('/streams/evm', { method: 'PUT', json: evmStream(url) });
    expect(r.status).toBe(400);
    expect(r.body.message).toBe(
      `webhookUrl: the test webhook to ${url} was not accepted (webhookUrl: host ${NAME} resolves to 127.0.0.1, a loopback address; ${allowHint}); it must answer 200 within 10 s`,
    );
    // Checked once at create, once more by the connection: the second answer is the one refused.
    expect(dns.lookups).toEqual([NAME, NAME]);
    expect(rx.received).toHaveLength(0);
    expect((await s.call('/health')).status).toBe(200);
  });
});

describe('a stream made while private targets were allowed, delivered once they are denied', () => {
  const dns = scriptedResolver();
  let rx: Rx;
  const dir = tempDir();
  beforeAll(async () => {
    rx = await startReceiver();
  });
  afterAll(async () => {
    await rx?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('with allow, delivers through the resolver; with deny, the delivery fails into history naming why, and the receiver gets nothing', async () => {
    dns.answer(NAME, ['127.0.0.1']);
    const allowed = await serve(dir, 'allow', dns.resolver);
    let id: string;
    try {
      const made = await allowed.call('/streams/evm', { method: 'PUT', json: evmStream(hookUrl(rx)) });
      expect(made.status, JSON.stringify(made.body)).toBe(200);
      id = made.body.id;
      expect((await allowed.call(`/admin/streams/${id}/webhooks`, { method: 'POST', json: { webhooks: [webhook] } })).status).toBe(200);
      expect(await until(() => rx.webhooks().length === 1, 5_000)).toBe(true);
      expect(rx.webhooks()[0]!.headers.host).toBe(`${NAME}:${new URL(rx.url).port}`);
    } finally {
      await allowed.service.stop();
    }
    expect(rx.received.map((r) => r.test)).toEqual([true, false]);

    // The name now answers a private address (rebound, or the server moved off loopback).
    dns.answer(NAME, ['10.0.0.5']);
    const denied = await serve(dir, 'deny', dns.resolver);
    try {
      const why = `webhookUrl: host ${NAME} resolves to 10.0.0.5, a private address; ${allowHint}`;
      const update = await denied.call(`/streams/evm/${id}`, { method: 'POST', json: { description: 'moved' } });
      expect(update.status).toBe(400);
      expect(update.body).toEqual({ message: why, details: { field: 'webhookUrl' } });

      // The name answers 127.0.0.1 again, where the receiver listens: a delivery is refused at connect all the same.
      dns.answer(NAME, ['127.0.0.1']);
      expect(
        (
          await denied.call(`/admin/streams/${id}/webhooks`, {
            method: 'POST',
            json: { webhooks: [{ ...webhook, block: { ...webhook.block, number: '8' } }] },
          })
        ).status,
      ).toBe(200);
      const failed = async () =>
        (await denied.call('/history?limit=10')).body.result as Array<{
          streamId: string;
          errorMessage: string;
          delivered: boolean;
          payload: { block: { number: string } };
        }>;
      expect(await until(async () => (await failed()).length === 1, 5_000, 20)).toBe(true);
      expect(await failed()).toMatchObject([
        {
          streamId: id,
          delivered: false,
          errorMessage: `webhookUrl: host ${NAME} resolves to 127.0.0.1, a loopback address; ${allowHint}`,
          payload: { block: { number: '8' } },
        },
      ]);
      const logs = (await denied.call('/history/logs?limit=10')).body.result as Array<{ deliveryStatus: string; errorMessage: string }>;
      expect(logs.find((l) => l.deliveryStatus === 'failed')?.errorMessage).toBe(
        `webhookUrl: host ${NAME} resolves to 127.0.0.1, a loopback address; ${allowHint}`,
      );
      // Resuming a paused stream sends the test webhook: refused the same way.
      dns.answer(NAME, ['::ffff:a00:5']);
      expect((await denied.call(`/streams/evm/${id}/status`, { method: 'POST', json: { status: 'paused' } })).status).toBe(200);
      expect((await denied.call(`/streams/evm/${id}/status`, { method: 'POST', json: { status: 'active' } })).body).toEqual({
        message: `webhookUrl: host ${NAME} resolves to ::ffff:a00:5, a private address; ${allowHint}`,
        details: { field: 'webhookUrl' },
      });
      expect((await denied.call('/health')).status).toBe(200);
    } finally {
      await denied.service.stop();
    }
    expect(rx.received).toHaveLength(2);
  });
});

/** An HTTP server on 127.0.0.1 answering `doc` to every GET, keeping the paths asked for. */
async function docServer(doc: string): Promise<{ port: number; hits: string[]; close(): Promise<void> }> {
  const hits: string[] = [];
  const server: Server = createServer((req, res) => {
    hits.push(req.url!);
    res.writeHead(200, { 'content-type': 'application/json' }).end(doc);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    hits,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

describe('NFT metadata fetches with the same policy', () => {
  let docs: Awaited<ReturnType<typeof docServer>>;
  beforeAll(async () => {
    docs = await docServer('{"name":"ok"}');
  });
  afterAll(() => docs?.close());

  it('with deny, refuses a metadata URL whose host resolves to (or is) a non-public address; with allow, fetches it', async () => {
    const dns = scriptedResolver();
    const strict = undiciMetadataFetcher({ targets: new TargetPolicy('deny', dns.resolver) });
    try {
      for (const [address, kind] of [
        ['127.0.0.1', 'a loopback address'],
        ['10.0.0.5', 'a private address'],
        ['169.254.169.254', 'a cloud metadata address'],
        ['::ffff:127.0.0.1', 'a loopback address'],
      ] as const) {
        dns.answer('meta.example.test', [address]);
        expect(await strict.get(`http://meta.example.test:${docs.port}/doc.json`), address).toEqual({
          error: `metadata URL: host meta.example.test resolves to ${address}, ${kind}; ${allowHint}`,
        });
      }
      expect(await strict.get(`http://[::ffff:7f00:1]:${docs.port}/doc.json`)).toEqual({
        error: `metadata URL: host ::ffff:7f00:1 is a loopback address; ${allowHint}`,
      });
      expect(await strict.get(`http://169.254.169.254/latest/meta-data/`)).toEqual({
        error: `metadata URL: host 169.254.169.254 is a cloud metadata address; ${allowHint}`,
      });
    } finally {
      await strict.close();
    }
    expect(docs.hits).toEqual([]);
    const local = undiciMetadataFetcher({ targets: new TargetPolicy('allow', dns.resolver) });
    try {
      dns.answer('meta.example.test', ['127.0.0.1']);
      expect(await local.get(`http://meta.example.test:${docs.port}/doc.json`)).toEqual({ body: '{"name":"ok"}' });
    } finally {
      await local.close();
    }
    expect(docs.hits).toEqual(['/doc.json']);
  });
});

describe('NFT metadata through the real server following anvil', () => {
  let anvil: Anvil;
  let meta: Awaited<ReturnType<typeof docServer>>;
  let nft: Deployed;
  const dns = scriptedResolver();
  beforeAll(async () => {
    meta = await docServer('{"name":"One"}');
    anvil = await startAnvil({ chainId: 1337 });
    nft = await deploy(anvil.url, 'TestNFT', ['Test NFT', 'TNFT']);
    await write(anvil.url, { address: nft.address, abi: nft.abi, functionName: 'mint', args: [A1, 1n] });
    await write(anvil.url, {
      address: nft.address,
      abi: nft.abi,
      functionName: 'setTokenURI',
      args: [1n, `http://meta.example.test:${meta.port}/nft/1.json`],
    });
  }, 60_000);
  afterAll(async () => {
    await anvil?.stop();
    await meta?.close();
  });

  /** A server following anvil with `mode`, once it has ingested anvil's head: the token's resync answer (sync, so the fetch has ended). */
  const resyncWith = async (mode: PrivateTargets): Promise<string> => {
    const dir = tempDir();
    // From block 0: the token was minted before this server started.
    const s = await serve(dir, mode, dns.resolver, serverEnv(anvil, { CHAINPOST_START_BLOCKS: '0x539=0' }));
    try {
      const head = Number(await publicClient(anvil.url).getBlockNumber());
      expect(
        await until(async () => (((await s.call('/health')).body.chains as Array<{ head: number }>)[0]?.head ?? -1) >= head, 10_000, 20),
      ).toBe(true);
      const r = await s.call(devnetApi(`/nft/${nft.address}/1/metadata/resync`, 'flag=uri&mode=sync'));
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body.status as string;
    } finally {
      await s.service.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  };

  it('with deny, the token URI whose host resolves to a private address is not fetched, and says why; with allow, it is', async () => {
    dns.answer('meta.example.test', ['10.0.0.5']);
    expect(await resyncWith('deny')).toBe(
      `failed: metadata URL: host meta.example.test resolves to 10.0.0.5, a private address; ${allowHint}`,
    );
    dns.answer('meta.example.test', ['::ffff:127.0.0.1']);
    expect(await resyncWith('deny')).toBe(
      `failed: metadata URL: host meta.example.test resolves to ::ffff:127.0.0.1, a loopback address; ${allowHint}`,
    );
    expect(meta.hits).toEqual([]);
    dns.answer('meta.example.test', ['127.0.0.1']);
    expect(await resyncWith('allow')).toBe('Metadata synced');
    expect(meta.hits.length).toBeGreaterThan(0);
    expect(new Set(meta.hits)).toEqual(new Set(['/nft/1.json']));
  }, 60_000);
});

describe('the default on a loopback listener following a real chain', () => {
  let anvil: Anvil;
  let meta: Awaited<ReturnType<typeof docServer>>;
  let rx: Rx;
  let nft: Deployed;
  let s: Running | undefined;
  beforeAll(async () => {
    meta = await docServer('{"name":"Internal"}');
    rx = await startReceiver();
    // Mainnet's chain id, on loopback as a node behind the operator's network would be: the node URL is the
    // operator's (always reached); the URLs a tenant gives are not.
    anvil = await startAnvil({ chainId: 1 });
    nft = await deploy(anvil.url, 'TestNFT', ['Internal NFT', 'INT']);
    await write(anvil.url, { address: nft.address, abi: nft.abi, functionName: 'mint', args: [A1, 1n] });
    await write(anvil.url, {
      address: nft.address,
      abi: nft.abi,
      functionName: 'setTokenURI',
      args: [1n, `http://127.0.0.1:${meta.port}/internal/1.json`],
    });
    // CHAINPOST_PRIVATE_TARGETS unset (startChainpost allows them for the other tests).
    s = await startChainpost({
      CHAINPOST_CHAINS: `0x1=${anvil.url}`,
      CHAINPOST_START_BLOCKS: '0x1=0',
      CHAINPOST_POLL_MS: '250',
      CHAINPOST_RATE_LIMIT: '0',
      CHAINPOST_PRIVATE_TARGETS: '',
    });
  }, 60_000);
  afterAll(async () => {
    await stopAndClean(s);
    await anvil?.stop();
    await meta?.close();
    await rx?.close();
  });

  it('denies private targets: a loopback webhookUrl and a loopback token URI are refused naming the rule, and neither is reached', async () => {
    expect(s!.output()).toMatch(/"msg":"listening".*"privateTargets":"deny"/);
    const made = await s!.call('/streams/evm', { method: 'PUT', json: { ...evmStream(rx.url), chainIds: ['0x1'] } });
    expect(made.status).toBe(400);
    expect(made.body).toEqual({
      message: `webhookUrl: host 127.0.0.1 is a loopback address; ${allowHint}`,
      details: { field: 'webhookUrl' },
    });

    const head = Number(await publicClient(anvil.url).getBlockNumber());
    expect(
      await until(async () => (((await s!.call('/health')).body.chains as Array<{ head: number }>)[0]?.head ?? -1) >= head, 10_000, 20),
    ).toBe(true);
    const r = await s!.call(`/api/v2.2/nft/${nft.address}/1/metadata/resync?chain=0x1&flag=uri&mode=sync`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.status).toBe(`failed: metadata URL: host 127.0.0.1 is a loopback address; ${allowHint}`);
    const token = await s!.call(`/api/v2.2/nft/${nft.address}/1?chain=0x1`);
    expect(JSON.stringify(token.body)).not.toContain('Internal"');
    expect(meta.hits).toEqual([]);
    expect(rx.received).toHaveLength(0);
  });
});
