import type { Chain } from './registry.js';

/**
 * The interface's Versioning table as data. Each change takes effect at
 * 00:00 UTC of its date, by the service clock.
 */

/** Where a chain removal applies. `blocks`: the chain stops producing blocks, so streams on it emit nothing. */
export type Surface = 'data' | 'crosschain' | 'rpc' | 'streams' | 'blocks' | 'bulk';

export interface ChainRemoval {
  readonly date: string;
  readonly chains: readonly string[];
  readonly surfaces: readonly Surface[];
  readonly change: string;
  /** Per chain, where its users go instead, with the same key, auth, request and response shapes. */
  readonly migrateTo?: Readonly<Record<string, string>>;
}

export interface EndpointRemoval {
  readonly date: string;
  readonly method: 'GET' | 'POST' | 'ANY';
  /** Path under the Data API prefix, in route-pattern form (`:name`, trailing `*`). */
  readonly path: string;
  /** 410 for the June 2026 removals (the spec leaves the status open), 404 for July 2026 (the spec says 404). */
  readonly status: 404 | 410;
  readonly replacement?: string;
}

const BASE = '0x2105';

export const CHAIN_REMOVALS: readonly ChainRemoval[] = [
  {
    date: '2026-05-29',
    chains: ['0xfa'],
    surfaces: ['data', 'crosschain', 'rpc', 'streams', 'blocks'],
    change: 'Chain 0xfa removed from all data APIs, node access and streams; streams on it stop emitting and are to be deleted',
  },
  {
    date: '2026-06-01',
    // The interface does not name this chain, so nothing is removed by this entry.
    chains: [],
    surfaces: ['rpc'],
    change: 'Node access for one additional chain and its testnet removed (chain not named in the interface)',
  },
  {
    date: '2026-06-15',
    chains: ['0x15b32', '0x27d8', '0xe705', '0x507', '0x106a'],
    surfaces: ['data', 'crosschain', 'rpc', 'streams', 'blocks', 'bulk'],
    change: 'Testnets removed from data API, streams, node access and bulk datasets',
  },
  {
    date: '2026-08-01',
    chains: ['0x504', '0x505'],
    surfaces: ['blocks'],
    change: 'Chains 0x504 and 0x505 stop producing blocks; their streams no longer emit',
    migrateTo: { '0x504': BASE, '0x505': BASE },
  },
  {
    date: '2026-09-25',
    chains: ['0x504', '0x505', '0x46f'],
    surfaces: ['data', 'crosschain', 'rpc', 'streams', 'bulk'],
    change:
      'Chains 0x504, 0x505 and 0x46f rejected in data and cross-chain requests; node access stops resolving; streams listing them are invalid',
    // The interface names base as the target of the first two only.
    migrateTo: { '0x504': BASE, '0x505': BASE },
  },
];

const JUNE_4 = '2026-06-04';
const JULY_31 = '2026-07-31';
const gone = (method: EndpointRemoval['method'], path: string, replacement?: string): EndpointRemoval =>
  replacement === undefined ? { date: JUNE_4, method, path, status: 410 } : { date: JUNE_4, method, path, status: 410, replacement };
const notFound = (path: string): EndpointRemoval => ({ date: JULY_31, method: 'GET', path, status: 404 });

const DISCOVERY_TOKENS = [
  'rising-liquidity',
  'buying-pressure',
  'solid-performers',
  'experienced-buyers',
  'risky-bets',
  'blue-chip',
  'top-gainers',
  'top-losers',
  'trending',
];

export const ENDPOINT_REMOVALS: readonly EndpointRemoval[] = [
  gone('POST', '/chat'),
  gone('POST', '/discovery/tokens'),
  gone('GET', '/discovery/token'),
  ...DISCOVERY_TOKENS.map((p) => gone('GET', `/discovery/tokens/${p}`)),
  gone('ANY', '/discovery/*'),
  gone('GET', '/volume/chains'),
  gone('GET', '/volume/categories'),
  gone('GET', '/volume/timeseries'),
  gone('GET', '/volume/timeseries/:categoryId'),
  gone('GET', '/pairs/:address/snipers'),
  gone('GET', '/token/:network/pairs/:pairAddress/snipers'),
  gone('GET', '/erc20/exchange/:exchangeName/new'),
  gone('GET', '/erc20/exchange/:exchangeName/bonding'),
  gone('GET', '/erc20/exchange/:exchangeName/graduated'),
  gone('GET', '/erc20/:tokenAddress/bondingStatus'),
  gone('GET', '/erc20/:address/stats'),
  gone('GET', '/erc20/:token_address/pairs/stats', 'GET /tokens/{tokenAddress}/analytics'),
  gone('GET', '/erc20/metadata/symbols', 'GET /tokens/search'),
  gone('GET', '/market-data/erc20s/top-tokens'),
  gone('GET', '/market-data/erc20s/top-movers'),
  gone('GET', '/market-data/nfts/top-collections'),
  gone('GET', '/market-data/nfts/hottest-collections'),
  gone('GET', '/market-data/global/market-cap'),
  gone('GET', '/market-data/global/volume'),
  notFound('/token/:network/holders/:address'),
  notFound('/token/:network/:address/top-holders'),
  notFound('/token/:network/holders/:address/historical'),
  notFound('/erc20/:tokenAddress/holders/historical'),
  notFound('/token/:network/exchange/:exchange/new'),
  notFound('/token/:network/exchange/:exchange/bonding'),
  notFound('/token/:network/exchange/:exchange/graduated'),
  notFound('/token/:network/:address/bonding-status'),
];

/** Dates parsed so far: every request checks the tables, and they hold a handful of dates. */
const parsed = new Map<string, number>();
/** Service time (ms) at which a change dated `date` takes effect: 00:00 UTC of that day. */
export function effectiveAt(date: string): number {
  let at = parsed.get(date);
  if (at === undefined) parsed.set(date, (at = Date.parse(`${date}T00:00:00Z`)));
  return at;
}

export const inEffect = (entry: { date: string }, now: number): boolean => now >= effectiveAt(entry.date);

/** The removal in effect at `now` of a Data API operation (`path` in route-pattern form, a removal's trailing `*` taking every path below), if any. */
export function endpointRemoval(method: string, path: string, now: number): EndpointRemoval | undefined {
  return ENDPOINT_REMOVALS.find(
    (r) =>
      inEffect(r, now) &&
      (r.method === 'ANY' || r.method === method) &&
      (r.path.endsWith('*') ? path.startsWith(r.path.slice(0, -1)) : r.path === path),
  );
}

/** The first removal in effect at `now` that takes `chain` off `surface`, if any. */
export function chainRemoval(chain: Chain, surface: Surface, now: number): ChainRemoval | undefined {
  return CHAIN_REMOVALS.find((r) => inEffect(r, now) && r.surfaces.includes(surface) && r.chains.includes(chain.key));
}

/** Where users of `chain` go after `removal`, if the interface names a target. */
export const migrationTarget = (chain: Chain, removal: ChainRemoval): string | undefined => removal.migrateTo?.[chain.key];

/** The sentence a rejected request carries: which chain, since when, and where to go. */
export function removalMessage(chain: Chain, removal: ChainRemoval): string {
  const what = `chain ${chain.key} (${chain.slug}) was removed on ${removal.date}`;
  const target = migrationTarget(chain, removal);
  return target === undefined ? what : `${what}; migrate to base (${target}) with the same API key, request shapes and response formats`;
}
