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

export function registerSystemRoutes(app: ZApp, deps: Deps): void {
  app.get('/healthz', {
    schema: { operationId: 'getHealth', tags: ['system'], response: { 200: z.object({ status: z.literal('ok') }) } },
    handler: async () => ({ status: 'ok' as const }),
  });

  app.get('/api/system/status', {
    schema: { operationId: 'getSystemStatus', tags: ['system'], response: { 200: SystemStatus } },
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

  const document = () => app.swagger();
  app.get('/openapi.json', { schema: { operationId: 'getOpenApiDocument', tags: ['system'] }, handler: async () => document() });
  app.get('/api/schema', { schema: { operationId: 'getApiSchema', tags: ['system'] }, handler: async () => document() });
}
