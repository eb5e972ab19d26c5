import type { Clock } from '../../engine/clock.js';
import { chainFor } from '../../engine/chains/lifecycle.js';
import type { NodeAccess } from '../../engine/rpc/service.js';
import type { Route } from './route.js';

/**
 * Node access: POST {prefix}/:chain/:apiKey, the key in the path, errors as
 * JSON-RPC error objects. The prefix is /rpc on the main port and empty on
 * CHAINPOST_RPC_PORT ({rpc_url}/:chain/:apiKey).
 */
export function rpcRoutes(clock: Clock, nodes: NodeAccess, prefix = '/rpc'): Route[] {
  return [
    {
      method: 'POST',
      pattern: `${prefix}/:chain/:apiKey`,
      area: 'rpc',
      auth: 'path',
      body: true,
      errors: 'jsonrpc',
      handle: async (req) => {
        const chain = chainFor(req.params['chain']!, 'rpc', clock.now());
        return nodes.answer(chain, req.body);
      },
    },
  ];
}
