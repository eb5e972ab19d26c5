import { notBuilt, type Area, type Method, type Route } from './route.js';

/** Streams endpoints the interface names, answered 501 until their issue builds them. */
const PENDING: ReadonlyArray<[Area, Method, string]> = [
  ['streams', 'PUT', '/streams/evm'],
  ['streams', 'POST', '/history/replay/:historyId'],
];

export const pendingRoutes = (): Route[] =>
  PENDING.map(([area, method, pattern]) => ({ method, pattern, area, auth: 'key', handle: () => notBuilt(method, pattern) }));
