import { z } from 'zod';

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
    source: z.enum(['api', 'batch', 'ensemble', 'mcp', 'playground', 'schedule']),
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
    status: z
      .enum(['succeeded', 'timed_out'])
      .describe("succeeded; or timed_out: the call failed and what is charged is its jobs that ran for the engine's whole time limit (each at its price)"),
  })
  .meta({ id: 'UsageEvent' });

export const Window = {
  start: z.string().max(64).nullish().describe('ISO 8601, inclusive'),
  end: z.string().max(64).nullish().describe('ISO 8601, exclusive'),
};

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
