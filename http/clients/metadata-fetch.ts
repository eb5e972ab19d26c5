import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { Agent, request } from 'undici';
import type { MetadataFetcher } from '../../engine/ports.js';

/**
 * NFT metadata documents over undici: at most 1 MiB, 5 s for the whole answer,
 * up to 3 redirects (each checked again), and no private-network address
 * (loopback, RFC 1918, link-local, CGNAT, ULA) unless `allowPrivate` (the server
 * itself listens on loopback: a local setup). Addresses are checked where the
 * connection is made (the resolver's answer), so a name cannot point the
 * server at an internal host.
 */
export const MAX_BYTES = 1024 * 1024;
export const TIMEOUT_MS = 5_000;
const MAX_REDIRECTS = 3;

const PRIVATE = new BlockList();
for (const [net, bits] of [['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12], ['192.168.0.0', 16], ['198.18.0.0', 15], ['224.0.0.0', 3]] as const) PRIVATE.addSubnet(net, bits, 'ipv4');
// NAT64 (64:ff9b::/96) and 6to4 (2002::/16) carry IPv4 addresses inside: refused whole rather than decoded.
for (const [net, bits] of [['::', 127], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8], ['64:ff9b::', 96], ['2002::', 16]] as const) PRIVATE.addSubnet(net, bits, 'ipv6');

/** Whether an IP address lies in a private, loopback or otherwise non-public range. */
export function isPrivateAddress(ip: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped !== null) return PRIVATE.check(mapped[1]!, 'ipv4');
  const family = isIP(ip);
  return family === 0 ? true : PRIVATE.check(ip, family === 4 ? 'ipv4' : 'ipv6');
}

export function undiciMetadataFetcher(opts: { allowPrivate: boolean; maxBytes?: number; timeoutMs?: number }): MetadataFetcher & { close(): Promise<void> } {
  const maxBytes = opts.maxBytes ?? MAX_BYTES;
  const timeoutMs = opts.timeoutMs ?? TIMEOUT_MS;
  const refused = (ip: string): boolean => !opts.allowPrivate && isPrivateAddress(ip);
  // The resolver's answer, checked before the socket connects.
  const lookup = (hostname: string, options: object, cb: (err: Error | null, address: string | LookupAddress[], family?: number) => void): void => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err !== null) return cb(err, '');
      const bad = addresses.find((a) => refused(a.address));
      if (bad !== undefined) return cb(new Error(`${hostname} resolves to ${bad.address}, a private-network address`), '');
      if ((options as { all?: boolean }).all === true) return cb(null, addresses);
      cb(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
  const agent = new Agent({ connect: { lookup } as never, connections: 8 });
  return {
    async get(url) {
      const signal = AbortSignal.timeout(timeoutMs);
      try {
        let target = new URL(url);
        for (let hop = 0; ; hop++) {
          if (target.protocol !== 'http:' && target.protocol !== 'https:') return { error: `not an http(s) URL: ${target.protocol}` };
          const host = target.hostname.replace(/^\[|\]$/g, '');
          // An address in the URL is connected to without a lookup: check it here.
          if (isIP(host) !== 0 && refused(host)) return { error: `${host} is a private-network address` };
          const res = await request(target, { method: 'GET', dispatcher: agent, signal, headersTimeout: timeoutMs, bodyTimeout: timeoutMs, headers: { accept: 'application/json, */*' } });
          if (res.statusCode >= 300 && res.statusCode < 400 && res.headers['location'] !== undefined) {
            await res.body.dump();
            if (hop >= MAX_REDIRECTS) return { error: `more than ${MAX_REDIRECTS} redirects` };
            target = new URL(String(res.headers['location']), target);
            continue;
          }
          if (res.statusCode < 200 || res.statusCode >= 300) {
            await res.body.dump();
            return { error: `HTTP ${res.statusCode}` };
          }
          const declared = Number(res.headers['content-length'] ?? 0);
          if (declared > maxBytes) {
            res.body.destroy();
            return { error: `larger than ${maxBytes} bytes` };
          }
          const chunks: Buffer[] = [];
          let size = 0;
          for await (const chunk of res.body) {
            size += (chunk as Buffer).length;
            if (size > maxBytes) {
              res.body.destroy();
              return { error: `larger than ${maxBytes} bytes` };
            }
            chunks.push(chunk as Buffer);
          }
          return { body: Buffer.concat(chunks).toString('utf8') };
        }
      } catch (err) {
        const e = err as { name?: string; code?: string; message?: string; cause?: { message?: string } };
        if (e.name === 'TimeoutError' || e.name === 'AbortError' || e.code === 'UND_ERR_HEADERS_TIMEOUT' || e.code === 'UND_ERR_BODY_TIMEOUT') return { error: `no answer within ${timeoutMs / 1000} s` };
        return { error: e.cause?.message ?? e.message ?? String(err) };
      }
    },
    close: () => agent.close(),
  };
}
