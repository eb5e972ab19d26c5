import { z } from 'zod';
import type { ServiceClock } from '../../engine/clock.js';
import type { Metrics } from '../../engine/metrics.js';
import { validate } from '../../engine/schema.js';
import { ApiError } from '../../engine/errors.js';
import { metricsReader } from '../../engine/operator.js';
import { json, operatorOnly, type Reply, type Request, type Route, type RouteDoc } from './route.js';

const advanceBody = z.strictObject({
  seconds: z
    .number({ error: 'a number of seconds is required' })
    .finite()
    .nonnegative()
    .max(10 * 365 * 86_400),
});

const clockAnswer = z.object({ now: z.string() });

/** Health, metrics, the unknown-route answer and, with CHAINPOST_TEST_CLOCK=1, the test clock. */
export function systemRoutes(deps: {
  metrics: Metrics;
  clock: ServiceClock;
  testClock: boolean;
  health: () => Record<string, unknown>;
  /** The schema of what `health` answers (the OpenAPI document's). */
  healthAnswer: z.ZodObject;
  /** The server's own parts not up yet: 503 until none is (an upstream node's state stays per chain, never a 503). */
  starting: () => readonly string[];
  settle: () => Promise<void>;
  /** CHAINPOST_METRICS_KEY: without it, /metrics is refused and /health answers its status alone. */
  metricsKey: string | undefined;
}): Route[] {
  const { clock } = deps;
  const reader = metricsReader(deps.metricsKey);
  const health = (req: Request): Reply => {
    const starting = deps.starting();
    // A load balancer's liveness check needs no key: the status and its code, nothing of the chains or nodes.
    if (!reader(req.header('authorization')))
      return starting.length === 0 ? json(200, { status: 'ok' }) : json(503, { status: 'starting' });
    return starting.length === 0
      ? json(200, { status: 'ok', ...deps.health() })
      : json(503, { status: 'starting', starting, ...deps.health() });
  };
  // Without the metrics key, the status alone; with it, the figures too (and, while starting, the parts not up yet).
  const figures = deps.healthAnswer;
  const healthDoc: RouteDoc = {
    responses: {
      200: z.union([z.object({ status: z.literal('ok') }), figures.extend({ status: z.literal('ok') })]),
      503: z.union([
        z.object({ status: z.literal('starting') }),
        figures.extend({
          status: z.literal('starting'),
          starting: z.array(z.string()).meta({ description: "The server's own parts not up yet" }),
        }),
      ]),
    },
  };
  const routes: Route[] = [
    { method: 'GET', pattern: '/health', area: 'system', auth: 'none', doc: healthDoc, handle: health },
    {
      method: 'GET',
      pattern: '/metrics',
      area: 'system',
      auth: 'none',
      // The Prometheus text format; 401 without the metrics key.
      doc: { responses: { 200: { contentType: 'text/plain' } }, errors: [401] },
      handle: async (req) => {
        if (!reader(req.header('authorization')))
          throw new ApiError(
            401,
            'authorization: /metrics needs the CHAINPOST_METRICS_KEY as a Bearer token',
            { field: 'authorization' },
            { 'www-authenticate': 'Bearer' },
          );
        return { status: 200, text: await deps.metrics.renderAll(), contentType: 'text/plain; version=0.0.4; charset=utf-8' };
      },
    },
  ];
  if (deps.testClock) {
    const now = () => json(200, { now: new Date(clock.now()).toISOString() });
    routes.push(
      operatorOnly({
        method: 'GET',
        pattern: '/admin/clock',
        area: 'admin',
        auth: 'key',
        doc: { responses: { 200: clockAnswer } },
        handle: now,
      }),
      operatorOnly({
        method: 'POST',
        pattern: '/admin/clock/advance',
        area: 'admin',
        auth: 'key',
        body: true,
        doc: { body: advanceBody, responses: { 200: clockAnswer } },
        handle: async (req) => {
          const { seconds } = validate(advanceBody, req.body);
          // Work already under way (deliveries) finishes first, so the jump sees its effects.
          await deps.settle();
          await clock.advance(seconds * 1000);
          await deps.settle();
          return now();
        },
      }),
    );
  }
  return routes;
}

/** Mounted last: whatever no route matched. */
export const unknownRoute: Route = {
  method: 'ANY',
  pattern: '/*',
  area: 'system',
  auth: 'none',
  handle: (req) => json(404, { message: `no route ${req.method} ${req.path}` }),
};
