import type { Factory, Pricing } from '../../chains/pricing.js';
import { isExchange } from '../../data-api/dex/index/prices.js';
import { badRequest } from '../../errors.js';
import type { DefiAdapter } from './adapter.js';
import { uniswapV2 } from './uniswap-v2.js';
import { uniswapV3 } from './uniswap-v3.js';

/** The DeFi adapters this server has: GET /v1/defi/protocols lists them; a protocol without one is not known here. */
export const ADAPTERS: readonly DefiAdapter[] = [uniswapV2, uniswapV3];

/** The adapter of a protocol id (case aside); else 400 naming `field` and the ids there are. */
export function adapterOf(id: string, field = 'protocol'): DefiAdapter {
  const found = ADAPTERS.find((a) => a.protocol.id === id.trim().toLowerCase());
  if (found === undefined)
    throw badRequest(
      field,
      `unknown protocol "${id}": this server has adapters for ${ADAPTERS.map((a) => a.protocol.id).join(', ')} (GET /v1/defi/protocols)`,
    );
  return found;
}

/** A chain's registry factories that are the adapter's protocol: its kind and its name (`Uniswap v2`, not a fork's). */
export const protocolFactories = (pricing: Pricing | undefined, adapter: DefiAdapter): Factory[] =>
  (pricing?.factories ?? []).filter((f) => f.kind === adapter.protocol.kind && isExchange(f, adapter.protocol.name));
