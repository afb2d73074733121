import { z } from 'zod';
import type { Deps } from '../deps-types.ts';
import type { ZApp } from '../http/types.ts';
import pkg from '../../package.json' with { type: 'json' };

const SystemStatus = z
  .object({
    status: z.enum(['ok', 'degraded']),
    version: z.string(),
    uptime_s: z.number(),
    database: z.object({ kind: z.enum(['sqlite', 'postgres']), reachable: z.boolean() }),
    models: z.object({ count: z.number().int(), available: z.number().int() }),
    regions: z.array(z.string()),
    time: z.string(),
  })
  .meta({ id: 'SystemStatus' });

/** The document's outline (the rest is OpenAPI 3.1 itself, https://spec.openapis.org/oas/v3.1.0). */
const OpenApiDocument = z
  .looseObject({
    openapi: z.string().describe('OpenAPI version: 3.1.0.'),
    info: z.looseObject({ title: z.string(), version: z.string() }),
    paths: z.record(z.string(), z.looseObject({})).describe('Every operation, by path and method.'),
  })
  .describe('The OpenAPI 3.1 document.')
  .meta({ id: 'OpenApiDocument' });

export function registerSystemRoutes(app: ZApp, deps: Deps): void {
  app.get('/healthz', {
    schema: {
      operationId: 'getHealth',
      example: { response: { status: 'ok' } },
      summary: 'Liveness check',
      description: 'Answers `{"status":"ok"}` while the process serves requests; it does not touch the database (GET /api/system/status does).',
      tags: ['system'],
      response: { 200: z.object({ status: z.literal('ok') }) },
    },
    handler: async () => ({ status: 'ok' as const }),
  });

  app.get('/api/system/status', {
    schema: {
      operationId: 'getSystemStatus',
      example: {
        response: {
          status: 'ok',
          version: '0.1.0',
          uptime_s: 3600,
          database: { kind: 'sqlite', reachable: true },
          models: { count: 12, available: 9 },
          regions: ['local'],
          time: '2026-11-25T12:00:00.000Z',
        },
      },
      summary: 'Service status',
      description: 'Version, uptime, whether the database answers, how many models are installed and available, and the configured regions.',
      tags: ['system'],
      response: { 200: SystemStatus },
    },
    handler: async () => {
      const reachable = await deps.database.ping();
      const models = deps.catalog.counts();
      return {
        status: reachable ? ('ok' as const) : ('degraded' as const),
        version: pkg.version,
        uptime_s: Math.round((Date.now() - deps.startedAt) / 1000),
        database: { kind: deps.database.dialect, reachable },
        models,
        regions: deps.config.regions,
        time: new Date().toISOString(),
      };
    },
  });

  const document = () => app.swagger() as unknown as z.input<typeof OpenApiDocument>;
  app.get('/openapi.json', {
    schema: {
      operationId: 'getOpenApiDocument',
      example: { response: { openapi: '3.1.0', info: { title: 'TSFM forecasting service', version: '0.1.0' }, paths: {} } },
      summary: 'This OpenAPI document',
      description: 'The OpenAPI 3.1 description of every operation (what /docs renders and what the SDK is generated from).',
      tags: ['system'],
      response: { 200: OpenApiDocument },
    },
    handler: async () => document(),
  });
  app.get('/api/schema', {
    schema: {
      operationId: 'getApiSchema',
      example: { response: { openapi: '3.1.0', info: { title: 'TSFM forecasting service', version: '0.1.0' }, paths: {} } },
      summary: 'This OpenAPI document (alias)',
      description: 'The same document as GET /openapi.json, at the path some tools look for.',
      tags: ['system'],
      response: { 200: OpenApiDocument },
    },
    handler: async () => document(),
  });
}
