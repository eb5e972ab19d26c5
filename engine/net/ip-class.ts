/**
 * What kind of address an IP address is, for deciding whether the server may
 * connect to it on a user's behalf (webhook and NFT metadata targets). Pure:
 * text in, a kind out; no sockets, no DNS.
 *
 * Everything the IANA special-purpose registries mark not globally reachable is
 * some kind other than `public`. IPv6 forms that carry an IPv4 address
 * (IPv4-mapped ::ffff:a.b.c.d and ::ffff:7f00:1, IPv4-compatible ::a.b.c.d,
 * IPv4-translated ::ffff:0:a.b.c.d, NAT64 64:ff9b::/96, 6to4 2002::/16) are
 * judged by the IPv4 address inside. IPv6 outside global unicast (2000::/3) is
 * `reserved`. Text that is not an IP address is `not-an-address`.
 */
export type AddressKind =
  | 'public'
  | 'loopback'
  | 'private'
  | 'link-local'
  | 'cgnat'
  | 'metadata'
  | 'unspecified'
  | 'multicast'
  | 'reserved'
  | 'not-an-address';

/** The kind as a phrase, for messages: "a private address". */
export const KIND_PHRASE: Readonly<Record<AddressKind, string>> = {
  public: 'a public address',
  loopback: 'a loopback address',
  private: 'a private address',
  'link-local': 'a link-local address',
  cgnat: 'a carrier-grade NAT (100.64.0.0/10) address',
  metadata: 'a cloud metadata address',
  unspecified: 'an unspecified (this-network) address',
  multicast: 'a multicast or broadcast address',
  reserved: 'a reserved address (documentation, benchmarking, protocol or future use: not globally routable)',
  'not-an-address': 'not an IP address',
};

export function classifyIp(ip: string): AddressKind {
  const v4 = parseIpv4(ip);
  if (v4 !== undefined) return classifyV4(v4);
  const v6 = parseIpv6(ip);
  return v6 === undefined ? 'not-an-address' : classifyV6(v6);
}

/** Whether the text is an IPv4 or IPv6 address (a URL's host or a resolver's answer). */
export const isIpLiteral = (text: string): boolean => parseIpv4(text) !== undefined || parseIpv6(text) !== undefined;

type Range4 = readonly [network: string, bits: number, kind: AddressKind];

// First match wins: single metadata addresses before the ranges that hold them.
const V4_RANGES: readonly Range4[] = [
  ['169.254.169.254', 32, 'metadata'], // AWS, GCP, Azure, OpenStack, DigitalOcean instance metadata
  ['169.254.170.2', 32, 'metadata'], // AWS ECS task metadata
  ['100.100.100.200', 32, 'metadata'], // Alibaba Cloud
  ['168.63.129.16', 32, 'metadata'], // Azure WireServer (VM agent, DNS, health probes): answers any VM, in public space
  ['192.0.0.192', 32, 'metadata'], // Oracle Cloud
  ['0.0.0.0', 8, 'unspecified'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'cgnat'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'reserved'], // IETF protocol assignments
  ['192.0.2.0', 24, 'reserved'], // TEST-NET-1
  ['192.88.99.0', 24, 'reserved'], // 6to4 relay anycast (deprecated)
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'reserved'], // benchmarking
  ['198.51.100.0', 24, 'reserved'], // TEST-NET-2
  ['203.0.113.0', 24, 'reserved'], // TEST-NET-3
  ['224.0.0.0', 4, 'multicast'],
  ['255.255.255.255', 32, 'multicast'], // limited broadcast
  ['240.0.0.0', 4, 'reserved'], // future use
];

const V4_TABLE = V4_RANGES.map(([net, bits, kind]) => ({ net: parseIpv4(net)!, bits, kind }));

function classifyV4(a: number): AddressKind {
  for (const r of V4_TABLE) if (r.bits === 0 || a >>> (32 - r.bits) === r.net >>> (32 - r.bits)) return r.kind;
  return 'public';
}

type Range6 = readonly [network: string, bits: number, kind: AddressKind | 'embedded-v4' | 'embedded-6to4'];

