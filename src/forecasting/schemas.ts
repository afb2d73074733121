import { z } from 'zod';
import { findJsonProblem } from '../shared/json.ts';
import { NumericColumns } from '../shared/numeric-columns.ts';
import { ErrorBody } from '../shared/schemas.ts';

/** Request-size limits the spec leaves open (documented in docs/forecasting.md). */
export const LIMITS = {
  maxInputs: 1000,
  maxSeriesLength: 100_000,
  maxVariates: 100,
  maxTotalPoints: 2_000_000,
  maxPredictionLength: 10_000,
  maxNumSamples: 1000,
  maxQuantileLevels: 99,
  maxBatch: 64,
  /** Names in each covariate record (past_covariates, future_covariates, static_covariates) of an input. */
  maxCovariates: 100,
} as const;

const Value = z.number().nullable();

const isValue = (x: unknown): boolean => x === null || (typeof x === 'number' && Number.isFinite(x));
const isNumber = (x: unknown): boolean => typeof x === 'number' && Number.isFinite(x);
const isTimestampText = (x: unknown): boolean => typeof x === 'string' && x.length <= 64;
const everyOf = (a: unknown[], ok: (x: unknown) => boolean): boolean => {
  for (let i = 0; i < a.length; i++) if (!ok(a[i])) return false;
  return true;
};

/**
 * A large array of numbers checked in one tight loop: zod's per-element machinery takes about half
 * a second over a 100,000 × 20 target, all of it on the event loop. A value that passes `ok` is
 * accepted as it is (the same value zod would give: numbers, nulls and arrays of them); anything
 * else goes through the schema's own parse, so a bad value gets exactly zod's issues (paths,
 * messages, codes). Wraps the array schema's parse the way zod's own size caps do.
 */
function fastArray<S extends z.ZodArray>(schema: S, ok: (x: unknown) => boolean, columns = false, maxItems = Number.POSITIVE_INFINITY): S {
  const internals = schema._zod;
  const parse = internals.parse;
  internals.parse = (payload, ctx) =>
    (Array.isArray(payload.value) && payload.value.length <= maxItems && everyOf(payload.value, ok)) || (columns && payload.value instanceof NumericColumns)
      ? payload
      : parse(payload, ctx);
  // Without checks of its own, zod runs a schema through a copy of its parse.
  if (internals.run === parse) internals.run = internals.parse;
  return schema;
}

/**
 * A record of names (covariates) checked in one loop, as fastArray checks an array: zod's per-key
 * machinery took a second over 400,000 covariate names. More than `maxKeys` names is refused at
 * once with zod's `too_big` issue at the record (counting stops at maxKeys + 1, so a body of
 * 400,000 names costs no more than one of 101). A plain object whose names are at most `maxKey`
 * characters and whose values all pass `ok` is accepted as it is (zod would copy it unchanged; an
 * own `__proto__` key, which zod drops, takes zod's path); anything else goes through the schema's
 * own parse, so a bad value gets exactly zod's issues.
 */
function fastRecord<S extends z.ZodRecord>(schema: S, maxKey: number, maxKeys: number, ok: (x: unknown) => boolean): S {
  const internals = schema._zod;
  const parse = internals.parse;
  const tooMany = (v: unknown): boolean => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
    let n = 0;
    for (const _ in v) if (++n > maxKeys) return true;
    return false;
  };
  const plain = (v: unknown): boolean => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
    const proto = Object.getPrototypeOf(v);
    if ((proto !== Object.prototype && proto !== null) || Object.hasOwn(v, '__proto__')) return false;
    for (const key in v) if (key.length > maxKey || !ok((v as Record<string, unknown>)[key])) return false;
    return true;
  };
  internals.parse = (payload, ctx) => {
    if (tooMany(payload.value)) {
      payload.issues.push({
        code: 'too_big',
        origin: 'object',
        maximum: maxKeys,
        inclusive: true,
        input: payload.value,
        inst: schema,
        message: `At most ${maxKeys} names are accepted`,
      } as z.core.$ZodRawIssue);
      return payload;
    }
    return plain(payload.value) ? payload : parse(payload, ctx);
  };
  if (internals.run === parse) internals.run = internals.parse;
  return schema;
}
const isValues = (x: unknown): boolean => Array.isArray(x) && everyOf(x, isValue);
const isNumbers = (x: unknown): boolean => Array.isArray(x) && everyOf(x, isNumber);

