import type { Resolver } from '../ports.js';
import { KIND_PHRASE, classifyIp, isIpLiteral } from './ip-class.js';

/** CHAINPOST_PRIVATE_TARGETS: whether the server may connect to non-public addresses on a user's behalf. */
export type PrivateTargets = 'allow' | 'deny';

/**
 * The rule for URLs the server fetches on a user's behalf (webhook targets, NFT
 * metadata): with `deny`, no address that is not public (engine/net/ip-class.ts)
 * may be reached. The adapters apply `refusal` to every address they are about
 * to connect to (http/clients/guarded-connect.ts); `check` answers for a URL
 * ahead of time (a stream's webhookUrl when it is set), through the same resolver.
 */
export class TargetPolicy {
  constructor(
    readonly mode: PrivateTargets,
    readonly resolver: Resolver,
  ) {}

  /** Why `field`'s host may not be reached at `address` (the host itself when it is an address), starting `field: `; undefined when it may. */
  refusal(field: string, host: string, address: string): string | undefined {
    if (this.mode === 'allow') return undefined;
    const kind = classifyIp(address);
    if (kind === 'public') return undefined;
    const where = host === address ? `${field}: host ${address} is` : `${field}: host ${host} resolves to ${address},`;
    return `${where} ${KIND_PHRASE[kind]}; CHAINPOST_PRIVATE_TARGETS=allow permits it`;
  }

  /**
   * Why the URL's host may not be reached, looked up now, or undefined when it may. A name that does not
   * resolve is left to the connection, which reports it as any unreachable host.
   */
  async check(url: string, field: string): Promise<string | undefined> {
    if (this.mode === 'allow') return undefined;
    const host = hostOf(url);
    if (isIpLiteral(host)) return this.refusal(field, host, host);
    let answers: ReadonlyArray<{ address: string }>;
    try {
      answers = await this.resolver.lookup(host);
    } catch {
      return undefined;
    }
    for (const a of answers) {
      const why = this.refusal(field, host, a.address);
      if (why !== undefined) return why;
    }
    return undefined;
  }
}

/** A URL's host as connected to: an IPv6 address without its brackets. */
const hostOf = (url: string): string => new URL(url).hostname.replace(/^\[(.*)\]$/, '$1');
