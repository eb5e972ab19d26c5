import type { Clock } from '../../engine/clock.js';
import { chainFor } from '../../engine/chains/lifecycle.js';
import { rpcAnswers } from '../../engine/rpc/envelope.js';
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
      // The request is checked by engine/rpc/request.ts, one call at a time (a bad call of a batch is answered on its own).
      // 500: a lone call whose node could not be reached (a JSON-RPC error object, as every error here).
      doc: { summary: 'JSON-RPC to the chain: one call or a batch', responses: { 200: rpcAnswers }, errors: [500] },
      handle: async (req) => {
        const chain = chainFor(req.params['chain']!, 'rpc', clock.now());
        return nodes.answer(chain, req.body);
      },
    },
  ];
}
