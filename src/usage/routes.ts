import { z } from 'zod';
import type { Deps } from '../deps.ts';
import { principalOf } from '../http/auth.ts';
import { AUTH_ERRORS, errors } from '../http/schemas.ts';
import type { ZApp } from '../http/types.ts';
import { deleteUsage, listUsage, usageSummary } from './service.ts';

const Measures = {
  requests: z.number().int(),
  input_tokens: z.number().int(),
  output_tokens: z.number().int(),
  total_tokens: z.number().int(),
  credits: z.number().int(),
  cost_nano_usd: z.number().int(),
};

export const UsageEvent = z
  .object({
    id: z.string(),
    request_id: z.string(),
    created_at: z.string(),
    model: z.string(),
    source: z.enum(['api', 'batch', 'ensemble', 'mcp', 'playground']),
    credential_kind: z.enum(['session', 'api_key', 'oauth']),
    key_id: z.string().nullable().describe('The API key id when the call used an API key'),
    input_tokens: z.number().int(),
    output_tokens: z.number().int(),
    total_tokens: z.number().int(),
    credits: z.number().int(),
    free_credits: z.number().int().describe('Part of the credits paid from free (prepaid) credits'),
    metered_credits: z.number().int().describe('Part of the credits billed as metered usage'),
    cost_nano_usd: z.number().int(),
    latency_ms: z.number(),
    status: z.literal('succeeded'),
  })
  .meta({ id: 'UsageEvent' });

const Window = { start: z.string().max(64).nullish().describe('ISO 8601, inclusive'), end: z.string().max(64).nullish().describe('ISO 8601, exclusive') };

export const UsageWindow = z.object(Window);
export const UsageSummary = z
  .object({
    start: z.string(),
    end: z.string(),
    totals: z.object(Measures),
    daily: z.array(z.object({ date: z.string(), ...Measures })),
    by_model: z.array(z.object({ model: z.string(), ...Measures })),
    by_source: z.array(z.object({ source: z.string(), ...Measures })),
    recent: z.array(UsageEvent),
  })
  .meta({ id: 'UsageSummary' });

export function registerUsageRoutes(app: ZApp, deps: Deps): void {
  app.get('/api/account/usage', {
    config: { auth: 'user' },
    schema: {
      operationId: 'listUsageEvents',
      tags: ['usage'],
      security: [{ bearer: [] }],
      querystring: z.object({
        limit: z.coerce.number().int().min(1).max(1000).default(1000),
        offset: z.coerce.number().int().min(0).max(100000).default(0),
        ...Window,
      }),
      response: { 200: z.object({ events: z.array(UsageEvent), limit: z.number().int(), offset: z.number().int() }).meta({ id: 'UsageEventList' }), ...errors(...AUTH_ERRORS) },
    },
    handler: async (req) => listUsage(deps, principalOf(req), req.query),
  });

  app.delete('/api/account/usage', {
    config: { auth: 'user' },
    schema: {
      operationId: 'deleteUsageEvents',
      tags: ['usage'],
      security: [{ bearer: [] }],
      description: 'Deletes your usage history. Credits already used are not given back.',
      response: { 200: z.object({ deleted: z.number().int() }), ...errors(...AUTH_ERRORS) },
    },
    handler: async (req) => deleteUsage(deps, principalOf(req)),
  });

  app.get('/api/account/usage/summary', {
    config: { auth: 'user' },
    schema: {
      operationId: 'getUsageSummary',
      tags: ['usage'],
      security: [{ bearer: [] }],
      querystring: UsageWindow,
      response: {
        200: UsageSummary,
        ...errors(...AUTH_ERRORS),
      },
    },
    handler: async (req) => usageSummary(deps, principalOf(req), req.query),
  });
}
