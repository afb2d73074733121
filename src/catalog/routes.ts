import { z } from 'zod';
import type { Deps } from '../deps-types.ts';
import { errors } from '../shared/schemas.ts';
import type { ZApp } from '../http/types.ts';
import type { CatalogModel } from './catalog.ts';
import { CatalogModelSchema, ModelIdParams, OrgNameParams } from './schemas.ts';

const OpenAiModel = z.object({ id: z.string(), object: z.literal('model'), created: z.number().int(), owned_by: z.string() }).meta({ id: 'OpenAiModel' });
const OpenAiModelList = z.object({ object: z.literal('list'), data: z.array(OpenAiModel) }).meta({ id: 'OpenAiModelList' });

/** Catalog models have no creation date of their own; the OpenAI shape gets the release of this catalog. */
const CATALOG_CREATED = Math.floor(Date.UTC(2026, 10, 1) / 1000);
const toOpenAi = (m: CatalogModel) => ({ id: m.id, object: 'model' as const, created: CATALOG_CREATED, owned_by: m.provider });

export function registerCatalogRoutes(app: ZApp, deps: Deps): void {
  // listModels and getModelById are declared in operations.ts.
  app.get('/api/models/:org/:name', {
    schema: { hide: true, params: OrgNameParams, response: { 200: CatalogModelSchema, ...errors(404) } },
    handler: async (req) => deps.catalog.get(`${req.params.org}/${req.params.name}`),
  });
  app.get('/v1/models', {
    schema: {
      operationId: 'listOpenAiModels',
      example: { response: { object: 'list', data: [{ id: 'auto-ets', object: 'model', created: 1764000000, owned_by: 'tsfm' }] } },
      summary: 'List models (OpenAI shape)',
      description: "The model catalog in the shape of OpenAI's GET /v1/models, for clients written against it. GET /api/models has the full records.",
      tags: ['models'],
      response: { 200: OpenAiModelList },
    },
    handler: async () => ({ object: 'list' as const, data: deps.catalog.list().map(toOpenAi) }),
  });
  app.get('/v1/models/:modelId', {
    schema: {
      operationId: 'getOpenAiModelById',
      example: { request: { modelId: 'auto-ets' } },
      summary: 'One model (OpenAI shape)',
      description: "One model in the shape of OpenAI's GET /v1/models/{model}. 404 with the closest id when none matches.",
      tags: ['models'],
      params: ModelIdParams,
      response: { 200: OpenAiModel, ...errors(404) },
    },
    handler: async (req) => toOpenAi(deps.catalog.get(req.params.modelId)),
  });
  app.get('/v1/models/:org/:name', {
    schema: { hide: true, params: OrgNameParams, response: { 200: OpenAiModel, ...errors(404) } },
    handler: async (req) => toOpenAi(deps.catalog.get(`${req.params.org}/${req.params.name}`)),
  });
}
