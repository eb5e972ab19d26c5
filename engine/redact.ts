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
export const withoutPassword = (url: string): string => redacted(url, false);

/**
 * A URL with its user name and password each replaced by `***`: for a URL whose user name may be the secret
 * itself (a NATS server's `nats://token@host`). What does not parse as a URL: as withoutPassword.
 */
export const withoutCredentials = (url: string): string => redacted(url, true);

function redacted(url: string, user: boolean): string {
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
  if (user && u.username !== '') u.username = '***';
  if (u.password === '') return user ? u.toString() : url;
  u.password = '***';
  return u.toString();
}

/** The API key of a node-access path, percent-decoded, and where it sits in the path as sent: [start, end). */
export interface PathKey {
  key: string;
  start: number;
  end: number;
}

/**
 * The API key of a node-access path `{prefix}/:chain/:apiKey` (prefix `/rpc` or empty): the segment after the
 * chain's, empty segments skipped (`//0x539/KEY`: a base URL with a trailing slash), percent-decoded. Node access
 * authenticates this key and logs mask exactly its span, so what a path is let in with is what its log line hides,
 * however the key is spelled (`%63pk_…`, `KEY%0a`). Undefined when the path has no segment there.
 */
export function nodeAccessKey(path: string, prefix: string): PathKey | undefined {
  const wanted = prefix === '' ? 2 : 3;
  let n = 0;
  for (let i = 0; i < path.length; i++) {
    if (path.charCodeAt(i) === 0x2f) continue;
    let end = path.indexOf('/', i);
    if (end < 0) end = path.length;
    n++;
    if (n === 1 && prefix !== '' && path.slice(i, end).toLowerCase() !== prefix.slice(1)) return undefined;
    if (n === wanted) return { key: decoded(path.slice(i, end)), start: i, end };
    i = end;
  }
  return undefined;
}

const decoded = (segment: string): string => {
  if (!segment.includes('%')) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    // Not valid percent-encoding: the key as sent (unknown, refused).
    return segment;
  }
};

/** A node-access path as logged: its key (nodeAccessKey) masked. */
export function nodeAccessPath(path: string, prefix: string): string {
  return masked(path, nodeAccessKey(path, prefix));
}

/**
 * A path no route matched, as logged: a node-access path with a wrong method, a doubled slash or a trailing
 * segment still carries a key, so the segment where either port's node access would read one is masked.
 */
export const unmatchedPath = (path: string): string => masked(path, nodeAccessKey(path, '/rpc') ?? nodeAccessKey(path, ''));

const masked = (path: string, at: PathKey | undefined): string =>
  at === undefined ? path : `${path.slice(0, at.start)}${maskKey(at.key)}${path.slice(at.end)}`;

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
