import { Agent, request } from 'undici';
import type { TargetPolicy } from '../../engine/net/targets.js';
import type { MetadataFetcher } from '../../engine/ports.js';
import { guardedConnector } from './guarded-connect.js';

/**
 * NFT metadata documents over undici: at most 1 MiB, 5 s for the whole answer,
 * up to 3 redirects, every connection (a redirect's too) opened through
 * `targets` (http/clients/guarded-connect.ts): with CHAINPOST_PRIVATE_TARGETS=deny
 * no loopback, private, link-local, CGNAT, metadata or other non-public address,
 * checked on the resolver's answer where the socket connects.
 */
export const MAX_BYTES = 1024 * 1024;
export const TIMEOUT_MS = 5_000;
const MAX_REDIRECTS = 3;

export function undiciMetadataFetcher(opts: {
  targets: TargetPolicy;
  maxBytes?: number;
  timeoutMs?: number;
}): MetadataFetcher & { close(): Promise<void> } {
  const maxBytes = opts.maxBytes ?? MAX_BYTES;
  const timeoutMs = opts.timeoutMs ?? TIMEOUT_MS;
  const agent = new Agent({ connect: guardedConnector(opts.targets, 'metadata URL'), connections: 8 });
  return {
    async get(url) {
      const signal = AbortSignal.timeout(timeoutMs);
      try {
        let target = new URL(url);
        for (let hop = 0; ; hop++) {
          if (target.protocol !== 'http:' && target.protocol !== 'https:') return { error: `not an http(s) URL: ${target.protocol}` };
          const res = await request(target, {
            method: 'GET',
            dispatcher: agent,
            signal,
            headersTimeout: timeoutMs,
            bodyTimeout: timeoutMs,
            headers: { accept: 'application/json, */*' },
          });
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
        if (
          e.name === 'TimeoutError' ||
          e.name === 'AbortError' ||
          e.code === 'UND_ERR_HEADERS_TIMEOUT' ||
          e.code === 'UND_ERR_BODY_TIMEOUT'
        )
          return { error: `no answer within ${timeoutMs / 1000} s` };
        return { error: e.cause?.message ?? e.message ?? String(err) };
      }
    },
    close: () => agent.close(),
  };
}
