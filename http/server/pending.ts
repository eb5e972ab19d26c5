import { notBuilt, type Area, type Method, type Route } from './route.js';

/** Auth and Streams endpoints the interface names, answered 501 until their issues build them. */
const PENDING: ReadonlyArray<[Area, Method, string]> = [
  ['auth', 'POST', '/challenge/request/evm'],
  ['auth', 'POST', '/challenge/verify/evm'],
  ['auth', 'POST', '/challenge/verify/aptos'],
  ['auth', 'POST', '/bind/remove'],
  ['streams', 'PUT', '/streams/evm'],
  ['streams', 'POST', '/history/replay/:historyId'],
];

export const pendingRoutes = (): Route[] =>
  PENDING.map(([area, method, pattern]) => ({ method, pattern, area, auth: 'key', handle: () => notBuilt(method, pattern) }));
