import type { Clock } from '../../engine/clock.js';
import { chainFor } from '../../engine/chains/lifecycle.js';
import { notBuilt, type Route } from './route.js';

/** Node access: POST /rpc/:chain/:apiKey, the key in the path, errors as JSON-RPC error objects. */
export function rpcRoutes(clock: Clock): Route[] {
  return [
    {
      method: 'POST',
      pattern: '/rpc/:chain/:apiKey',
      area: 'rpc',
      auth: 'path',
      body: true,
      errors: 'jsonrpc',
      handle: (req) => {
        chainFor(req.params['chain']!, 'rpc', clock.now());
        return notBuilt('POST', '/rpc/:chain/:apiKey');
      },
    },
  ];
}
