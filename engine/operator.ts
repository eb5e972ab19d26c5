import { ApiError } from './errors.js';
import { hashKey, matchesSecret, type ApiKey } from './keys.js';

/** The header that carries CHAINPOST_ADMIN_KEY to an admin route. */
export const ADMIN_HEADER = 'x-admin-key';

/**
 * Who may call the admin routes (the test clock and its webhook hooks, which act on the whole server): besides
 * an API key, the holder of CHAINPOST_ADMIN_KEY in x-admin-key; without that variable, the first tenant's keys.
 * Any other tenant is answered 403: its key is good, the route is not its to call.
 */
export class OperatorAccess {
  private readonly digest: string | undefined;

  constructor(
    adminKey: string | undefined,
    private readonly firstTenant: () => string | undefined,
  ) {
    this.digest = adminKey === undefined ? undefined : hashKey(adminKey);
  }

  check(caller: ApiKey, presented: string | undefined): void {
    if (this.digest !== undefined) {
      if (!matchesSecret(presented, this.digest))
        throw new ApiError(403, `${ADMIN_HEADER}: an admin route needs the operator's CHAINPOST_ADMIN_KEY in the ${ADMIN_HEADER} header`, {
          field: ADMIN_HEADER,
        });
    } else if (caller.tenantId !== this.firstTenant()) {
      throw new ApiError(
        403,
        "an admin route is the operator's: without CHAINPOST_ADMIN_KEY set, only the first tenant's keys may call it",
      );
    }
  }
}

/**
 * CHAINPOST_METRICS_KEY: whether a request may read /metrics and /health's detail, from its Authorization header
 * (`Bearer <key>`, as Prometheus sends a scrape's credentials). Without the variable, anyone may.
 */
export function metricsReader(metricsKey: string | undefined): (authorization: string | undefined) => boolean {
  if (metricsKey === undefined) return () => true;
  const digest = hashKey(metricsKey);
  return (authorization) => matchesSecret(bearerToken(authorization), digest);
}

/** The token of an `Authorization: Bearer <token>` header (any case of the scheme). */
export const bearerToken = (v: string | undefined): string | undefined =>
  v !== undefined && /^bearer /i.test(v) ? v.slice(7).trim() : undefined;