/** Free-form metadata is echoed back: bounded in depth and size so it can always be stored and sent. */
export const METADATA_MAX_BYTES = 16_384;
export const METADATA_MAX_DEPTH = 8;
/**
 * An input's `item_id` (or `metadata.item_id`) is copied into every output that answers for the
 * input: one per window and model of a cross-validation, one per ensemble candidate. Bounded so a
 * request cannot multiply it into an answer hundreds of times its size.
 */
export const ITEM_ID_MAX_CHARS = 256;
export const Metadata = z.record(z.string(), z.unknown()).superRefine((value, ctx) => {
  const problem = findJsonProblem(value, METADATA_MAX_DEPTH);
  if (problem) {
    ctx.addIssue({ code: 'custom', path: problem.path, message: problem.msg });
    return;
  }
  const id = value.item_id;
  if (typeof id === 'string' && id.length > ITEM_ID_MAX_CHARS) {
    ctx.addIssue({ code: 'custom', path: ['item_id'], message: `item_id has ${id.length} characters; at most ${ITEM_ID_MAX_CHARS} are accepted` });
    return;
  }
  const size = Buffer.byteLength(JSON.stringify(value));
  if (size > METADATA_MAX_BYTES) ctx.addIssue({ code: 'custom', message: `Metadata is ${size} bytes as JSON; at most ${METADATA_MAX_BYTES} are accepted` });
});
const Step = z.union([z.array(Value).min(1).max(LIMITS.maxVariates), Value]);
const isStep = (x: unknown): boolean => isValue(x) || (Array.isArray(x) && x.length >= 1 && x.length <= LIMITS.maxVariates && everyOf(x, isValue));

export const ForecastInput = z
  .object({
    target: fastArray(
      z.array(Step).describe('The series, oldest first: one array of variates per step ([[v], [v], ...]); a flat [v, v, ...] is accepted too. null = missing.'),
      isStep,
      // A large target the sliced parser read into typed columns (checked as it was read: the values of `Step`).
      true,
    ).optional(),
    start: z.string().max(64).nullish().describe('ISO 8601 timestamp of the first observation.'),
    // Checked in one loop (zod's per-item check of 320,000 strings was 50–95 ms of one turn).
    timestamps: fastArray(z.array(z.string().max(64)).max(LIMITS.maxSeriesLength), isTimestampText, false, LIMITS.maxSeriesLength)
      .nullish()
      .describe('ISO 8601 time of each target step; frequency inferred.'),
    past_covariates: fastRecord(z.record(z.string().max(128), fastArray(z.array(Value), isValue)), 128, LIMITS.maxCovariates, isValues)
      .nullish()
      .describe('Name → values aligned with target.'),
    future_covariates: fastRecord(z.record(z.string().max(128), fastArray(z.array(z.number()), isNumber)), 128, LIMITS.maxCovariates, isNumbers)
      .nullish()
      .describe('Name → values for the forecast steps.'),
    static_covariates: fastRecord(z.record(z.string().max(128), z.number()), 128, LIMITS.maxCovariates, isNumber)
      .nullish()
      .describe('Name → one number for the series.'),
    metadata: Metadata.nullish().describe(
      `Echoed back in the output (item_id, …). At most ${METADATA_MAX_DEPTH} levels deep and ${METADATA_MAX_BYTES} bytes as JSON.`,
    ),
    item_id: z
      .union([z.string().max(ITEM_ID_MAX_CHARS), z.number()])
      .nullish()
      .describe('Alias of metadata.item_id.'),
  })
  // Unknown fields are refused (422 naming them, with the close known name): a silently ignored
  // `h` would forecast 24 steps and bill them.
  .strict()
  .meta({ id: 'ForecastInput' });

