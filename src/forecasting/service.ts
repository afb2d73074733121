import { randomUUID } from 'node:crypto';
import type { Principal } from '../accounts/credentials.ts';
import type { Catalog } from '../catalog/catalog.ts';
import { creditsFor } from '../catalog/pricing.ts';
import { EngineError, type Engine, type SeriesForecast } from '../engine/types.ts';
import { AppError, ValidationFailure } from '../shared/errors.ts';
import { forecastTimestamps } from './frequency.ts';
import type { Meter, UsageSource } from './metering.ts';
import { prepareForecast, type PreparedForecast } from './prepare.ts';
import type { ForecastRequestT, ForecastResponse } from './schemas.ts';

export interface ForecastCtx {
  engine: Engine;
  catalog: Catalog;
  meter: Meter;
}

export interface CallInfo {
  requestId: string;
  source: UsageSource;
}

/** Fixed seed: the same request gives the same quantiles and samples. */
const SEED = 20_241_122;

/** Maps an engine failure to the API's error families. */
export function engineFailure(err: unknown, seriesToInput?: number[]): Error {
  if (!(err instanceof EngineError)) return err instanceof Error ? err : new Error(String(err));
  switch (err.kind) {
    case 'timeout':
      return new AppError('upstream_timeout', 'The model did not answer in time');
    case 'busy':
      return new AppError('upstream_unavailable', 'The inference pool is full; retry shortly', { 'retry-after': '1' });
    case 'unavailable':
      return new AppError('upstream_unavailable', err.message);
    case 'unknown_model':
      return new AppError('model_not_found', err.message);
    case 'bad_input': {
      const input = err.seriesIndex !== undefined && seriesToInput ? seriesToInput[err.seriesIndex] : undefined;
      const path =
        err.field === 'quantile_levels'
          ? ['parameters', 'quantile_levels']
          : err.field === 'horizon'
            ? ['parameters', 'prediction_length']
            : input !== undefined
              ? ['inputs', input, 'target']
              : ['inputs'];
      return new ValidationFailure([{ path, msg: err.message, type: 'value_error' }]);
    }
    default:
      return new AppError('upstream_empty', `The model failed to forecast: ${err.message}`);
  }
}

/** Runs a prepared forecast on the engine and shapes the response (no metering). */
export async function executePrepared(ctx: ForecastCtx, prepared: PreparedForecast, signal?: AbortSignal): Promise<ForecastResponse> {
  const t0 = performance.now();
  const series: number[][] = [];
  const seriesToInput: number[] = [];
  prepared.inputs.forEach((inp, i) => {
    for (const v of inp.variates) {
      series.push(v);
      seriesToInput.push(i);
    }
  });
  const sortedLevels = [...prepared.quantileLevels].sort((a, b) => a - b);
  let forecasts: SeriesForecast[];
  try {
    forecasts = await ctx.engine.forecast(
      {
        model: prepared.model.id,
        series,
        horizon: prepared.horizon,
        quantileLevels: sortedLevels,
        numSamples: prepared.numSamples,
        seasonLength: prepared.frequency?.seasonLength ?? null,
        seed: SEED,
        // Variates of one input share a group: multivariate models forecast them jointly.
        groupIds: seriesToInput,
      },
      signal ? { signal } : {},
    );
  } catch (err) {
    throw engineFailure(err, seriesToInput);
  }
  if (forecasts.length !== series.length) throw new AppError('upstream_empty', 'The model returned no forecast for some series');
  const latencyMs = Math.round((performance.now() - t0) * 100) / 100;
  ctx.catalog.recordLatency(prepared.model.id, latencyMs);
  return shapeResponse(prepared, forecasts, sortedLevels, latencyMs);
}

