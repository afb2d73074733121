import { randomUUID } from 'node:crypto';
import { yieldTurn as nextTurn } from '../shared/turns.ts';
import type { Principal } from '../accounts/credentials.ts';
import type { Catalog } from '../catalog/catalog.ts';
import { creditsFor } from '../catalog/pricing.ts';
import { type EncodedForecast, isEncoded } from '../engine/encode.ts';
import { EngineError, type Engine, type EngineJob, type SeriesForecast } from '../engine/types.ts';
import { RawJson } from '../shared/json.ts';
import { AppError, ValidationFailure } from '../shared/errors.ts';
import { throwIfGone } from '../shared/client-gone.ts';
import { type Frequency, timestampsJson } from './frequency.ts';
import type { Meter, Receipt, UsageSource } from './metering.ts';
import { prepareForecast, type PreparedForecast, type PrepareLimits } from './prepare.ts';
import { RanOutOfTime, settleFailed, TimeoutCharges } from './timed-out.ts';
import type { ForecastRequestT, ForecastResponse } from './schemas.ts';

export interface ForecastCtx {
  engine: Engine;
  catalog: Catalog;
  meter: Meter;
  config: { forecast: PrepareLimits };
}

export interface CallInfo {
  requestId: string;
  source: UsageSource;
  /** Where settled debits are added up for the boundary (cost headers); optional. */
  receipt?: Receipt;
  /** Aborted when the call's client has left: the job is dropped or stopped, nothing is charged (ADR 0040). */
  signal?: AbortSignal;
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
    case 'share_exceeded':
      // The account's own share of the queue is used up (other accounts are still admitted): the caller's rate, not the service's state.
      return new AppError(
        'rate_limit_exceeded',
        `Too many of your jobs are waiting for a model worker: ${err.message} (INFERENCE_ACCOUNT_QUEUE). Retry once some have finished, or send fewer at once`,
        { 'retry-after': '5' },
      );
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

/** The engine job of a prepared forecast, and how its series map back to the request's inputs. */
export interface PreparedJob {
  job: EngineJob;
  seriesToInput: number[];
  sortedLevels: number[];
}

/**
 * With `encode`, the engine may write the numbers as JSON text on its worker thread: the response's
 * matrices (mean, quantile values, samples) are then RawJson, fit only for serialiseJson
 * (src/shared/json.ts).
 */
export function jobOf(prepared: PreparedForecast, encode = false): PreparedJob {
  const series: Float64Array[] = [];
  const seriesToInput: number[] = [];
  prepared.inputs.forEach((inp, i) => {
    for (const v of inp.variates) {
      series.push(v);
      seriesToInput.push(i);
    }
  });
  const sortedLevels = [...prepared.quantileLevels].sort((a, b) => a - b);
  const job: EngineJob = {
    model: prepared.model.id,
    series,
    horizon: prepared.horizon,
    quantileLevels: sortedLevels,
    numSamples: prepared.numSamples,
    seasonLength: prepared.frequency?.seasonLength ?? null,
    seed: SEED,
    // Variates of one input share a group: multivariate models forecast them jointly.
    groupIds: seriesToInput,
    ...(prepared.addHistory ? { fitted: true } : {}),
    // Fitted values (add_history) are shaped here, against each input's full length.
    ...(encode && !prepared.addHistory ? { encode: true as const } : {}),
    // What the job was priced for: a model detecting a season that makes it costlier refuses it (src/engine/work.ts).
    ...(prepared.workMs > 0 ? { workBudgetMs: prepared.workMs } : {}),
  };
  return { job, seriesToInput, sortedLevels };
}

/** Runs a prepared forecast on the engine and shapes the response (no metering); `built` says how (jobOf). */
export async function executePrepared(
  ctx: ForecastCtx,
  prepared: PreparedForecast,
  signal?: AbortSignal,
  tenant?: string,
  built: PreparedJob = jobOf(prepared),
): Promise<ForecastResponse> {
  const t0 = performance.now();
  const { job, seriesToInput, sortedLevels } = built;
  const series = job.series;
  let forecasts: SeriesForecast[] | EncodedForecast;
  try {
    forecasts = await ctx.engine.forecast(job, { ...(signal ? { signal } : {}), ...(tenant !== undefined ? { tenant } : {}) });
  } catch (err) {
    // The engine stopped the job because the client left: not a model failure, nothing charged.
    throwIfGone(signal);
    if (err instanceof EngineError && err.kind === 'timeout') throw timedOut(ctx, prepared, err);
    throw engineFailure(err, seriesToInput);
  }
  const answered = isEncoded(forecasts) ? (forecasts.groups.length === prepared.inputs.length ? forecasts.info.length : -1) : forecasts.length;
  if (answered !== series.length) throw new AppError('upstream_empty', 'The model returned no forecast for some series');
  const latencyMs = Math.round((performance.now() - t0) * 100) / 100;
  ctx.catalog.recordLatency(prepared.model.id, latencyMs);
  if (isEncoded(forecasts)) return envelope(prepared, latencyMs, await encodedOutputs(prepared, forecasts, sortedLevels));
  return await shapeResponse(prepared, forecasts, sortedLevels, latencyMs);
}

/**
 * A job that ran for the engine's whole time limit (ADR 0039). Charged its price (`RanOutOfTime`,
 * which the metered paths debit) when its thread computed at least what the job was estimated at
 * (for a model without an estimate, INFERENCE_MAX_JOB_WORK_MS), or when the engine cannot tell: the
 * data made it costlier than its price said. A job that computed less was starved by the machine's
 * load, not by its own work: free, like one that waited for a worker.
 */
function timedOut(ctx: ForecastCtx, prepared: PreparedForecast, err: EngineError): AppError {
  const threshold = prepared.workMs > 0 ? prepared.workMs : ctx.config.forecast.maxJobWorkMs;
  if (err.cpuMs === undefined || err.cpuMs >= threshold) return new RanOutOfTime(creditsFor(prepared.model.pricing, prepared.usage), prepared.usage);
  return new AppError(
    'upstream_timeout',
    `The model did not answer within the engine's time limit: the server was too busy to give the job its time (${(err.cpuMs / 1000).toFixed(1)} s of CPU ` +
      `of the ${(threshold / 1000).toFixed(1)} s it was estimated at). Nothing is charged; retry shortly`,
    { 'retry-after': '5' },
  );
}

/** The outputs of an answer the engine wrote as JSON text: the matrices stay text (RawJson). */
async function encodedOutputs(prepared: PreparedForecast, enc: EncodedForecast, sortedLevels: number[]): Promise<ForecastResponse['outputs']> {
  // The matrices are RawJson, written by serialiseJson as they are; the type says number[][] since nothing else reads them.
  const raw = (bytes: Uint8Array | Uint8Array[]) => new RawJson(bytes) as unknown as number[][];
  // Timestamps are written as text in slices (timestampsJson), one input after the other.
  const timestamps: (string[] | null)[] = [];
  for (const inp of prepared.inputs) timestamps.push(await outputTimestamps(inp, prepared.frequency, prepared.horizon));
  let k = 0;
  return prepared.inputs.map((inp, i) => {
    const g = enc.groups[i] as EncodedForecast['groups'][number];
    const info = enc.info.slice(k, k + inp.variates.length).filter((x) => x !== undefined);
    k += inp.variates.length;
    return {
      mean: raw(g.mean),
      quantile_predictions: prepared.quantileLevels.map((level) => ({ level, values: raw(g.quantiles[sortedLevels.indexOf(level)] as Uint8Array) })),
      samples: g.samples ? (raw(g.samples) as unknown as number[][][]) : null,
      timestamps: timestamps[i] ?? null,
      metadata: outputMetadata(inp, info),
    };
  });
}

/** An output's timestamps as JSON text written in slices (RawJson; typed as the strings it serialises to), or null without a start and frequency. */
async function outputTimestamps(inp: { start: Date | null; originalLength: number }, frequency: Frequency | null, horizon: number): Promise<string[] | null> {
  if (!inp.start || !frequency) return null;
  return (await timestampsJson(inp.start, frequency, inp.originalLength, horizon)) as unknown as string[];
}

/** A matrix as numbers: parsed back when the worker wrote it as text (RawJson), else as it is. */
export function matrixNumbers(m: number[][]): number[][] {
  const raw = m as unknown;
  if (!(raw instanceof RawJson)) return m;
  return JSON.parse(raw.parts.map((b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8')).join('')) as number[][];
}

/**
 * The sample paths of an answer the worker wrote as text, one RawJson per path (the worker writes
 * them one piece per path: `[p0`, `,p1`, …, `,pn]`), so that a caller can pick paths without
 * reading their numbers. Arrays are returned as they are.
 */
export function samplePaths(samples: number[][][] | null): number[][][] | null {
  const raw = samples as unknown;
  if (!(raw instanceof RawJson)) return samples;
  const n = raw.parts.length;
  return raw.parts.map((b, s) => new RawJson(b.subarray(1, s === n - 1 ? b.byteLength - 1 : b.byteLength)) as unknown as number[][]);
}

/**
 * Runs a prepared forecast letting the worker write its numbers (jobOf's `encode`), for callers
 * that need only some of them as numbers (the ensemble's final forecasts: means and quantiles are
 * blended, sample paths only picked): mean and quantiles come back as numbers, samples one
 * RawJson per path. The millions of numbers of samples are never shaped into arrays here.
 */
export async function executeWritten(ctx: ForecastCtx, prepared: PreparedForecast, tenant?: string, signal?: AbortSignal): Promise<ForecastResponse> {
  const r = await executePrepared(ctx, prepared, signal, tenant, jobOf(prepared, true));
  const outputs: ForecastResponse['outputs'] = [];
  for (const o of r.outputs) {
    outputs.push({
      ...o,
      mean: matrixNumbers(o.mean),
      quantile_predictions: o.quantile_predictions?.map((q) => ({ level: q.level, values: matrixNumbers(q.values) })) ?? o.quantile_predictions,
      samples: samplePaths(o.samples ?? null),
    });
    await nextTurn();
  }
  return { ...r, outputs };
}

function outputMetadata(inp: PreparedForecast['inputs'][number], info: unknown[]): Record<string, unknown> | null {
  const metadata: Record<string, unknown> = {};
  if (inp.itemId !== undefined && inp.itemId !== null) metadata.item_id = inp.itemId;
  if (inp.ignoredCovariates.length > 0) metadata.covariates_ignored = inp.ignoredCovariates;
  if (inp.truncated) metadata.truncated_from = inp.originalLength;
  if (info.length > 0) metadata.model_info = info;
  return Object.keys(metadata).length > 0 ? metadata : null;
}

/** Numbers shaped between two turns of the event loop (a 2-million-number answer must not pin it). */
const SHAPE_SLICE = 20_000;

async function shapeResponse(prepared: PreparedForecast, forecasts: SeriesForecast[], sortedLevels: number[], latencyMs: number): Promise<ForecastResponse> {
  const h = prepared.horizon;
  let k = 0;
  let shaped = 0;
  const outputs: ForecastResponse['outputs'] = [];
  for (const inp of prepared.inputs) {
    const fc = forecasts.slice(k, k + inp.variates.length);
    k += inp.variates.length;
    // steps × variates, like the target; yields to the event loop every SHAPE_SLICE numbers. A
    // matrix that cannot reach the next yield is built synchronously (a small forecast, each item
    // of a batch: no promise per matrix).
    const matrix = (pick: (f: SeriesForecast) => number[]): number[][] | Promise<number[][]> => {
      const cols = fc.map(pick);
      if (shaped + cols.length * h < SHAPE_SLICE) {
        const rows = new Array<number[]>(h);
        for (let t = 0; t < h; t++) rows[t] = cols.map((c) => c[t] as number);
        shaped += cols.length * h;
        return rows;
      }
      return (async () => {
        const rows = new Array<number[]>(h);
        for (let t = 0; t < h; t++) {
          rows[t] = cols.map((c) => c[t] as number);
          shaped += cols.length;
          if (shaped >= SHAPE_SLICE) {
            shaped = 0;
            await nextTurn();
          }
        }
        return rows;
      })();
    };
    const quantile_predictions: { level: number; values: number[][] }[] = [];
    for (const level of prepared.quantileLevels) {
      const row = sortedLevels.indexOf(level);
      quantile_predictions.push({ level, values: await matrix((f) => f.quantiles[row] as number[]) });
    }
    let samples: number[][][] | null = null;
    if (prepared.numSamples > 0) {
      samples = [];
      for (let s = 0; s < prepared.numSamples; s++) samples.push(await matrix((f) => (f.samples?.[s] as number[] | undefined) ?? f.mean));
    }
    const info = fc.map((f) => f.info).filter((x) => x !== undefined);
    outputs.push({
      mean: await matrix((f) => f.mean),
      quantile_predictions,
      samples,
      timestamps: await outputTimestamps(inp, prepared.frequency, h),
      ...(prepared.addHistory ? { fitted_values: fittedRows(fc, inp.originalLength) } : {}),
      metadata: outputMetadata(inp, info),
    });
  }
  return envelope(prepared, latencyMs, outputs);
}

function envelope(prepared: PreparedForecast, latencyMs: number, outputs: ForecastResponse['outputs']): ForecastResponse {
  const h = prepared.horizon;
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

/**
 * The fitted values of one input as steps × variates over its whole target: the steps before the
 * context the model saw (context_length) and those without a prediction are null.
 */
function fittedRows(fc: SeriesForecast[], originalLength: number): (number | null)[][] {
  const cols = fc.map((f) => f.fitted ?? []);
  return Array.from({ length: originalLength }, (_, t) =>
    cols.map((c) => {
      const v = c[t - (originalLength - c.length)];
      return v !== undefined && Number.isFinite(v) ? v : null;
    }),
  );
}

/** Resolves the model, validates the request and prices it, without running anything. */
export function planForecast(ctx: ForecastCtx, req: ForecastRequestT): { prepared: PreparedForecast; credits: number } {
  const model = ctx.catalog.get(req.model);
  if (!model.available) {
    const reason = model.unavailable_reason ?? 'not downloaded';
    // Files missing or failing their check on this server: retrying cannot help, so not a 5xx (the message names the pull command).
    // A remote node that is down stays 503: that one passes.
    const local = reason.includes('npm run models');
    throw new AppError(local ? 'model_not_installed' : 'upstream_unavailable', `Model '${model.id}' is not available on this server: ${reason}`);
  }
  const prepared = prepareForecast(req, model, ctx.config.forecast);
  return { prepared, credits: creditsFor(model.pricing, prepared.usage) };
}

export type Planned = ReturnType<typeof planForecast>;

/**
 * The one path of a metered forecast: plan (413 when the response would pass the output cap) →
 * access check → hold credits → run → `finish` (e.g. serialise the answer) → commit (debit + usage
 * event) → the caller sends. Any failure after the hold, including in `finish` or the commit,
 * releases it: a forecast that cannot be produced costs nothing. A job the engine runs inline is
 * not held: its commit reserves and debits in one step, and refuses (402) when the account cannot
 * pay (ADR 0014). A call whose client left (`signal`, else `call.signal`) stops there and is not
 * committed: the client will not get the answer (ADR 0040).
 */
export async function runPlanned<T>(
  ctx: ForecastCtx,
  principal: Principal,
  { prepared, credits }: Planned,
  call: CallInfo,
  finish: (response: ForecastResponse) => Promise<T> | T,
  signal?: AbortSignal,
  /** `finish` only serialises (serialiseJson): the worker may write the numbers (executePrepared). */
  encode = false,
): Promise<T> {
  const gone = signal ?? call.signal;
  throwIfGone(gone);
  await ctx.meter.checkModelAccess(principal, prepared.model.id);
  const built = jobOf(prepared, encode);
  // A job the engine runs inline costs less than reserving its credits: it runs first and is
  // reserved and debited in one transaction at commit (ADR 0014); any other job is held first.
  const inline = ctx.engine.runsInline?.(built.job) === true;
  const hold = await ctx.meter.hold({
    principal,
    requestId: call.requestId,
    source: call.source,
    model: prepared.model.id,
    usage: prepared.usage,
    credits,
    ...(inline ? { chargeAtCommit: true } : {}),
  });
  const charges = new TimeoutCharges();
  const t0 = performance.now();
  try {
    const response = await charges.watch(executePrepared(ctx, prepared, gone, principal.user.id, built));
    const answer = await finish(response);
    throwIfGone(gone);
    // Not `call.receipt?.add(await …)`: optional chaining would skip the commit itself.
    const charge = await hold.commit({ latencyMs: response.latency_ms ?? 0 });
    call.receipt?.add(charge);
    return answer;
  } catch (err) {
    // Released, unless the job ran for the engine's whole time limit: then charged (ADR 0039).
    await settleFailed(hold, charges, err, call, credits, Math.round(performance.now() - t0));
    throw err;
  }
}

/** A metered forecast whose answer is the response object (MCP, tests). */
export async function runForecast(
  ctx: ForecastCtx,
  principal: Principal,
  req: ForecastRequestT,
  call: CallInfo,
  signal?: AbortSignal,
): Promise<ForecastResponse> {
  return runPlanned(ctx, principal, planForecast(ctx, req), call, (r) => r, signal);
}
