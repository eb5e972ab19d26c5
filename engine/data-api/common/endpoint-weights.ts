import { z } from 'zod';
import { endpointRemoval } from '../../chains/removals.js';

/**
 * GET /info/endpointWeights: the operations this server serves (the Data API's route table, given by the
 * caller), less those removed by the service clock, with what a request costs here. The hosted service's
 * weights are not documented (neither the OpenAPI nor the notes give them), so each counts as this server's
 * rate limiter counts it: one request (`rateLimitCost` 1); nothing is billed (`price` 0). Strings, as the
 * interface's schema says; paths in the document's `{name}` form.
 */
export function endpointWeights(now: number, operations: ReadonlyArray<{ operation: string; method: string; path: string }>) {
  return operations
    .filter((o) => endpointRemoval(o.method, o.path, now) === undefined)
    .map((o) => ({ endpoint: o.operation, path: o.path.replace(/:([^/]+)/g, '{$1}'), price: '0', rateLimitCost: '1' }));
}

export const endpointWeightsAnswer = z.array(
  z.object({
    endpoint: z.string().meta({ description: "The operation's name (the hosted reference's operationId)" }),
    path: z.string(),
    price: z.string(),
    rateLimitCost: z.string(),
  }),
);
