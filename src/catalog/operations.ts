import type { z } from 'zod';
import { defineOperation } from '../shared/operation.ts';
import { CatalogModelSchema, ListQuery, ModelIdParams, ModelList } from './schemas.ts';

export const catalogOperations = [
  defineOperation({
    id: 'listModels',
    method: 'GET',
    path: '/api/models',
    tags: ['models'],
    summary: 'List models',
    description: 'The model catalog, filtered by q, task, capability, provider, available.',
    input: ListQuery,
    example: { request: { task: 'forecast', capability: 'quantiles', available: 'true' } },
    output: ModelList,
    auth: 'public',
    errors: [422],
    spendsCredits: false,
    run: async ({ deps, input }) => ({
      models: deps.catalog.list({ ...input, available: input.available === undefined ? undefined : input.available === true || input.available === 'true' }),
    }),
    summarize: ({ models }) => `${models.length} models: ${models.map((m) => `${m.id}${m.available ? '' : ' (unavailable)'}`).join(', ')}`,
  }),
  defineOperation({
    id: 'getModelById',
    method: 'GET',
    path: '/api/models/:modelId',
    tags: ['models'],
    summary: 'Get a model',
    description: 'One catalog record.',
    input: ModelIdParams,
    example: { request: { modelId: 'auto-ets' } },
    output: CatalogModelSchema,
    auth: 'public',
    errors: [404],
    spendsCredits: false,
    run: async ({ deps, input }) => deps.catalog.get(input.modelId),
    summarize: (m: z.input<typeof CatalogModelSchema>) =>
      `${m.id} (${m.provider}, ${m.kind}): context ${m.context_length}, ${m.available ? 'available' : `unavailable: ${m.unavailable_reason ?? ''}`}`,
  }),
];
