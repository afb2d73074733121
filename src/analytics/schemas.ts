import { z } from 'zod';
import { ForecastInput, ForecastResponseBody, LIMITS, Metadata, UsageBody } from '../forecasting/schemas.ts';

/** Bounds of the analytics operations (docs/analytics.md): each caps the model runs a request causes. */
export const ANALYTICS_LIMITS = {
  /** Most models one cross-validation compares. */
  maxModels: 8,
  /** Most rolling-origin windows. */
  maxWindows: 20,
  /** Most model runs (windows × models) of one cross-validation. */
  maxRuns: 40,
} as const;

/** A series of an analytics call: the forecast input without covariates (the windows cut the target alone). */
export const AnalyticsInput = ForecastInput.pick({ target: true, start: true, metadata: true, item_id: true }).strict().meta({ id: 'AnalyticsInput' });

/**
 * What MCP's tools/list shows of an analytics input (calls are still validated against the full
 * schema): one flat series and its start, the form an agent sends; keeps tools/list small.
 */
const McpSeries = z.object({
  target: z.array(z.number().nullable()).describe('Values, oldest first; null = missing.'),
  start: z.string().optional().describe('ISO 8601 time of the first value.'),
});

export const CrossValidationRequest = z
  .object({
    inputs: z.array(AnalyticsInput).min(1).max(LIMITS.maxInputs).describe('One entry per series, oldest first; null = missing.'),
    models: z
      .array(z.string().min(1).max(200))
      .min(1)
      .max(ANALYTICS_LIMITS.maxModels)
      .describe(`Model ids to backtest (1 to ${ANALYTICS_LIMITS.maxModels}), e.g. ["auto-ets", "theta"].`),
    prediction_length: z.number().int().min(1).max(LIMITS.maxPredictionLength).default(12).describe('Steps each window forecasts (default 12).'),
    n_windows: z
      .number()
      .int()
      .min(1)
      .max(ANALYTICS_LIMITS.maxWindows)
      .default(3)
      .describe(`Rolling-origin windows (1 to ${ANALYTICS_LIMITS.maxWindows}, default 3); the last one ends at the end of each series.`),
    step_size: z.number().int().min(1).nullish().describe('Steps between consecutive window cut-offs (default: prediction_length).'),
    frequency: z.string().max(32).nullish().describe('Pandas frequency code (e.g. MS, h): timestamps and the season of models and MASE.'),
    quantile_levels: z
      .array(z.number().gt(0).lt(1))
      .min(1)
      .max(LIMITS.maxQuantileLevels)
      .nullish()
      .describe('Quantile levels forecast and scored (default [0.1, 0.5, 0.9]); pairs (q, 1−q) give the interval coverage.'),
    metadata: Metadata.nullish().describe('Echoed back (at most 8 levels deep, 16 KiB as JSON).'),
  })
  .strict()
  .meta({ id: 'CrossValidationRequest' });
export type CrossValidationRequestT = z.infer<typeof CrossValidationRequest>;

export const CrossValidationMcpInput = z.object({
  inputs: z.array(McpSeries).min(1).describe('Series.'),
  models: z.array(z.string()).min(1).max(ANALYTICS_LIMITS.maxModels).describe('Model ids, e.g. ["auto-ets","theta"].'),
  prediction_length: z.number().int().min(1).optional().describe('Steps per window (default 12).'),
  n_windows: z.number().int().min(1).max(ANALYTICS_LIMITS.maxWindows).optional().describe('Windows (default 3).'),
  step_size: z.number().int().min(1).optional().describe('Steps between cut-offs (default prediction_length).'),
  frequency: z.string().optional().describe('Pandas code, e.g. MS, h.'),
  quantile_levels: z.array(z.number()).optional().describe('Default [0.1,0.5,0.9].'),
});

const Metric = z.number().nullable();

export const IntervalCoverage = z
  .object({
    nominal: z.number().describe('Nominal coverage of the interval, e.g. 0.8 for the 0.1–0.9 quantiles.'),
    lower_level: z.number(),
    upper_level: z.number(),
    observed: Metric.describe('Share of the held-out values inside the interval.'),
  })
  .meta({ id: 'IntervalCoverage' });

export const CrossValidationMetrics = z
  .object({
    smape: Metric.describe('Symmetric MAPE in percent (0–200).'),
    mase: Metric.describe('Mean absolute scaled error (scale: in-sample seasonal naive of each window).'),
    wql: Metric.describe('Weighted quantile loss over the quantile levels (a discrete CRPS, scaled by the series).'),
    coverage: z.array(IntervalCoverage),
  })
  .meta({ id: 'CrossValidationMetrics' });

export const CrossValidationWindow = z
  .object({
    window: z.number().int(),
    cutoffs: z.array(z.number().int()).describe('Per input: observed steps before the window (the forecast origin).'),
    actuals: z.array(z.array(z.array(z.number().nullable()))).describe('Per input: the held-out values, steps × variates.'),
  })
  .meta({ id: 'CrossValidationWindow' });

export const CrossValidationModelResult = z
  .object({
    model: z.string(),
    rank: z.number().int(),
    metrics: CrossValidationMetrics,
    windows: z.array(z.object({ window: z.number().int(), metrics: CrossValidationMetrics, forecast: ForecastResponseBody })),
    credits: z.number().int(),
  })
  .meta({ id: 'CrossValidationModelResult' });

export const CrossValidationResponseBody = z
  .object({
    id: z.string(),
    object: z.literal('cross_validation'),
    created: z.number().int(),
    prediction_length: z.number().int(),
    n_windows: z.number().int(),
    step_size: z.number().int(),
    quantile_levels: z.array(z.number()),
    windows: z.array(CrossValidationWindow),
    results: z.array(CrossValidationModelResult).describe('One per model, best sMAPE first.'),
    usage: UsageBody,
    total_cost_credits: z.number().int(),
    metadata: z.record(z.string(), z.unknown()).nullable(),
  })
  .meta({ id: 'CrossValidationResponseBody' });
export type CrossValidationResponse = z.infer<typeof CrossValidationResponseBody>;
