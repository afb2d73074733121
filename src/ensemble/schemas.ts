import { z } from 'zod';
import { ForecastInput, ForecastParameters, ForecastResponseBody, Metadata } from '../forecasting/schemas.ts';

export const ScoringMetric = z.enum(['smape', 'mase', 'crps']);

export const EnsembleForecastRequest = z
  .object({
    inputs: z.array(ForecastInput).min(1).describe('One entry per series.'),
    parameters: ForecastParameters.nullish().describe('Horizon, frequency, quantile levels, samples.'),
    models: z.array(z.string().min(1).max(200)).min(1).max(50).nullish().describe('Candidate model ids (default: every available model but the baselines).'),
    max_models: z.number().int().min(1).nullish().describe('At most this many candidates.'),
    budget: z.number().int().min(2).nullish().describe('Most credits to spend (backtests + final forecasts).'),
    top_n: z.number().int().min(1).default(3).describe('Best models blended (10+ blends all kept: more accurate).'),
    backtest_windows: z
      .number()
      .int()
      .min(1)
      .max(3)
      .default(1)
      .describe('Backtest windows per candidate (1 to 3): more rank models less by luck; each costs one more forecast per candidate.'),
    scoring_metric: ScoringMetric.default('smape').describe('Backtest score used to rank.'),
    metadata: Metadata.nullish().describe('Echoed back (at most 8 levels deep, 16 KiB as JSON).'),
    dry_run: z
      .boolean()
      .optional()
      .describe('true: validate and price only; the answer is a ForecastQuote (as POST /v1/forecast/quote) and nothing runs or is charged.'),
  })
  .strict()
  .meta({ id: 'EnsembleForecastRequest' });
export type EnsembleRequestT = z.infer<typeof EnsembleForecastRequest>;

export const EnsembleModelResultBody = z
  .object({
    model: z.string(),
    rank: z.number().int(),
    score: z.number(),
    scoring_metric: z.string(),
    weight: z.number(),
    selection_reason: z.string(),
    result: ForecastResponseBody,
  })
  .meta({ id: 'EnsembleModelResultBody' });

export const EnsembleMetadataBody = z
  .object({
    models_evaluated: z.array(z.string()),
    models_in_ensemble: z.array(z.string()),
    scoring_metric: z.string(),
    top_n: z.number().int(),
    weights: z.record(z.string(), z.number()),
    cost_breakdown: z.array(z.object({ model: z.string(), credits: z.number().int() })),
    total_cost_credits: z.number().int(),
    selection: z.object({
      selection_basis: z.string(),
      held_out_length: z.number().int(),
      candidate_count: z.number().int(),
      filters_applied: z.array(z.string()),
      requested_model_count: z.number().int().nullable(),
      strategy: z.literal('holdout_backtest'),
    }),
  })
  .meta({ id: 'EnsembleMetadataBody' });

export const EnsembleForecastResponseBody = z
  .object({
    id: z.string(),
    object: z.string(),
    created: z.number().int(),
    ranked_results: z.array(EnsembleModelResultBody),
    ensemble_result: ForecastResponseBody,
    ensemble_metadata: EnsembleMetadataBody,
  })
  .meta({ id: 'EnsembleForecastResponseBody' });
export type EnsembleResponse = z.infer<typeof EnsembleForecastResponseBody>;
