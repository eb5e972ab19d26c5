/**
 * The page's calls to the API of the server that serves it: same origin, the tenant's key in x-api-key, never in a
 * URL. The key lives in this tab's sessionStorage alone (gone when the tab closes; no cookie, no localStorage).
 */

const KEY = 'chainpost.apiKey';

export const session = {
  key: (): string | null => sessionStorage.getItem(KEY),
  signIn: (key: string): void => sessionStorage.setItem(KEY, key),
  signOut: (): void => sessionStorage.removeItem(KEY),
};

/** The API's root: the page is `<root>dashboard`, so it works behind a reverse proxy's path prefix too. */
const root = (): string => location.pathname.replace(/dashboard\/?$/, '');

/** An answer other than 2xx: its status and the API's `message` (or the body's text). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** A call with the signed-in key (or `key`, to try one before keeping it); JSON in and out. */
export async function api<T = unknown>(path: string, init: { method?: string; json?: unknown; key?: string } = {}): Promise<T> {
  const headers: Record<string, string> = {};
  const key = init.key ?? session.key();
  if (key !== null) headers['x-api-key'] = key;
  if (init.json !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${root()}${path}`, {
    method: init.method ?? 'GET',
    headers,
    body: init.json === undefined ? null : JSON.stringify(init.json),
    cache: 'no-store',
    credentials: 'omit',
    redirect: 'error',
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: kept as text
  }
  if (!res.ok) {
    const message = (body as { message?: unknown } | null)?.message;
    throw new ApiError(res.status, typeof message === 'string' ? message : `HTTP ${res.status} ${text.slice(0, 200)}`);
  }
  return body as T;
}

/** An error's text for the page. */
export const errorText = (err: unknown): string =>
  err instanceof ApiError ? `${err.status}: ${err.message}` : err instanceof Error ? err.message : String(err);

/** A page of the API's lists. */
export interface Page<T> {
  result: T[];
  total: number;
  cursor?: string | null;
}
