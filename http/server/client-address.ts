import { BlockList, isIP } from 'node:net';
import type { TrustedProxy } from '../../engine/config/config.js';

/**
 * The client's address a request is logged with: its peer's, or behind a trusted reverse proxy (CHAINPOST_TRUSTED_PROXIES)
 * the one the proxies recorded in X-Forwarded-For. Without trusted proxies the header is never believed: anyone can send it.
 */
export class ClientAddresses {
  private readonly trusted = new BlockList();
  // BlockList.check builds a SocketAddress per call (about 1.5 µs); a request's peer and its hops repeat.
  private readonly trustsOf = new Remembered<boolean>((address) => {
    const family = isIP(address);
    return family !== 0 && this.trusted.check(address, family === 4 ? 'ipv4' : 'ipv6');
  });
  /** Whether any proxy is trusted: else X-Forwarded-For is not even read. */
  readonly trustsAny: boolean;

  constructor(proxies: readonly TrustedProxy[]) {
    for (const p of proxies) this.trusted.addSubnet(p.address, p.bits, p.family);
    this.trustsAny = proxies.length > 0;
  }

  /** Whether `address` is a trusted proxy (BlockList matches an IPv4 rule in its IPv4-mapped IPv6 form too). */
  trusts(address: string): boolean {
    return this.trustsOf.get(address);
  }

  /**
   * The client of a request from `peer` carrying `forwardedFor` (every X-Forwarded-For header, joined by commas). Each proxy
   * appends the address it was reached from, so only the entries trusted proxies added are true: the usual rule takes the
   * right-most entry that is not itself a trusted proxy; entries left of it are whatever the client sent. Where that entry is
   * no IP address (`unknown`, a port appended), the nearest trusted proxy is the best known; when every entry is trusted,
   * the left-most.
   */
  client(peer: string, forwardedFor: string | undefined): string {
    if (forwardedFor === undefined || !this.trusts(peer)) return peer;
    const hops = forwardedFor.split(',');
    let client = peer;
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = hops[i]!.trim();
      if (hop === '') continue;
      // A zone id (fe80::1%eth0) names an interface of the proxy's, not a client.
      if (isIP(hop) === 0 || hop.includes('%')) return client;
      client = canonicalAddress(hop);
      if (!this.trusts(hop)) return client;
    }
    return client;
  }
}

/**
 * An address as logs show it: IPv6 compressed (uWS writes all eight groups with their zeros) and an IPv4-mapped one as its
 * IPv4 address (an IPv4 client of a dual-stack listener).
 */
export function canonicalAddress(address: string): string {
  return isIP(address) === 6 ? canonicalV6.get(address) : address;
}

/** The last answers of `compute` by address, at most MAX_REMEMBERED (then forgotten all at once): bounded, whatever clients send. */
class Remembered<T> {
  private readonly known = new Map<string, T>();
  constructor(private readonly compute: (address: string) => T) {}

  get(address: string): T {
    let v = this.known.get(address);
    if (v === undefined) {
      if (this.known.size >= MAX_REMEMBERED) this.known.clear();
      v = this.compute(address);
      this.known.set(address, v);
    }
    return v;
  }
}

const MAX_REMEMBERED = 1024;

// Parsed by URL once per distinct peer: an IPv6 listener's every request has one (about 1 µs to parse).
const canonicalV6 = new Remembered((address) => {
  const host = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(host);
  if (mapped === null) return host;
  const [hi, lo] = [parseInt(mapped[1]!, 16), parseInt(mapped[2]!, 16)];
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
});
