import { z } from 'zod';

export const CatalogModelSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    provider: z.string(),
    family: z.string(),
    kind: z.enum(['statistical', 'neural']),
    description: z.string(),
    license: z.string(),
    supported_tasks: z.array(z.string()),
    avg_latency_ms: z.number(),
    latency_samples: z.number().int(),
    context_length: z.number().int(),
    max_context_length: z.number().int(),
    min_points: z.number().int(),
    padded_below: z
      .number()
      .int()
      .nullable()
      .describe(
        "Series shorter than this many points are padded up to the network's context (the forecast says so in model_info.padded) " +
          'and are less accurate; null when the model never pads. Not a default ensemble candidate for such series.',
      ),
    max_horizon: z.number().int().nullable(),
    capabilities: z.array(z.string()),
    quantile_method: z.string(),
    uses_covariates: z.boolean(),
    multivariate: z.enum(['native', 'channel_wise']),
    quantiles: z.boolean(),
    samples: z.boolean(),
    pricing: z
      .object({ input_credits_per_1k_tokens: z.number(), output_credits_per_1k_tokens: z.number() })
      .describe(
        "Credits per 1000 tokens. input_tokens = per series, the observed target values read, or the model's estimated time " +
          'in 2 ms units when that is more (seasonal searches: docs/billing.md); output_tokens = values returned = ' +
          'prediction_length × series × (1 mean + quantile levels + num_samples), plus one timestamp per step of each input with a start. A call costs ' +
          'max(1, ceil((input_tokens × input price + output_tokens × output price) / 1000)) credits.',
      ),
    access: z.enum(['all', 'billing']),
    available: z.boolean(),
    unavailable_reason: z.string().nullable(),
    pull_command: z.string().nullable(),
  })
  .meta({ id: 'CatalogModel' });

export const ModelList = z.object({ models: z.array(CatalogModelSchema) }).meta({ id: 'ModelList' });
export const ListQuery = z.object({
  q: z.string().max(200).optional().describe('Text to find in id, name or description.'),
  task: z.string().max(64).optional().describe('e.g. forecast.'),
  capability: z.string().max(64).optional().describe('e.g. quantiles, samples, multivariate.'),
  provider: z.string().max(128).optional().describe('e.g. ibm-granite.'),
  // A query string carries text; an MCP tool call carries a boolean: both are read as a boolean.
  available: z
    .union([z.boolean(), z.enum(['true', 'false'])])
    .optional()
    .describe('Only models that can run now (true) or not (false).'),
});
// Model ids may contain one slash (ibm-granite/granite-timeseries-ttm-r2). The documented route
// takes the id as one path parameter (a %2F is decoded); a hidden twin takes `org/name` as is.
export const ModelIdParams = z.object({ modelId: z.string().min(1).max(200).describe('Model id, e.g. auto-ets (from listModels).') });
export const OrgNameParams = z.object({ org: z.string().min(1).max(100), name: z.string().min(1).max(100) });