export const ForecastParameters = z
  .object({
    prediction_length: z.number().int().min(1).max(LIMITS.maxPredictionLength).default(24).describe('Steps to forecast (the horizon, "h"). Default 24.'),
    frequency: z
      .string()
      .max(32)
      .nullish()
      .describe('Pandas code, optional multiple: S, min/T, H, D, B, W, MS/M, QS/Q, YS/Y (e.g. 15min). Sets timestamps and seasonality.'),
    freq: z.string().max(32).nullish().describe('Alias of frequency.'),
    quantile_levels: z.array(z.number().gt(0).lt(1)).max(LIMITS.maxQuantileLevels).nullish().describe('Default [0.1, 0.5, 0.9].'),
    quantiles: z.array(z.number().gt(0).lt(1)).max(LIMITS.maxQuantileLevels).nullish().describe('Alias of quantile_levels.'),
    context_length: z.number().int().min(1).nullish().describe('Use only the last N points.'),
    num_samples: z.number().int().min(1).max(LIMITS.maxNumSamples).nullish().describe('Sample paths to return.'),
    add_history: z.boolean().nullish().describe('Also return in-sample fitted values (models with fitted_values).'),
    temperature: z.number().nullish().describe('Accepted for compatibility; not used.'),
    top_p: z.number().nullish().describe('Accepted for compatibility; not used.'),
  })
  .strict()
  .meta({ id: 'ForecastParameters' });

export const ForecastRequest = z
  .object({
    model: z.string().min(1).max(200).describe('Model id from listModels / GET /api/models, e.g. auto-ets, theta, combo.'),
    inputs: z.array(ForecastInput).min(1).describe('One entry per series.'),
    parameters: ForecastParameters.nullish().describe('Horizon, frequency, quantile levels, samples.'),
    metadata: Metadata.nullish().describe(`Echoed back in the response. At most ${METADATA_MAX_DEPTH} levels deep and ${METADATA_MAX_BYTES} bytes as JSON.`),
    dry_run: z
      .boolean()
      .optional()
      .describe('true: validate and price only; the answer is a ForecastQuote (as POST /v1/forecast/quote) and nothing runs or is charged.'),
  })
  .strict()
  .meta({ id: 'ForecastRequest' });
export type ForecastRequestT = z.infer<typeof ForecastRequest>;

const Matrix = z.array(z.array(z.number()));

export const Prediction = z
  .object({
    mean: Matrix,
    quantile_predictions: z.array(z.object({ level: z.number().gt(0).lt(1), values: Matrix }).meta({ id: 'QuantilePrediction' })).nullable(),
    samples: z.array(Matrix).nullable(),
    timestamps: z.array(z.string()).nullable(),
    fitted_values: z
      .array(z.array(z.number().nullable()))
      .optional()
      .describe(
        "With parameters.add_history: one row per input step (steps × variates), the model's prediction of it from the steps before; null where there is none.",
      ),
    metadata: z.record(z.string(), z.unknown()).nullable(),
  })
  .meta({ id: 'Prediction' });

export const UsageBody = z.object({ input_tokens: z.number().int(), output_tokens: z.number().int(), total_tokens: z.number().int() }).meta({ id: 'Usage' });

export const ForecastResponseBody = z
  .object({
    id: z.string(),
    object: z.string(),
    created: z.number().int(),
    model: z.string(),
    provider: z.string(),
    horizon: z.number().int(),
    prediction_length: z.number().int().nullable(),
    quantile_levels: z.array(z.number()),
    input_points: z.number().int().nullable(),
    max_context_length: z.number().int().nullable(),
    truncated_from: z.number().int().nullable(),
    outputs: z.array(Prediction),
    usage: UsageBody,
    latency_ms: z.number().nullable(),
    metadata: z.record(z.string(), z.unknown()).nullable(),
  })
  .meta({ id: 'ForecastResponseBody' });
export type ForecastResponse = z.infer<typeof ForecastResponseBody>;

export const BatchItemError = ErrorBody.extend({
  status: z.number().int(),
  detail: z.array(z.record(z.string(), z.unknown())).optional(),
}).meta({ id: 'ForecastBatchItemError' });

export const ForecastBatchRequest = z
  .object({
    // Items are validated one by one, so one bad item fails alone.
    requests: z.array(z.unknown()).min(1).describe(`Array of ForecastRequest (at most ${LIMITS.maxBatch}).`),
    dry_run: z
      .boolean()
      .optional()
      .describe('true: validate and price only; the answer is a ForecastQuote (as POST /v1/forecast/quote) and nothing runs or is charged.'),
  })
  .meta({ id: 'ForecastBatchRequest' });

export const ForecastBatchResponseBody = z
  .object({
    object: z.string(),
    data: z.array(
      z.object({ ok: z.boolean(), result: ForecastResponseBody.nullable(), error: BatchItemError.nullable() }).meta({ id: 'ForecastBatchItemBody' }),
    ),
  })
  .meta({ id: 'ForecastBatchResponseBody' });
