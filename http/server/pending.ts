import { notBuilt, type Area, type Method, type Route } from './route.js';

/** Solana streams (CONVENTIONS.md), answered 501 until their issue builds them. */
const STREAM_KINDS = ['solana'];
const PENDING: ReadonlyArray<[Area, Method, string]> = [
  ...STREAM_KINDS.flatMap((k): Array<[Area, Method, string]> => [
    ['streams', 'PUT', `/streams/${k}`],
    ['streams', 'GET', `/streams/${k}`],
    ['streams', 'GET', `/streams/${k}/:id`],
    ['streams', 'POST', `/streams/${k}/:id`],
    ['streams', 'DELETE', `/streams/${k}/:id`],
    ['streams', 'POST', `/streams/${k}/:id/status`],
    ['streams', 'GET', `/streams/${k}/:id/address`],
    ['streams', 'POST', `/streams/${k}/:id/address`],
    ['streams', 'DELETE', `/streams/${k}/:id/address`],
  ]),
];

export const pendingRoutes = (): Route[] =>
  PENDING.map(([area, method, pattern]) => ({ method, pattern, area, auth: 'key', handle: () => notBuilt(method, pattern) }));
