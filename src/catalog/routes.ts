import { z } from 'zod';
import type { Deps } from '../deps.ts';
import { errors } from '../http/schemas.ts';
import type { ZApp } from '../http/types.ts';
import type { CatalogModel } from './catalog.ts';

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
        'Credits per 1000 tokens. input_tokens = observed target values read; output_tokens = numbers returned = ' +
          'prediction_length × series × (1 mean + quantile levels + num_samples). A call costs ' +
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
  q: z.string().max(200).optional(),
  task: z.string().max(64).optional(),
  capability: z.string().max(64).optional(),
  provider: z.string().max(128).optional(),
  available: z.enum(['true', 'false']).optional(),
});
// Model ids may contain one slash (ibm-granite/granite-timeseries-ttm-r2). The documented route
// takes the id as one path parameter (a %2F is decoded); a hidden twin takes `org/name` as is.
export const ModelIdParams = z.object({ modelId: z.string().min(1).max(200) });
const OrgNameParams = z.object({ org: z.string().min(1).max(100), name: z.string().min(1).max(100) });

const OpenAiModel = z
  .object({ id: z.string(), object: z.literal('model'), created: z.number().int(), owned_by: z.string() })
  .meta({ id: 'OpenAiModel' });
const OpenAiModelList = z.object({ object: z.literal('list'), data: z.array(OpenAiModel) }).meta({ id: 'OpenAiModelList' });

/** Catalog models have no creation date of their own; the OpenAI shape gets the release of this catalog. */
const CATALOG_CREATED = Math.floor(Date.UTC(2026, 10, 1) / 1000);
const toOpenAi = (m: CatalogModel) => ({ id: m.id, object: 'model' as const, created: CATALOG_CREATED, owned_by: m.provider });

export function registerCatalogRoutes(app: ZApp, deps: Deps): void {
  app.get('/api/models', {
    schema: { operationId: 'listModels', tags: ['models'], querystring: ListQuery, response: { 200: ModelList, ...errors(422) } },
    handler: async (req) => ({
      models: deps.catalog.list({ ...req.query, available: req.query.available === undefined ? undefined : req.query.available === 'true' }),
    }),
  });
  app.get('/api/models/:modelId', {
    schema: { operationId: 'getModelById', tags: ['models'], params: ModelIdParams, response: { 200: CatalogModelSchema, ...errors(404) } },
    handler: async (req) => deps.catalog.get(req.params.modelId),
  });
  app.get('/api/models/:org/:name', {
    schema: { hide: true, params: OrgNameParams, response: { 200: CatalogModelSchema, ...errors(404) } },
    handler: async (req) => deps.catalog.get(`${req.params.org}/${req.params.name}`),
  });
  app.get('/v1/models', {
    schema: { operationId: 'listOpenAiModels', tags: ['models'], response: { 200: OpenAiModelList } },
    handler: async () => ({ object: 'list' as const, data: deps.catalog.list().map(toOpenAi) }),
  });
  app.get('/v1/models/:modelId', {
    schema: { operationId: 'getOpenAiModelById', tags: ['models'], params: ModelIdParams, response: { 200: OpenAiModel, ...errors(404) } },
    handler: async (req) => toOpenAi(deps.catalog.get(req.params.modelId)),
  });
  app.get('/v1/models/:org/:name', {
    schema: { hide: true, params: OrgNameParams, response: { 200: OpenAiModel, ...errors(404) } },
    handler: async (req) => toOpenAi(deps.catalog.get(`${req.params.org}/${req.params.name}`)),
  });
}
