import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../../../engine/config/config.js';
import { ALL_ROLES, clusterRolesProblem, parseRoles, rolesProblem } from '../../../../engine/config/roles.js';

/** A cluster node's configuration: CHAINPOST_NATS, its creds file, the chains' lease and the node's roles. */
describe('a cluster node', () => {
  /** What a cluster node needs besides NATS: chains of its own (the embedded devnet is refused). */
  const node = { CHAINPOST_CHAINS: '0x1=http://127.0.0.1:8545' };

  const refusal = (env: Record<string, string>): ConfigError => {
    try {
      parseConfig(env);
    } catch (err) {
      if (err instanceof ConfigError) return err;
      throw err;
    }
    throw new Error(`accepted ${JSON.stringify(env)}`);
  };

  it('is a single process by default: no NATS, a 10 s lease, every role', () => {
    const c = parseConfig({});
    expect(c.nats).toBeUndefined();
    expect(c.leaseTtlMs).toBe(10_000);
    expect([...c.roles]).toEqual(['api', 'ingest', 'match', 'deliver']);
  });

  it('reads the NATS servers as given, credentials and all, with the creds file', () => {
    const c = parseConfig({
      ...node,
      CHAINPOST_NATS: ' nats://alice:s3cret@10.0.0.5:4222, tls://t0ken@nats.example.org:4443 ,nats://[::1],nats://localhost:4222/',
      CHAINPOST_NATS_CREDS: '/etc/chainpost/nats.creds',
    });
    expect(c.nats).toEqual({
      servers: ['nats://alice:s3cret@10.0.0.5:4222', 'tls://t0ken@nats.example.org:4443', 'nats://[::1]', 'nats://localhost:4222/'],
      creds: '/etc/chainpost/nats.creds',
    });
    expect(parseConfig({ ...node, CHAINPOST_NATS: 'nats://127.0.0.1:4222' }).nats).toEqual({
      servers: ['nats://127.0.0.1:4222'],
      creds: undefined,
    });
  });

  it.for([
    ['http://127.0.0.1:4222', 'expected a nats: or tls: URL, got "http://127.0.0.1:4222"'],
    ['localhost:4222', 'expected a nats: or tls: URL, got "localhost:4222"'],
    ['127.0.0.1:4222', 'not a URL: "127.0.0.1:4222"'],
    ['nats://127.0.0.1:4222,', 'expected NATS URLs separated by commas (nats://host:4222), got an empty one'],
    ['nats://127.0.0.1:4222/chainpost', 'expected a server alone (nats://host:4222), got "nats://127.0.0.1:4222/chainpost"'],
    ['nats://127.0.0.1:4222?x=1', 'expected a server alone (nats://host:4222), got "nats://127.0.0.1:4222?x=1"'],
    ['nats://127.0.0.1:99999', 'not a URL: "nats://127.0.0.1:99999"'],
    ['nats:127.0.0.1', 'the URL names no host: "nats:127.0.0.1"'],
  ] as Array<[string, string]>)('refuses CHAINPOST_NATS=%s, naming it', ([value, problem], { expect }) => {
    const err = refusal({ ...node, CHAINPOST_NATS: value });
    expect(err.variable).toBe('CHAINPOST_NATS');
    expect(err.message).toBe(`CHAINPOST_NATS: ${problem}`);
  });

  it("never shows a URL's user name or password in a refusal: either may be the secret", () => {
    const cases: Array<[string, string]> = [
      ['nats://alice:s3cret-pass@127.0.0.1:4222/x', 'nats://***:***@127.0.0.1:4222/x'],
      ['nats://t0ken-s3cret@127.0.0.1:4222/x', 'nats://***@127.0.0.1:4222/x'],
      ['http://t0ken-s3cret@127.0.0.1:4222', 'http://***@127.0.0.1:4222'],
      ['nats://t0ken-s3cret@[bad', 'nats:(not a URL)'],
    ];
    for (const [value, shown] of cases) {
      const { message } = refusal({ ...node, CHAINPOST_NATS: value });
      expect(message, value).toContain(shown);
      expect(message, value).not.toMatch(/s3cret|alice/);
    }
  });

  it('refuses the embedded devnet: each node would start its own; names what to set instead', () => {
    const alone: Array<Record<string, string>> = [
      {},
      { CHAINPOST_BITCOIN_RPC: 'http://127.0.0.1:8332' },
      { CHAINPOST_SOLANA_RPC: 'http://127.0.0.1:8899' },
    ];
    for (const env of alone) {
      const err = refusal({ ...env, CHAINPOST_NATS: 'nats://127.0.0.1:4222' });
      expect(err.variable).toBe('CHAINPOST_CHAINS');
      expect(err.message).toMatch(
        /^CHAINPOST_CHAINS: unset on a cluster node \(CHAINPOST_NATS is set\): each node would start its own embedded devnet/,
      );
      expect(err.message).toMatch(
        /Set it to the EVM nodes the cluster follows .*or to none where it follows CHAINPOST_BITCOIN_RPC or CHAINPOST_SOLANA_RPC alone/,
      );
    }
    // Followed chains, or none beside a Bitcoin node: no devnet.
    expect(parseConfig({ ...node, CHAINPOST_NATS: 'nats://127.0.0.1:4222' }).ingest).toBe('configured');
    expect(
      parseConfig({ CHAINPOST_CHAINS: 'none', CHAINPOST_BITCOIN_RPC: 'http://127.0.0.1:8332', CHAINPOST_NATS: 'nats://127.0.0.1:4222' })
        .ingest,
    ).toBe('none');
  });

  it('refuses a creds file without NATS servers to use it with', () => {
    const err = refusal({ CHAINPOST_NATS_CREDS: '/etc/chainpost/nats.creds' });
    expect(err.message).toBe('CHAINPOST_NATS_CREDS: set without CHAINPOST_NATS (the NATS servers it signs in to)');
  });

  it('takes a lease time from 1 s to 10 minutes', () => {
    expect(parseConfig({ CHAINPOST_LEASE_TTL_MS: '1000' }).leaseTtlMs).toBe(1_000);
    expect(parseConfig({ CHAINPOST_LEASE_TTL_MS: '600000' }).leaseTtlMs).toBe(600_000);
    expect(refusal({ CHAINPOST_LEASE_TTL_MS: '999' }).message).toBe('CHAINPOST_LEASE_TTL_MS: expected 1000 to 600000, got 999');
    expect(refusal({ CHAINPOST_LEASE_TTL_MS: '600001' }).message).toBe('CHAINPOST_LEASE_TTL_MS: expected 1000 to 600000, got 600001');
    expect(refusal({ CHAINPOST_LEASE_TTL_MS: '10s' }).message).toBe('CHAINPOST_LEASE_TTL_MS: expected a whole number, got "10s"');
  });

  it('copies the streams and the leases bucket to 1 to 5 servers, 1 by default', () => {
    expect(parseConfig({}).natsReplicas).toBe(1);
    expect(parseConfig({ ...node, CHAINPOST_NATS: 'nats://127.0.0.1:4222', CHAINPOST_NATS_REPLICAS: '3' }).natsReplicas).toBe(3);
    expect(parseConfig({ CHAINPOST_NATS_REPLICAS: '5' }).natsReplicas).toBe(5);
    expect(refusal({ CHAINPOST_NATS_REPLICAS: '0' }).message).toBe('CHAINPOST_NATS_REPLICAS: expected 1 to 5, got 0');
    expect(refusal({ CHAINPOST_NATS_REPLICAS: '6' }).message).toBe('CHAINPOST_NATS_REPLICAS: expected 1 to 5, got 6');
    expect(refusal({ CHAINPOST_NATS_REPLICAS: 'three' }).message).toBe('CHAINPOST_NATS_REPLICAS: expected a whole number, got "three"');
  });

  it('takes any roles of api, ingest, match and deliver, in any order, and refuses an unknown or empty one', () => {
    expect([...parseRoles('deliver, api')]).toEqual(['deliver', 'api']);
    expect(parseRoles('match,deliver,ingest,api')).toEqual(ALL_ROLES);
    expect(parseRoles('api,api')).toEqual(new Set(['api']));
    for (const good of ['api', 'ingest,match', ' api , deliver ']) expect(rolesProblem(good), good).toBeUndefined();
    expect(rolesProblem('api,fetch')).toBe('unknown role "fetch" (the roles are api, ingest, match, deliver)');
    expect(rolesProblem('API')).toBe('unknown role "API" (the roles are api, ingest, match, deliver)');
    expect(rolesProblem('')).toBe('expected roles separated by commas (the roles are api, ingest, match, deliver), got ""');
    expect(rolesProblem('api,')).toBe('expected roles separated by commas (the roles are api, ingest, match, deliver), got "api,"');
  });

  it('takes any set of roles on a cluster node: a follower without match and deliver has its streams’ webhooks matched and sent by the partitions’ owners', () => {
    for (const good of [
      'api,ingest,match,deliver',
      'ingest,match,deliver',
      'api,deliver',
      'api,match,deliver',
      'match',
      'deliver',
      'api',
      'ingest',
      'api,ingest',
      'api,ingest,deliver',
      'api,ingest,match',
    ])
      expect(clusterRolesProblem(parseRoles(good)), good).toBeUndefined();
    expect(clusterRolesProblem(new Set())).toBe('a node needs one role at least');
  });
});
