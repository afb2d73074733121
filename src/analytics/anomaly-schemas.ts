import { z } from 'zod';
import { LIMITS, Metadata, UsageBody } from '../forecasting/schemas.ts';
import { AnalyticsInput } from './schemas.ts';

export const ANOMALY_LIMITS = { minPoints: 8, minWindow: 4, maxWindow: 128, minSensitivity: 1.5, maxSensitivity: 6 } as const;

export const AnomalyMethod = z.enum(['forecast', 'zscore']);

export const DetectAnomaliesRequest = z
  .object({
    inputs: z
      .array(AnalyticsInput)
      .min(1)
      .max(LIMITS.maxInputs)
      .describe(`One entry per series, oldest first; null = missing. At least ${ANOMALY_LIMITS.minPoints} observed points each.`),
    method: AnomalyMethod.default('forecast').describe(
      "'forecast' (default): flag values outside the model's one-step-ahead prediction interval at `level`; 'zscore': flag values more than `sensitivity` rolling standard deviations from the rolling mean of the previous `window` values.",
    ),
    model: z
      .string()
      .min(1)
      .max(200)
      .default('auto-ets')
      .describe("method 'forecast': a model with in-sample fitted values (capability fitted_values: auto-ets, auto-arima, naive, seasonal-naive, drift)."),
    level: z.number().gt(0).lt(100).default(99).describe("method 'forecast': prediction-interval level in percent (default 99)."),
    window: z
      .number()
      .int()
      .min(ANOMALY_LIMITS.minWindow)
      .max(ANOMALY_LIMITS.maxWindow)
      .default(24)
      .describe(
        `method 'zscore': previous values the rolling mean and standard deviation use (${ANOMALY_LIMITS.minWindow}-${ANOMALY_LIMITS.maxWindow}, default 24).`,
      ),
    sensitivity: z
      .number()
      .min(ANOMALY_LIMITS.minSensitivity)
      .max(ANOMALY_LIMITS.maxSensitivity)
      .default(3)
      .describe(`method 'zscore': threshold in standard deviations (${ANOMALY_LIMITS.minSensitivity}-${ANOMALY_LIMITS.maxSensitivity}, default 3).`),
    detection_size: z
      .number()
      .int()
      .min(1)
      .nullish()
      .describe('Online mode: score only the last detection_size points of each series (the earlier ones are context). Default: every point.'),
    frequency: z.string().max(32).nullish().describe('Pandas frequency code (e.g. h, D, MS): timestamps and the season of the model.'),
    metadata: Metadata.nullish().describe('Echoed back (at most 8 levels deep, 16 KiB as JSON).'),
  })
  .strict()
  .meta({ id: 'DetectAnomaliesRequest' });
export type DetectAnomaliesRequestT = z.infer<typeof DetectAnomaliesRequest>;

export const DetectAnomaliesMcpInput = z.object({
  inputs: z
    .array(
      z.object({
        target: z.array(z.number().nullable()).describe('Values, oldest first; null = missing.'),
        start: z.string().optional().describe('ISO 8601 start.'),
      }),
    )
    .min(1)
    .describe('Series, 8+ points each.'),
  method: AnomalyMethod.optional().describe("'forecast' (default, model interval) or 'zscore' (rolling)."),
  model: z.string().optional().describe('Default auto-ets.'),
  level: z.number().optional().describe('Interval level, percent (default 99).'),
  window: z.number().int().optional().describe('zscore window 4-128.'),
  sensitivity: z.number().optional().describe('zscore threshold 1.5-6.'),
  detection_size: z.number().int().optional().describe('Score only the last N points.'),
  frequency: z.string().optional().describe('Pandas code, e.g. h.'),
});

const Column = z.array(z.array(z.number().nullable()));

export const AnomalyOutput = z
  .object({
    start_index: z.number().int().describe('Index in the target of the first scored step.'),
    timestamps: z.array(z.string()).nullable().describe('One per scored step (with start and frequency).'),
    value: Column.describe('Scored steps × variates: the observed value (null = missing).'),
    expected: Column.describe('The prediction for the step (null where the method has none yet).'),
    lower: Column,
    upper: Column,
    score: Column.describe('|value − expected| in standard deviations.'),
    anomaly: z.array(z.array(z.boolean())).describe('True where the value lies outside [lower, upper].'),
    anomaly_count: z.number().int(),
    metadata: z.record(z.string(), z.unknown()).nullable(),
  })
  .meta({ id: 'AnomalyOutput' });

export const DetectAnomaliesResponseBody = z
  .object({
    id: z.string(),
    object: z.literal('anomaly_detection'),
    created: z.number().int(),
    method: AnomalyMethod,
    model: z.string().nullable(),
    level: z.number().nullable(),
    window: z.number().int().nullable(),
    sensitivity: z.number().nullable(),
    outputs: z.array(AnomalyOutput),
    anomaly_count: z.number().int(),
    usage: UsageBody,
    cost_credits: z.number().int(),
    metadata: z.record(z.string(), z.unknown()).nullable(),
  })
  .meta({ id: 'DetectAnomaliesResponseBody' });
export type DetectAnomaliesResponse = z.infer<typeof DetectAnomaliesResponseBody>;
