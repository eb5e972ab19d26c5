import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../../engine/config/config.js';
import { classifyIp, isIpLiteral, type AddressKind } from '../../../../engine/net/ip-class.js';
import { TargetPolicy } from '../../../../engine/net/targets.js';
import type { Resolver } from '../../../../engine/ports.js';

/**
 * engine/net/ip-class.ts: every special-purpose block and its edges, the IPv6
 * forms that carry an IPv4 address, and text that is not an address; the
 * target policy's refusals (engine/net/targets.ts) over an in-memory resolver;
 * CHAINPOST_PRIVATE_TARGETS and its default.
 */

const TABLE: ReadonlyArray<readonly [string, AddressKind]> = [
  // loopback
  ['127.0.0.1', 'loopback'],
  ['127.255.255.255', 'loopback'],
  ['127.1.2.3', 'loopback'],
  ['::1', 'loopback'],
  ['0:0:0:0:0:0:0:1', 'loopback'],
  // private
  ['10.0.0.0', 'private'],
  ['10.0.0.5', 'private'],
  ['10.255.255.255', 'private'],
  ['172.16.0.0', 'private'],
  ['172.31.255.255', 'private'],
  ['192.168.0.1', 'private'],
  ['192.168.255.255', 'private'],
  ['fc00::1', 'private'],
  ['fd12:3456::1', 'private'],
  ['fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'private'],
  ['fec0::1', 'private'],
  ['64:ff9b:1::1', 'private'],
  // link-local
  ['169.254.0.1', 'link-local'],
  ['169.254.255.255', 'link-local'],
  ['fe80::1', 'link-local'],
  ['fe80::1%eth0', 'link-local'],
  ['febf::1', 'link-local'],
  // CGNAT
  ['100.64.0.0', 'cgnat'],
  ['100.127.255.255', 'cgnat'],
  // cloud metadata
  ['169.254.169.254', 'metadata'],
  ['169.254.170.2', 'metadata'],
  ['100.100.100.200', 'metadata'],
  ['168.63.129.16', 'metadata'],
  ['::ffff:168.63.129.16', 'metadata'],
  ['192.0.0.192', 'metadata'],
  ['fd00:ec2::254', 'metadata'],
  ['FD00:EC2:0:0:0:0:0:254', 'metadata'],
  // unspecified / this network
  ['0.0.0.0', 'unspecified'],
  ['0.1.2.3', 'unspecified'],
  ['0.255.255.255', 'unspecified'],
  ['::', 'unspecified'],
  // IPv4-mapped, -compatible, -translated, NAT64 and 6to4 forms: the IPv4 address inside decides
  ['::ffff:127.0.0.1', 'loopback'],
  ['::ffff:7f00:1', 'loopback'],
  ['::FFFF:7F00:0001', 'loopback'],
  ['0:0:0:0:0:ffff:127.0.0.1', 'loopback'],
  ['::ffff:10.0.0.5', 'private'],
  ['::ffff:a00:5', 'private'],
  ['::ffff:169.254.169.254', 'metadata'],
  ['::ffff:a9fe:a9fe', 'metadata'],
  ['::ffff:100.64.0.1', 'cgnat'],
  ['::ffff:0.0.0.0', 'unspecified'],
  ['::ffff:192.168.1.1', 'private'],
  ['::ffff:172.16.0.1', 'private'],
  ['::127.0.0.1', 'loopback'],
  ['::7f00:1', 'loopback'],
  ['::10.0.0.5', 'private'],
  ['::ffff:0:127.0.0.1', 'loopback'],
  ['64:ff9b::127.0.0.1', 'loopback'],
  ['64:ff9b::a9fe:a9fe', 'metadata'],
  ['2002:7f00:1::', 'loopback'],
  ['2002:a9fe:a9fe::1', 'metadata'],
  ['::ffff:8.8.8.8', 'public'],
  ['64:ff9b::8.8.8.8', 'public'],
  ['2002:808:808::1', 'public'],
  // not globally routable beyond the list asked for
  ['192.0.0.1', 'reserved'],
  ['192.0.2.1', 'reserved'],
  ['198.51.100.7', 'reserved'],
  ['203.0.113.9', 'reserved'],
  ['198.18.0.1', 'reserved'],
  ['198.19.255.255', 'reserved'],
  ['192.88.99.1', 'reserved'],
  ['240.0.0.1', 'reserved'],
  ['255.255.255.254', 'reserved'],
  ['224.0.0.1', 'multicast'],
  ['239.255.255.255', 'multicast'],
  ['255.255.255.255', 'multicast'],
  ['ff02::1', 'multicast'],
  ['2001:db8::1', 'reserved'],
  ['3fff::1', 'reserved'],
  ['2001::1', 'reserved'],
  ['2001:2::1', 'reserved'],
  ['2001:10::1', 'reserved'],
  ['100::1', 'reserved'],
  ['4000::1', 'reserved'],
  ['1::1', 'reserved'],
  // public, including the neighbours of the blocks above
  ['8.8.8.8', 'public'],
  ['1.1.1.1', 'public'],
  ['93.184.216.34', 'public'],
  ['9.255.255.255', 'public'],
  ['11.0.0.0', 'public'],
  ['172.15.255.255', 'public'],
  ['172.32.0.0', 'public'],
  ['100.63.255.255', 'public'],
  ['100.128.0.0', 'public'],
  ['126.255.255.255', 'public'],
  ['128.0.0.0', 'public'],
  ['168.63.129.15', 'public'],
  ['168.63.129.17', 'public'],
  ['169.253.255.255', 'public'],
  ['169.255.0.0', 'public'],
  ['192.167.255.255', 'public'],
  ['192.169.0.0', 'public'],
  ['198.17.255.255', 'public'],
  ['198.20.0.0', 'public'],
  ['223.255.255.255', 'public'],
  ['2606:4700:4700::1111', 'public'],
  ['2a00:1450:4001:82a::200e', 'public'],
  ['2001:4860:4860::8888', 'public'],
  ['3fff:1000::1', 'public'],
  // not an address: refused with the rest
  ['', 'not-an-address'],
  ['localhost', 'not-an-address'],
  ['256.0.0.1', 'not-an-address'],
  ['127.1', 'not-an-address'],
  ['0177.0.0.1', 'not-an-address'],
  ['010.0.0.1', 'not-an-address'],
  ['127.0.0.01', 'not-an-address'],
  ['2130706433', 'not-an-address'],
  ['1:2:3:4:5:6:7', 'not-an-address'],
  ['1::2::3', 'not-an-address'],
  ['::ffff:127.0.0.1:1', 'not-an-address'],
  ['1.2.3.4::', 'not-an-address'],
  ['12345::1', 'not-an-address'],
  ['[::1]', 'not-an-address'],
];

describe('classifyIp', () => {
  it.each(TABLE)('%s is %s', (ip, kind) => {
    expect(classifyIp(ip)).toBe(kind);
  });

  it('knows an address from a name', () => {
    for (const ip of ['127.0.0.1', '::1', '::ffff:7f00:1', 'fe80::1%eth0']) expect(isIpLiteral(ip), ip).toBe(true);
    for (const name of ['localhost', 'hooks.example.test', '127.1', '']) expect(isIpLiteral(name), name).toBe(false);
  });
});

/** Answers `names` (each name: its addresses); any other name does not resolve. */
const resolverOf = (names: Record<string, string[]>): Resolver => ({
  lookup: async (host) => {
    const list = names[host];
    if (list === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return list.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  },
});

describe('TargetPolicy', () => {
  const names = {
    'hooks.example.test': ['10.0.0.5'],
    'public.example.test': ['93.184.216.34', '2606:4700:4700::1111'],
    'mixed.example.test': ['93.184.216.34', '::ffff:127.0.0.1'],
  };
  const deny = new TargetPolicy('deny', resolverOf(names));
  const allow = new TargetPolicy('allow', resolverOf(names));

  it('with deny, names why an address is refused, and passes public ones', () => {
    expect(deny.refusal('webhookUrl', 'hooks.example.test', '10.0.0.5')).toBe(
      'webhookUrl: host hooks.example.test resolves to 10.0.0.5, a private address; CHAINPOST_PRIVATE_TARGETS=allow permits it',
    );
    expect(deny.refusal('webhookUrl', '169.254.169.254', '169.254.169.254')).toBe(
      'webhookUrl: host 169.254.169.254 is a cloud metadata address; CHAINPOST_PRIVATE_TARGETS=allow permits it',
    );
    expect(deny.refusal('webhookUrl', 'x.test', '93.184.216.34')).toBeUndefined();
    expect(allow.refusal('webhookUrl', 'hooks.example.test', '10.0.0.5')).toBeUndefined();
  });

  it('checks a URL: its address, or every address its name resolves to', async () => {
    expect(await deny.check('https://hooks.example.test/in', 'webhookUrl')).toBe(
      'webhookUrl: host hooks.example.test resolves to 10.0.0.5, a private address; CHAINPOST_PRIVATE_TARGETS=allow permits it',
    );
    expect(await deny.check('http://[::ffff:7f00:1]:8080/', 'webhookUrl')).toBe(
      'webhookUrl: host ::ffff:7f00:1 is a loopback address; CHAINPOST_PRIVATE_TARGETS=allow permits it',
    );
    // URL parsing turns 2130706433 and 0x7f.1 into 127.0.0.1 before anything is checked.
    expect(await deny.check('http://2130706433/', 'webhookUrl')).toMatch(/^webhookUrl: host 127\.0\.0\.1 is a loopback address/);
    expect(await deny.check('http://0x7f.1/', 'webhookUrl')).toMatch(/^webhookUrl: host 127\.0\.0\.1 is a loopback address/);
    // One refused address among public ones refuses the name: the connection could go to any of them.
    expect(await deny.check('https://mixed.example.test/', 'webhookUrl')).toBe(
      'webhookUrl: host mixed.example.test resolves to ::ffff:127.0.0.1, a loopback address; CHAINPOST_PRIVATE_TARGETS=allow permits it',
    );
    expect(await deny.check('https://public.example.test/', 'webhookUrl')).toBeUndefined();
    // A name that does not resolve is left to the connection (which fails as for any unreachable host).
    expect(await deny.check('https://nowhere.example.test/', 'webhookUrl')).toBeUndefined();
    expect(await allow.check('https://hooks.example.test/in', 'webhookUrl')).toBeUndefined();
    expect(await allow.check('http://127.0.0.1/', 'webhookUrl')).toBeUndefined();
  });
});

describe('CHAINPOST_PRIVATE_TARGETS', () => {
  it('defaults to allow for the devnet setup on a loopback listener, deny on any other listener', () => {
    expect(parseConfig({}).privateTargets).toBe('allow');
    for (const host of ['127.0.0.1', '127.0.0.2', '::1', 'localhost'])
      expect(parseConfig({ CHAINPOST_HOST: host }).privateTargets, host).toBe('allow');
    for (const host of ['0.0.0.0', '::', '10.0.0.5', '203.0.113.9', 'api.example.org'])
      expect(parseConfig({ CHAINPOST_HOST: host }).privateTargets, host).toBe('deny');
  });

  it('defaults to deny for a server following real chains (CHAINPOST_CHAINS, even none; a Bitcoin or Solana node), whatever its listener', () => {
    const following = [
      { CHAINPOST_CHAINS: '0x1=http://127.0.0.1:8545' },
      { CHAINPOST_CHAINS: 'eth=https://node.example' },
      { CHAINPOST_CHAINS: 'none' },
      { CHAINPOST_BITCOIN_RPC: 'http://u:p@127.0.0.1:8332' },
      { CHAINPOST_SOLANA_RPC: 'http://127.0.0.1:8899' },
    ];
    for (const env of following) {
      for (const host of ['127.0.0.1', '::1', 'localhost', '0.0.0.0'])
        expect(parseConfig({ ...env, CHAINPOST_HOST: host }).privateTargets, `${JSON.stringify(env)} ${host}`).toBe('deny');
      expect(parseConfig({ ...env, CHAINPOST_PRIVATE_TARGETS: 'allow' }).privateTargets).toBe('allow');
    }
  });

  it('takes allow or deny, and stops the start naming it for anything else', () => {
    expect(parseConfig({ CHAINPOST_PRIVATE_TARGETS: 'deny' }).privateTargets).toBe('deny');
    expect(parseConfig({ CHAINPOST_HOST: '0.0.0.0', CHAINPOST_PRIVATE_TARGETS: 'allow' }).privateTargets).toBe('allow');
    expect(() => parseConfig({ CHAINPOST_PRIVATE_TARGETS: 'yes' })).toThrow(
      'CHAINPOST_PRIVATE_TARGETS: expected one of allow, deny, got "yes"',
    );
  });
});
