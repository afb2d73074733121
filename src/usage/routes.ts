import { z } from 'zod';
import type { Deps } from '../deps-types.ts';
import { principalOf } from '../http/auth.ts';
import { AUTH_ERRORS, errors } from '../shared/schemas.ts';
import type { ZApp } from '../http/types.ts';
import { UsageEvent, Window } from './schemas.ts';
import { deleteUsage, listUsage } from './service.ts';

export function registerUsageRoutes(app: ZApp, deps: Deps): void {
  app.get('/api/account/usage', {
    config: { auth: 'user', scope: 'usage:read' },
    schema: {
      operationId: 'listUsageEvents',
      example: { request: { limit: 100, offset: 0, start: '2026-11-01T00:00:00Z' } },
      summary: 'List usage events',
      description:
        "The account's usage events, newest first (model, tokens, cost, source, request id), in pages of `limit` from `offset`, optionally within start/end.",
      tags: ['usage'],
      security: [{ bearer: [] }],
      querystring: z.object({
        limit: z.coerce.number().int().min(1).max(1000).default(1000),
        offset: z.coerce.number().int().min(0).max(100000).default(0),
        ...Window,
      }),
      response: {
        200: z.object({ events: z.array(UsageEvent), limit: z.number().int(), offset: z.number().int() }).meta({ id: 'UsageEventList' }),
        ...errors(...AUTH_ERRORS),
      },
    },
    handler: async (req) => listUsage(deps, principalOf(req), req.query),
  });

  app.delete('/api/account/usage', {
    config: { auth: 'user', scope: 'account:write' },
    schema: {
      operationId: 'deleteUsageEvents',
      example: { response: { deleted: 128 } },
      summary: 'Delete usage history',
      tags: ['usage'],
      security: [{ bearer: [] }],
      description: 'Deletes your usage history. Credits already used are not given back.',
      response: { 200: z.object({ deleted: z.number().int() }), ...errors(...AUTH_ERRORS) },
    },
    handler: async (req) => deleteUsage(deps, principalOf(req)),
  });
  // GET /api/account/usage/summary (getUsageSummary) is declared in operations.ts.
}
