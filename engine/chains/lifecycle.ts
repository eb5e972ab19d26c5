import { ApiError } from '../errors.js';
import { findChain, type Chain, type ChainFamily } from './registry.js';
import { chainRemoval, migrationTarget, removalMessage, type Surface } from './removals.js';

/**
 * Resolves a chain named in a request (hex, decimal or slug) for one surface at
 * service time `now`. Data, cross-chain and stream requests answer 400 naming
 * the field for an unknown or removed chain; node access answers 404 (its path
 * no longer resolves).
 */
export function chainFor(
  value: string,
  surface: Surface,
  now: number,
  opts: { field?: string; families?: readonly ChainFamily[] } = {},
): Chain {
  const field = opts.field ?? 'chain';
  const reject = (message: string, details: Record<string, unknown> = {}): ApiError =>
    surface === 'rpc' ? new ApiError(404, message, details) : new ApiError(400, `${field}: ${message}`, { field, ...details });

  const chain = findChain(value);
  if (chain === undefined || !(opts.families ?? ['evm']).includes(chain.family)) throw reject(`unknown chain "${value}"`);
  const removal = chainRemoval(chain, surface, now);
  if (removal !== undefined) {
    const target = migrationTarget(chain, removal);
    throw reject(removalMessage(chain, removal), {
      chain: chain.key,
      removedOn: removal.date,
      ...(target === undefined ? {} : { migrateTo: target }),
    });
  }
  return chain;
}
