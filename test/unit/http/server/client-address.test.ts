import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../../engine/config/config.js';
import { canonicalAddress, ClientAddresses } from '../../../../http/server/client-address.js';

const clients = (proxies: string): ClientAddresses =>
  new ClientAddresses(parseConfig({ CHAINPOST_TRUSTED_PROXIES: proxies }).trustedProxies);

describe('ClientAddresses', () => {
  it('believes no X-Forwarded-For without trusted proxies', () => {
    const none = new ClientAddresses([]);
    expect(none.trustsAny).toBe(false);
    expect(none.client('127.0.0.1', '203.0.113.7')).toBe('127.0.0.1');
  });

  it('believes X-Forwarded-For only from a trusted peer', () => {
    const c = clients('10.0.0.0/8');
    expect(c.client('192.0.2.1', '203.0.113.7')).toBe('192.0.2.1');
    expect(c.client('10.1.2.3', '203.0.113.7')).toBe('203.0.113.7');
    expect(c.client('10.1.2.3', undefined)).toBe('10.1.2.3');
  });

  it('takes the right-most entry that is not a trusted proxy', () => {
    const c = clients('10.0.0.0/8,2001:db8::/32');
    expect(c.client('10.0.0.1', 'spoofed, 198.51.100.9 ,10.0.0.2, 2001:db8::5')).toBe('198.51.100.9');
    // All trusted: the left-most is the nearest to the client there is.
    expect(c.client('10.0.0.1', '10.0.0.3, 10.0.0.2')).toBe('10.0.0.3');
    // Empty entries (a proxy joining an empty header) are skipped.
    expect(c.client('10.0.0.1', ', 198.51.100.9,')).toBe('198.51.100.9');
  });

  it('stops at an entry that is no IP address, taking the trusted proxy that passed it on', () => {
    const c = clients('10.0.0.0/8');
    expect(c.client('10.0.0.1', 'unknown')).toBe('10.0.0.1');
    expect(c.client('10.0.0.1', '198.51.100.9, 203.0.113.7:4711, 10.0.0.2')).toBe('10.0.0.2');
    expect(c.client('10.0.0.1', 'fe80::1%eth0')).toBe('10.0.0.1');
  });

  it('matches an IPv4 proxy in its IPv4-mapped form and logs IPv6 compressed', () => {
    const c = clients('127.0.0.1,::1');
    expect(c.trusts('::ffff:127.0.0.1')).toBe(true);
    expect(c.trusts('0000:0000:0000:0000:0000:0000:0000:0001')).toBe(true);
    expect(c.trusts('not an address')).toBe(false);
    expect(c.client('::1', '2001:DB8:0:0:0:0:0:7')).toBe('2001:db8::7');
  });
});

describe('canonicalAddress', () => {
  it('writes what uWS gives as a log reads it', () => {
    expect(canonicalAddress('127.0.0.1')).toBe('127.0.0.1');
    expect(canonicalAddress('0000:0000:0000:0000:0000:0000:0000:0001')).toBe('::1');
    expect(canonicalAddress('0000:0000:0000:0000:0000:ffff:7f00:0001')).toBe('127.0.0.1');
  });
});
