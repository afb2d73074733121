import { z } from 'zod';
import { LIMITS, Metadata, UsageBody } from '../forecasting/schemas.ts';
import { AnalyticsInput } from './schemas.ts';

/** Most gaps (runs of missing values, over all inputs and variates) one imputation fills with a model: each costs two fits. */
export const IMPUTE_MAX_GAPS = 100;

export const ImputeMethod = z.enum(['model', 'linear']);

export const ImputeRequest = z
  .object({
    inputs: z.array(AnalyticsInput).min(1).max(LIMITS.maxInputs).describe('One entry per series, oldest first; null = missing (the values to fill).'),
    method: ImputeMethod.default('model').describe(
      "'model' (default): forecast each gap from the values before it and backcast it from the values after it, blended linearly across the gap; 'linear': linear interpolation (no model runs).",
    ),
    model: z.string().min(1).max(200).default('auto-ets').describe("method 'model': the model forecasting across the gaps (default auto-ets)."),
    frequency: z.string().max(32).nullish().describe('Pandas frequency code (e.g. h, D, MS): the season of the model.'),
    metadata: Metadata.nullish().describe('Echoed back (at most 8 levels deep, 16 KiB as JSON).'),
  })
  .strict()
  .meta({ id: 'ImputeRequest' });
export type ImputeRequestT = z.infer<typeof ImputeRequest>;

export const ImputeMcpInput = z.object({
  inputs: z
    .array(z.object({ target: z.array(z.number().nullable()).describe('Values; null = to fill.') }))
    .min(1)
    .describe('Series.'),
  method: ImputeMethod.optional().describe("'model' (default) or 'linear'."),
  model: z.string().optional().describe('Default auto-ets.'),
  frequency: z.string().optional().describe('Pandas code, e.g. h.'),
});

export const ImputeOutput = z
  .object({
    target: z.array(z.array(z.number())).describe('The series with its missing values filled, steps × variates.'),
    filled: z.array(z.array(z.boolean())).describe('True where the value was missing and is filled.'),
    filled_count: z.number().int(),
    metadata: z.record(z.string(), z.unknown()).nullable(),
  })
  .meta({ id: 'ImputeOutput' });

export const ImputeResponseBody = z
  .object({
    id: z.string(),
    object: z.literal('imputation'),
    created: z.number().int(),
    method: ImputeMethod,
    model: z.string().nullable(),
    outputs: z.array(ImputeOutput),
    usage: UsageBody,
    cost_credits: z.number().int(),
    metadata: z.record(z.string(), z.unknown()).nullable(),
  })
  .meta({ id: 'ImputeResponseBody' });
export type ImputeResponse = z.infer<typeof ImputeResponseBody>;
