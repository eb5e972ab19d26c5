import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../../../engine/config/config.js';

describe('parseConfig', () => {
  it('has the documented defaults', () => {
    const c = parseConfig({});
    expect(c).toMatchObject({
      host: '127.0.0.1',
      port: 8080,
      dataDir: './data',
      rateLimit: 1000,
      testClock: false,
      now: undefined,
      apiKey: undefined,
      historyDays: 7,
      deliveryLogDays: 1,
      deliveryLogMax: 1_000_000,
      stageChunk: 200,
    });
    expect(c.chains.size).toBe(0);
    expect(c.confirmations.size).toBe(0);
    expect(c.rpcPort).toBeUndefined();
    expect(c.devnet).toEqual({ port: 8545, blockTime: 1, saveInterval: 5, stopGraceMs: 5_000 });
    expect(c.limits).toEqual({ streams: 1_000, addresses: 1_000_000, triggers: 100, xpubs: 1_000 });
    expect(c.triggerBudgetMs).toBe(2_000);
  });

  it('reads the trusted proxies, addresses and CIDR ranges of either family (none by default), refusing anything else', () => {
    expect(parseConfig({}).trustedProxies).toEqual([]);
    expect(parseConfig({ CHAINPOST_TRUSTED_PROXIES: ' 127.0.0.1, 10.0.0.0/8 ,::1,fd00::/8' }).trustedProxies).toEqual([
      { address: '127.0.0.1', bits: 32, family: 'ipv4' },
      { address: '10.0.0.0', bits: 8, family: 'ipv4' },
      { address: '::1', bits: 128, family: 'ipv6' },
      { address: 'fd00::', bits: 8, family: 'ipv6' },
    ]);
    for (const bad of [
      '10.0.0.0/33',
      'fd00::/129',
      'proxy.local',
      '10.0.0.0/8/8',
      '10.0.0.0/',
      '10.0.0.0/-1',
      '010.0.0.1',
      'fe80::1%eth0',
      '127.0.0.1,',
    ])
      expect(() => parseConfig({ CHAINPOST_TRUSTED_PROXIES: bad }), bad).toThrow(
        /^CHAINPOST_TRUSTED_PROXIES: expected IP addresses and CIDR ranges \(such as 10\.0\.0\.0\/8\) separated by commas, got "/,
      );
  });

  it('reads the per-tenant limits, refusing what is not a whole number from 1', () => {
    expect(parseConfig({ CHAINPOST_MAX_STREAMS: '5', CHAINPOST_MAX_ADDRESSES: '20000000', CHAINPOST_MAX_XPUBS: '3' }).limits).toEqual({
      streams: 5,
      addresses: 20_000_000,
      triggers: 100,
      xpubs: 3,
    });
    expect(() => parseConfig({ CHAINPOST_MAX_XPUBS: '0' })).toThrow('CHAINPOST_MAX_XPUBS: expected 1 to 1000000, got 0');
    expect(() => parseConfig({ CHAINPOST_MAX_STREAMS: '0' })).toThrow('CHAINPOST_MAX_STREAMS: expected 1 to 1000000000, got 0');
    expect(() => parseConfig({ CHAINPOST_MAX_ADDRESSES: '1e6' })).toThrow('CHAINPOST_MAX_ADDRESSES: expected a whole number, got "1e6"');
  });

  it('reads the triggers a stream may run (0: none) and their time per block, refusing what is not a whole number in range', () => {
    expect(parseConfig({ CHAINPOST_MAX_TRIGGERS: '0', CHAINPOST_TRIGGER_BUDGET_MS: '250' })).toMatchObject({
      limits: { triggers: 0 },
      triggerBudgetMs: 250,
    });
    expect(() => parseConfig({ CHAINPOST_MAX_TRIGGERS: '10001' })).toThrow('CHAINPOST_MAX_TRIGGERS: expected 0 to 10000, got 10001');
    expect(() => parseConfig({ CHAINPOST_TRIGGER_BUDGET_MS: '0' })).toThrow('CHAINPOST_TRIGGER_BUDGET_MS: expected 1 to 3600000, got 0');
  });

  it("reads a tenant's share of a node's time for trigger calls and the gas of each call, with their defaults", () => {
    expect(parseConfig({})).toMatchObject({ triggerShareMs: 100, triggerGas: 5_000_000 });
    expect(parseConfig({ CHAINPOST_TRIGGER_SHARE_MS: '1000', CHAINPOST_TRIGGER_GAS: '21000' })).toMatchObject({
      triggerShareMs: 1000,
      triggerGas: 21_000,
    });
    expect(() => parseConfig({ CHAINPOST_TRIGGER_SHARE_MS: '1001' })).toThrow('CHAINPOST_TRIGGER_SHARE_MS: expected 1 to 1000, got 1001');
    expect(() => parseConfig({ CHAINPOST_TRIGGER_GAS: '20999' })).toThrow('CHAINPOST_TRIGGER_GAS: expected 21000 to');
  });

  it("takes the devnet's port (0: any free one), a block time in seconds, fractions included, its save interval and stop grace", () => {
    expect(parseConfig({ CHAINPOST_DEVNET_PORT: '0', CHAINPOST_DEVNET_BLOCK_TIME: '0.5' }).devnet).toMatchObject({
      port: 0,
      blockTime: 0.5,
    });
    expect(parseConfig({ CHAINPOST_DEVNET_PORT: '9545', CHAINPOST_DEVNET_BLOCK_TIME: '12' }).devnet).toMatchObject({
      port: 9545,
      blockTime: 12,
    });
    expect(parseConfig({ CHAINPOST_DEVNET_SAVE_INTERVAL: '1', CHAINPOST_DEVNET_STOP_GRACE_MS: '0' }).devnet).toMatchObject({
      saveInterval: 1,
      stopGraceMs: 0,
    });
  });

  it('takes a second port for node access, any free one with 0, never the main one', () => {
    expect(parseConfig({ CHAINPOST_RPC_PORT: '8545' }).rpcPort).toBe(8545);
    expect(parseConfig({ CHAINPOST_PORT: '0', CHAINPOST_RPC_PORT: '0' }).rpcPort).toBe(0);
    expect(() => parseConfig({ CHAINPOST_PORT: '9000', CHAINPOST_RPC_PORT: '9000' })).toThrow(
      'CHAINPOST_RPC_PORT: must differ from CHAINPOST_PORT (9000)',
    );
  });

  it("takes a gas cap for node access's forwarded calls (none by default: the chain's block gas limit), from the 21,000 of a bare call", () => {
    expect(parseConfig({}).rpcGasCap).toBeUndefined();
    expect(parseConfig({ CHAINPOST_RPC_GAS_CAP: '10000000' }).rpcGasCap).toBe(10_000_000);
    expect(parseConfig({ CHAINPOST_RPC_GAS_CAP: '21000' }).rpcGasCap).toBe(21_000);
    expect(() => parseConfig({ CHAINPOST_RPC_GAS_CAP: '20999' })).toThrow(
      'CHAINPOST_RPC_GAS_CAP: expected 21000 to 9007199254740991, got 20999',
    );
  });

  it("reads Bitcoin Core's URL, poll interval and xpub gap, refusing what is not one", () => {
    expect(parseConfig({}).bitcoin).toEqual({ url: undefined, pollMs: 1000, gap: 20 });
    expect(
      parseConfig({
        CHAINPOST_BITCOIN_RPC: 'http://user:pass@127.0.0.1:8332',
        CHAINPOST_BITCOIN_POLL_MS: '250',
        CHAINPOST_BITCOIN_GAP: '1000',
      }).bitcoin,
    ).toEqual({ url: 'http://user:pass@127.0.0.1:8332', pollMs: 250, gap: 1000 });
    expect(() => parseConfig({ CHAINPOST_BITCOIN_RPC: 'ws://127.0.0.1:8332' })).toThrow(
      'CHAINPOST_BITCOIN_RPC: expected a http: or https: URL',
    );
    expect(() => parseConfig({ CHAINPOST_BITCOIN_GAP: '0' })).toThrow('CHAINPOST_BITCOIN_GAP: expected 1 to 1000, got 0');
    expect(() => parseConfig({ CHAINPOST_BITCOIN_GAP: '1001' })).toThrow('CHAINPOST_BITCOIN_GAP: expected 1 to 1000, got 1001');
    expect(() => parseConfig({ CHAINPOST_BITCOIN_POLL_MS: 'soon' })).toThrow('CHAINPOST_BITCOIN_POLL_MS: expected a whole number');
  });

  it('reads an IPFS gateway for NFT metadata (none by default)', () => {
    expect(parseConfig({}).ipfsGateway).toBeUndefined();
    expect(parseConfig({ CHAINPOST_IPFS_GATEWAY: 'https://ipfs.example/ipfs/' }).ipfsGateway).toBe('https://ipfs.example/ipfs/');
    expect(() => parseConfig({ CHAINPOST_IPFS_GATEWAY: 'ipfs://x' })).toThrow('CHAINPOST_IPFS_GATEWAY: expected a http: or https: URL');
  });

  it("reads the worker pool's threads, one per core when unset (the server counts its cores)", () => {
    expect(parseConfig({}).workerThreads).toBeUndefined();
    expect(parseConfig({ CHAINPOST_WORKER_THREADS: '1' }).workerThreads).toBe(1);
    expect(parseConfig({ CHAINPOST_WORKER_THREADS: '256' }).workerThreads).toBe(256);
  });

  it('reads the webhooks staged per write transaction', () => {
    expect(parseConfig({ CHAINPOST_STAGE_CHUNK: '1' }).stageChunk).toBe(1);
  });

  it("reads a tenant's delivery slots and those to receivers that have not answered it", () => {
    expect(parseConfig({})).toMatchObject({ tenantSlots: 128, unansweredSlots: 16 });
    expect(parseConfig({ CHAINPOST_DELIVERY_TENANT_SLOTS: '512', CHAINPOST_DELIVERY_UNANSWERED_SLOTS: '1' })).toMatchObject({
      tenantSlots: 512,
      unansweredSlots: 1,
    });
  });

  it('gives the requests in flight 8 s at a stop by default (a stop within 10 s), or what CHAINPOST_SHUTDOWN_GRACE_MS says', () => {
    expect(parseConfig({}).shutdownGraceMs).toBe(8_000);
    expect(parseConfig({ CHAINPOST_SHUTDOWN_GRACE_MS: '0' }).shutdownGraceMs).toBe(0);
    expect(parseConfig({ CHAINPOST_SHUTDOWN_GRACE_MS: '600000' }).shutdownGraceMs).toBe(600_000);
  });

  it("reads the delivery logs' retention and cap", () => {
    expect(parseConfig({ CHAINPOST_DELIVERY_LOG_DAYS: '3', CHAINPOST_DELIVERY_LOG_MAX: '5000' })).toMatchObject({
      deliveryLogDays: 3,
      deliveryLogMax: 5000,
    });
  });

  it('takes a bare date as its midnight UTC, and host names or IP literals as hosts', () => {
    expect(parseConfig({ CHAINPOST_NOW: '2026-06-01' }).now).toBe(Date.parse('2026-06-01T00:00:00Z'));
    for (const h of ['localhost', '127.0.0.1', '::1', '0.0.0.0', 'api.internal']) expect(parseConfig({ CHAINPOST_HOST: h }).host).toBe(h);
  });

  it('reads every variable', () => {
    const c = parseConfig({
      CHAINPOST_HOST: '0.0.0.0',
      CHAINPOST_PORT: '9000',
      CHAINPOST_DATA: '/tmp/x',
      CHAINPOST_API_KEY: 'cpk_abcdefghijklmnop',
      CHAINPOST_CHAINS: '0x1=http://127.0.0.1:8545, 1337=ws://127.0.0.1:9545,base=https://node.example/rpc',
      CHAINPOST_CONFIRMATIONS: '0x539=2,eth=20',
      CHAINPOST_RATE_LIMIT: '0',
      CHAINPOST_SMTP_URL: 'smtp://127.0.0.1:2525',
      CHAINPOST_ALERT_EMAIL: 'ops@example.org',
      CHAINPOST_NOW: '2026-06-01T00:00:00Z',
      CHAINPOST_TEST_CLOCK: '1',
    });
    expect(c.port).toBe(9000);
    expect([...c.chains]).toEqual([
      ['0x1', 'http://127.0.0.1:8545'],
      ['0x539', 'ws://127.0.0.1:9545'],
      ['0x2105', 'https://node.example/rpc'],
    ]);
    expect([...c.confirmations]).toEqual([
      ['0x539', 2],
      ['0x1', 20],
    ]);
    expect(c.rateLimit).toBe(0);
    expect(c.now).toBe(Date.parse('2026-06-01T00:00:00Z'));
    expect(c.testClock).toBe(true);
  });

  const bad: Array<[string, string]> = [
    ['CHAINPOST_PORT', 'eighty'],
    ['CHAINPOST_PORT', '70000'],
    ['CHAINPOST_API_KEY', 'short'],
    ['CHAINPOST_API_KEY', 'has space in it and is long'],
    ['CHAINPOST_CHAINS', '0x1'],
    ['CHAINPOST_CHAINS', '0x999999=http://127.0.0.1:1'],
    ['CHAINPOST_CHAINS', 'bitcoin=http://127.0.0.1:1'],
    ['CHAINPOST_CHAINS', '0x1=ftp://127.0.0.1:1'],
    ['CHAINPOST_CHAINS', '0x1=http://a:1,1=http://b:2'],
    ['CHAINPOST_CONFIRMATIONS', '0x539=-1'],
    ['CHAINPOST_CONFIRMATIONS', '0x539=two'],
    ['CHAINPOST_RATE_LIMIT', '-5'],
    ['CHAINPOST_RATE_LIMIT', '1.5'],
    ['CHAINPOST_SMTP_URL', 'http://127.0.0.1:25'],
    ['CHAINPOST_ALERT_EMAIL', 'nobody'],
    ['CHAINPOST_NOW', 'yesterday'],
    ['CHAINPOST_NOW', '2026-13-45T00:00:00Z'],
    ['CHAINPOST_NOW', '2026-02-30T00:00:00Z'],
    ['CHAINPOST_NOW', '2026-06-01T24:00:00Z'],
    ['CHAINPOST_HOST', 'not a host'],
    ['CHAINPOST_HOST', 'bad_host'],
    ['CHAINPOST_HOST', '999.1.1.1'],
    ['CHAINPOST_SMTP_URL', 'smtp://'],
    ['CHAINPOST_AUTH_SKEW', '-1'],
    ['CHAINPOST_TEST_CLOCK', 'yes'],
    ['CHAINPOST_LOG_LEVEL', 'loud'],
    ['CHAINPOST_RPC_PORT', '65536'],
    ['CHAINPOST_RPC_PORT', 'rpc'],
    ['CHAINPOST_RPC_GAS_CAP', '0'],
    ['CHAINPOST_RPC_GAS_CAP', '0x1c9c380'],
    ['CHAINPOST_RPC_GAS_CAP', '9007199254740992'],
    ['CHAINPOST_DELIVERY_LOG_DAYS', '0'],
    ['CHAINPOST_DELIVERY_LOG_DAYS', '1.5'],
    ['CHAINPOST_WORKER_THREADS', '0'],
    ['CHAINPOST_WORKER_THREADS', '257'],
    ['CHAINPOST_WORKER_THREADS', 'all'],
    ['CHAINPOST_STAGE_CHUNK', '0'],
    ['CHAINPOST_STAGE_CHUNK', '100001'],
    ['CHAINPOST_DELIVERY_TENANT_SLOTS', '0'],
    ['CHAINPOST_DELIVERY_TENANT_SLOTS', '513'],
    ['CHAINPOST_DELIVERY_UNANSWERED_SLOTS', '0'],
    ['CHAINPOST_DELIVERY_UNANSWERED_SLOTS', 'few'],
    ['CHAINPOST_DELIVERY_LOG_MAX', '0'],
    ['CHAINPOST_DELIVERY_LOG_MAX', 'lots'],
    ['CHAINPOST_DEVNET_PORT', '65536'],
    ['CHAINPOST_DEVNET_PORT', 'eight'],
    ['CHAINPOST_DEVNET_BLOCK_TIME', '0'],
    ['CHAINPOST_DEVNET_BLOCK_TIME', '-1'],
    ['CHAINPOST_DEVNET_BLOCK_TIME', 'fast'],
    ['CHAINPOST_DEVNET_BLOCK_TIME', '1e3'],
    ['CHAINPOST_IPFS_GATEWAY', 'ipfs://gateway'],
    ['CHAINPOST_IPFS_GATEWAY', 'not a url'],
    ['CHAINPOST_SHUTDOWN_GRACE_MS', '600001'],
    ['CHAINPOST_SHUTDOWN_GRACE_MS', '2s'],
    ['CHAINPOST_DEVNET_SAVE_INTERVAL', '0'],
    ['CHAINPOST_DEVNET_SAVE_INTERVAL', '0.5'],
    ['CHAINPOST_DEVNET_STOP_GRACE_MS', '600001'],
  ];
  it.each(bad)('%s=%s stops the start with a message naming the variable', (name, value) => {
    let caught: unknown;
    try {
      parseConfig({ [name]: value });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as ConfigError).variable).toBe(name);
    expect((caught as Error).message.startsWith(`${name}: `)).toBe(true);
  });
});
