import type { LookupAddress } from 'node:dns';
import { buildConnector } from 'undici';
import { isIpLiteral } from '../../engine/net/ip-class.js';
import type { TargetPolicy } from '../../engine/net/targets.js';

/** A connection refused by the target policy; its message says why and how to permit it. */
export class TargetRefused extends Error {
  override name = 'TargetRefused';
}

type LookupCallback = (err: Error | null, address: string | LookupAddress[], family?: number) => void;

/**
 * An undici connector (Agent `connect`) that applies `policy` where the socket
 * is opened: a host name is resolved by the policy's resolver and every address
 * it has is checked before the socket connects to one of them (so a name that
 * answered a public address when it was checked, and a private one now, cannot
 * pass: DNS rebinding); an address in the URL, which Node connects to without a
 * lookup, is checked here. `field` names the URL in the refusal.
 */
export function guardedConnector(policy: TargetPolicy, field: string): buildConnector.connector {
  const lookup = (hostname: string, options: { all?: boolean; family?: number | string }, cb: LookupCallback): void => {
    policy.resolver.lookup(hostname).then(
      (answers) => {
        for (const a of answers) {
          const why = policy.refusal(field, hostname, a.address);
          if (why !== undefined) return cb(new TargetRefused(why), '');
        }
        const family = options.family === 4 || options.family === 'IPv4' ? 4 : options.family === 6 || options.family === 'IPv6' ? 6 : 0;
        const usable = answers.filter((a) => family === 0 || a.family === family);
        if (usable.length === 0) return cb(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), '');
        if (options.all === true)
          return cb(
            null,
            usable.map((a) => ({ address: a.address, family: a.family })),
          );
        cb(null, usable[0]!.address, usable[0]!.family);
      },
      (err: Error) => cb(err, ''),
    );
  };
  const connect = buildConnector({ lookup } as buildConnector.BuildOptions);
  return (options, callback) => {
    if (isIpLiteral(options.hostname)) {
      const why = policy.refusal(field, options.hostname, options.hostname);
      if (why !== undefined) return callback(new TargetRefused(why), null);
    }
    connect(options, callback);
  };
}