const V6_RANGES: readonly Range6[] = [
  ['::', 128, 'unspecified'],
  ['::1', 128, 'loopback'],
  ['fd00:ec2::254', 128, 'metadata'], // AWS instance metadata over IPv6
  ['::ffff:0:0', 96, 'embedded-v4'], // IPv4-mapped
  ['::ffff:0:0:0', 96, 'embedded-v4'], // IPv4-translated (SIIT)
  ['::', 96, 'embedded-v4'], // IPv4-compatible (deprecated)
  ['64:ff9b::', 96, 'embedded-v4'], // NAT64 well-known prefix
  ['64:ff9b:1::', 48, 'private'], // NAT64 local use
  ['100::', 64, 'reserved'], // discard-only
  ['2001::', 32, 'reserved'], // Teredo: carries an obfuscated IPv4 address, refused whole
  ['2001:2::', 48, 'reserved'], // benchmarking
  ['2001:10::', 28, 'reserved'], // ORCHID
  ['2001:20::', 28, 'reserved'], // ORCHIDv2
  ['2001:db8::', 32, 'reserved'], // documentation
  ['2002::', 16, 'embedded-6to4'], // 6to4: the IPv4 address in bits 16-47
  ['3fff::', 20, 'reserved'], // documentation (RFC 9637)
  ['2000::', 3, 'public'], // global unicast: what is left of it
  ['fc00::', 7, 'private'], // unique local
  ['fe80::', 10, 'link-local'],
  ['fec0::', 10, 'private'], // site-local (deprecated)
  ['ff00::', 8, 'multicast'],
];

const V6_TABLE = V6_RANGES.map(([net, bits, kind]) => ({ shift: BigInt(128 - bits), prefix: parseIpv6(net)! >> BigInt(128 - bits), kind }));

function classifyV6(a: bigint): AddressKind {
  const r = V6_TABLE.find((x) => a >> x.shift === x.prefix);
  if (r === undefined) return 'reserved'; // outside 2000::/3 and every listed block: unassigned
  if (r.kind === 'embedded-v4') return classifyV4(Number(a & 0xffffffffn));
  if (r.kind === 'embedded-6to4') return classifyV4(Number((a >> 80n) & 0xffffffffn));
  return r.kind;
}

/** Dotted quad, each part 0-255 without leading zeros (which some parsers read as octal); else undefined. */
function parseIpv4(text: string): number | undefined {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (m === null) return undefined;
  let out = 0;
  for (const part of m.slice(1)) {
    if ((part.length > 1 && part.startsWith('0')) || Number(part) > 255) return undefined;
    out = out * 256 + Number(part);
  }
  return out;
}

/** RFC 4291 text (with `::`, an IPv4 tail and a zone id such as %eth0) as a 128-bit number; else undefined. */
function parseIpv6(text: string): bigint | undefined {
  const bare = text.replace(/%[^%]+$/, '').toLowerCase();
  if (!/^[0-9a-f:.]+$/.test(bare)) return undefined;
  const halves = bare.split('::');
  if (halves.length > 2 || (halves.length === 2 && halves[0]!.includes('.'))) return undefined;
  const head = groups(halves[0]!);
  const tail = halves.length === 2 ? groups(halves[1]!) : [];
  if (head === undefined || tail === undefined) return undefined;
  const n = head.length + tail.length;
  if (halves.length === 2 ? n > 7 : n !== 8) return undefined;
  const all = [...head, ...new Array<number>(8 - n).fill(0), ...tail];
  return all.reduce((acc, g) => (acc << 16n) | BigInt(g), 0n);
}

/** The 16-bit groups of one side of `::`; an IPv4 address may end it (two groups). */
function groups(part: string): number[] | undefined {
  if (part === '') return [];
  const pieces = part.split(':');
  const out: number[] = [];
  for (const [i, p] of pieces.entries()) {
    if (i === pieces.length - 1 && p.includes('.')) {
      const v4 = parseIpv4(p);
      if (v4 === undefined) return undefined;
      out.push(v4 >>> 16, v4 & 0xffff);
    } else if (/^[0-9a-f]{1,4}$/.test(p)) out.push(parseInt(p, 16));
    else return undefined;
  }
  return out;
}