function shapeResponse(prepared: PreparedForecast, forecasts: SeriesForecast[], sortedLevels: number[], latencyMs: number): ForecastResponse {
  const h = prepared.horizon;
  let k = 0;
  const outputs = prepared.inputs.map((inp) => {
    const fc = forecasts.slice(k, k + inp.variates.length);
    k += inp.variates.length;
    // steps × variates, like the target.
    const matrix = (pick: (f: SeriesForecast) => number[]) => Array.from({ length: h }, (_, t) => fc.map((f) => pick(f)[t] as number));
    const quantile_predictions = prepared.quantileLevels.map((level) => {
      const row = sortedLevels.indexOf(level);
      return { level, values: matrix((f) => f.quantiles[row] as number[]) };
    });
    const samples =
      prepared.numSamples > 0 ? Array.from({ length: prepared.numSamples }, (_, s) => matrix((f) => (f.samples?.[s] as number[] | undefined) ?? f.mean)) : null;
    const metadata: Record<string, unknown> = {};
    if (inp.itemId !== undefined && inp.itemId !== null) metadata.item_id = inp.itemId;
    if (inp.ignoredCovariates.length > 0) metadata.covariates_ignored = inp.ignoredCovariates;
    if (inp.truncated) metadata.truncated_from = inp.originalLength;
    const info = fc.map((f) => f.info).filter((x) => x !== undefined);
    if (info.length > 0) metadata.model_info = info;
    return {
      mean: matrix((f) => f.mean),
      quantile_predictions,
      samples,
      timestamps: inp.start && prepared.frequency ? forecastTimestamps(inp.start, prepared.frequency, inp.originalLength, h) : null,
      metadata: Object.keys(metadata).length > 0 ? metadata : null,
    };
  });
  const truncated = prepared.inputs.filter((x) => x.truncated).map((x) => x.originalLength);
  return {
    id: `fcst_${randomUUID().replaceAll('-', '')}`,
    object: 'forecast',
    created: Math.floor(Date.now() / 1000),
    model: prepared.model.id,
    provider: prepared.model.provider,
    horizon: h,
    prediction_length: h,
    quantile_levels: prepared.quantileLevels,
    input_points: prepared.inputs.reduce((a, x) => a + x.observedPoints, 0),
    max_context_length: prepared.model.max_context_length,
    truncated_from: truncated.length > 0 ? Math.max(...truncated) : null,
    outputs,
    usage: prepared.usage,
    latency_ms: latencyMs,
    metadata: prepared.metadata,
  };
}

/** Resolves the model, validates the request and prices it, without running anything. */
export function planForecast(ctx: ForecastCtx, req: ForecastRequestT): { prepared: PreparedForecast; credits: number } {
  const model = ctx.catalog.get(req.model);
  if (!model.available) {
    throw new AppError('upstream_unavailable', `Model '${model.id}' is not available: ${model.unavailable_reason ?? 'not downloaded'}`);
  }
  const prepared = prepareForecast(req, model);
  return { prepared, credits: creditsFor(model.pricing, prepared.usage) };
}

/**
 * The one path of a metered forecast: plan → access check → hold credits → run → commit
 * (debit + usage event) → answer. A failed run releases the hold: a failed forecast costs nothing.
 */
export async function runForecast(
  ctx: ForecastCtx,
  principal: Principal,
  req: ForecastRequestT,
  call: CallInfo,
  signal?: AbortSignal,
): Promise<ForecastResponse> {
  const { prepared, credits } = planForecast(ctx, req);
  await ctx.meter.checkModelAccess(principal, prepared.model.id);
  const hold = await ctx.meter.hold({
    principal,
    requestId: call.requestId,
    source: call.source,
    model: prepared.model.id,
    usage: prepared.usage,
    credits,
  });
  let response: ForecastResponse;
  try {
    response = await executePrepared(ctx, prepared, signal);
  } catch (err) {
    await hold.release(err instanceof Error ? err.message : 'failed');
    throw err;
  }
  await hold.commit({ latencyMs: response.latency_ms ?? 0 });
  return response;
}
