import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Deps } from '../deps-types.ts';
import type { ZApp } from '../http/types.ts';
import { AppError } from '../shared/errors.ts';
import { secretMatches, hashSecret } from '../shared/secrets.ts';

/** Counts every answered request by route pattern (never the raw URL: bounded label values). */
export function registerMetricsHook(app: FastifyInstance, deps: Pick<Deps, 'metrics'>): void {
  app.addHook('onResponse', async (req, reply) => {
    const labels = { method: req.method, route: req.routeOptions.url ?? 'unmatched', status: String(reply.statusCode) };
    deps.metrics.httpRequests.inc(labels);
    deps.metrics.httpDuration.observe(labels, reply.elapsedTime / 1000);
  });
}

const LOOPBACK = /^(127\.|::1$|::ffff:127\.)/;

/**
 * GET /metrics in Prometheus text format. With METRICS_TOKEN it needs `Authorization: Bearer
 * <token>`; without it only loopback clients are answered (a scraper on the same host or a sidecar),
 * since the figures (credits by model, traffic) are not for the public.
 */
export function registerMetricsRoute(app: ZApp, deps: Pick<Deps, 'metrics' | 'config'>): void {
  const { enabled, token } = deps.config.metrics;
  if (!enabled) return;
  const tokenHash = token === null ? null : hashSecret(token);
  app.get('/metrics', {
    schema: {
      operationId: 'getMetrics',
      example: { response: '# HELP tsfm_forecasts_total Forecasts served\n# TYPE tsfm_forecasts_total counter\ntsfm_forecasts_total{model="auto-ets"} 42\n' },
      tags: ['system'],
      summary: 'Prometheus metrics',
      security: [{ metricsToken: [] }, {}],
      produces: ['text/plain'],
      description:
        'Metrics in the Prometheus text exposition format. Needs `Authorization: Bearer <METRICS_TOKEN>` when the operator set one; ' +
        'otherwise only clients on the loopback address are answered. Metric names are documented in docs/operations.md.',
      response: { 200: z.string().describe('Prometheus text format 0.0.4') },
    },
    config: { auth: 'public' },
    handler: async (req, reply) => {
      if (tokenHash !== null) {
        const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
        if (!m?.[1] || !secretMatches(m[1], tokenHash)) throw new AppError('invalid_credential', 'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>');
      } else if (!LOOPBACK.test(req.ip)) {
        throw new AppError('forbidden', 'GET /metrics answers loopback clients only; set METRICS_TOKEN to scrape it from elsewhere');
      }
      void reply.type(deps.metrics.registry.contentType);
      return deps.metrics.registry.metrics();
    },
  });
}
