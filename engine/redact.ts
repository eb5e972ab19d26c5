/**
 * Secrets as logs and /health show them: an API key by its first characters, a URL without its
 * password. Whatever is written where operators (and log shippers) read goes through these.
 */

/** How many leading characters of a key stay readable: enough to tell a key's kind, never to use it. */
const KEY_SHOWN = 4;

/** An API key as logged: its first characters, then an ellipsis. */
export const maskKey = (key: string): string => `${key.slice(0, KEY_SHOWN)}…`;

/**
 * A URL with its password replaced by `***` (the user name stays: it says which account, not how to
 * use it). A value that does not parse as a URL keeps only its scheme, if any: it may be a URL that
 * failed to parse with the password in it.
 */
export function withoutPassword(url: string): string {
  // No `@`, no credentials: the common case is not parsed.
  if (!url.includes('@')) return url;
  const scheme = /^[a-z][a-z0-9+.-]*:/i.exec(url)?.[0];
  const notUrl = scheme === undefined ? '(not a URL)' : `${scheme}(not a URL)`;
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return notUrl;
  }
  // `user:pass@host` parses as scheme `user:` with an opaque path: without `//` there is no authority to keep.
  if (!url.slice(scheme?.length ?? 0).startsWith('//')) return notUrl;
  if (u.password === '') return url;
  u.password = '***';
  return u.toString();
}

/** A node-access path (`/rpc/:chain/:apiKey`, or `/:chain/:apiKey` on CHAINPOST_RPC_PORT) as logged: its key masked. */
export function nodeAccessPath(path: string, apiKey: string): string {
  const at = path.lastIndexOf(`/${apiKey}`);
  return apiKey === '' || at < 0 ? path : `${path.slice(0, at + 1)}${maskKey(apiKey)}${path.slice(at + 1 + apiKey.length)}`;
}

/** Where a key may sit in a path no route matched: after `/rpc/:chain/`, or after a first segment (`/:chain/`). */
const KEY_SHAPED = /^(\/rpc\/[^/]+\/|\/[^/]+\/)([^/]+)(\/.*)?$/;

/**
 * A path no route matched, as logged: a node-access path with a wrong method or a trailing segment
 * still carries a key, so the segment where one would be is masked.
 */
export const unmatchedPath = (path: string): string => path.replace(KEY_SHAPED, (_m, head: string, key: string, rest: string | undefined) => `${head}${maskKey(key)}${rest ?? ''}`);

/**
 * A node's URL as /health shows it: its scheme and host (with the port) alone. A user name says which account,
 * and a path or query often holds a provider's key (`/v3/KEY`): none of that is shown. Not a URL: nothing of it.
 */
export function nodeOrigin(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}`;
  } catch {
    return '(not a URL)';
  }
}
