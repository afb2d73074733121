import { EngineError, type ForecastJob, type ModelEnv, type ModelFiles, type ModelImpl, type SeriesForecast } from '../types.ts';
import { FLOAT32_BAND } from '../magnitude.ts';
import { backtestOrigins, type BacktestPlan, conformalSpread } from '../conformal.ts';
import { countFinite, prepareContext, type PreparedContext } from './prepare.ts';
import { checkLevels, samplePaths, sortSmall, valueAtLevel } from './quantiles.ts';
import { runRows, type Row } from './run.ts';
import { graphPath, loadGraph, type ResolvedGraph } from './session.ts';
import type { OnnxGraphSpec } from './spec.ts';

export interface OnnxModelDefinition {
  info: ModelImpl['info'];
  files: ModelFiles;
  spec: OnnxGraphSpec;
  /** For point-forecast graphs: where the calibration backtests start (default: `defaultBacktests`). */
  calibration?: BacktestPlan;
}

/** A ModelImpl that serves one exported ONNX graph through the generic driver. */
export function onnxModel(def: OnnxModelDefinition): ModelImpl {
  return {
    info: def.info,
    files: def.files,
    // The graphs compute in float32: their scalers' squares overflow long before the doubles' band.
    magnitude: FLOAT32_BAND,
    forecast: (job, env) => forecastWithGraph(def, job, env),
  };
}

export async function forecastWithGraph(def: OnnxModelDefinition, job: ForecastJob, env: ModelEnv, signal?: AbortSignal): Promise<SeriesForecast[]> {
  const id = def.info.id;
  validateJob(def, job);
  const graph = await loadGraph(graphPath(env.modelsDir, def.files.repo, def.spec), env.threads, def.spec, id);
  if (graph.levels) return quantileForecast(def, graph, job, signal);
  return pointForecast(def, graph, job, signal);
}

function validateJob(def: OnnxModelDefinition, job: ForecastJob): void {
  if (job.groupIds && job.groupIds.length !== job.series.length) {
    throw new EngineError('bad_input', `groupIds has ${job.groupIds.length} entries for ${job.series.length} series`);
  }
  const need = Math.max(1, def.info.minPoints);
  job.series.forEach((s, i) => {
    if (countFinite(s) < need) {
      throw new EngineError('bad_input', `series ${i} has fewer than ${need} observed points, which ${def.info.id} needs`, i);
    }
  });
}

function blocksFor(def: OnnxModelDefinition, graph: ResolvedGraph, horizon: number): number {
  if (horizon <= graph.horizon) return 1;
  const max = def.info.maxHorizon;
  if (def.spec.rollout === 'none' || (max !== null && horizon > max)) {
    const limit = def.spec.rollout === 'none' ? graph.horizon : max;
    throw new EngineError('bad_input', `${def.info.id} forecasts at most ${limit} steps; ${horizon} were asked`, undefined, 'horizon');
  }
  return Math.ceil(horizon / graph.horizon);
}

function baseInfo(graph: ResolvedGraph, prep: PreparedContext, blocks: number): Record<string, unknown> {
  return {
    context_length: graph.contextLength,
    points_used: prep.used,
    padded: prep.padded,
    imputed: prep.imputed,
    ...(prep.truncatedFrom !== null ? { truncated_from: prep.truncatedFrom } : {}),
    ...(blocks > 1 ? { rollout_blocks: blocks } : {}),
  };
}

async function quantileForecast(def: OnnxModelDefinition, graph: ResolvedGraph, job: ForecastJob, signal?: AbortSignal): Promise<SeriesForecast[]> {
  const levels = graph.levels ?? [];
  checkLevels(levels, job.quantileLevels, def.info.id);
  const blocks = blocksFor(def, graph, job.horizon);
  const prepared = job.series.map((s) => prepareContext(s, graph.contextLength, def.spec.missing));
  const joint = graph.idInput !== null && job.groupIds !== undefined;
  const rows: Row[] = prepared.map((p, i) => ({ context: p.values, group: joint ? (job.groupIds?.[i] ?? i) : i }));
  const outputs = await runRows(graph, rows, blocks, def.spec.maxBatchRows, signal);
  const K = levels.length;
  return outputs.map((raw, i) => {
    // Sorting each step repairs quantile crossing (the official TinyCast post-processing)
    // and makes every interpolated level monotone.
    const sorted: Float32Array[] = [];
    for (let h = 0; h < job.horizon; h++) sorted.push(sortSmall(raw.slice(h * K, (h + 1) * K)));
    const at = (q: number): number[] => sorted.map((v) => valueAtLevel(levels, v, q));
    const forecast: SeriesForecast = {
      mean: at(0.5),
      quantiles: job.quantileLevels.map(at),
      info: {
        ...baseInfo(graph, prepared[i] as PreparedContext, blocks),
        point: 'median',
        quantile_method: `graph levels ${levels.join(', ')}, linear in between`,
        ...(joint ? { group: job.groupIds?.[i] } : {}),
      },
    };
    if (job.numSamples > 0) {
      forecast.samples = samplePaths(
        () => levels,
        (h) => sorted[h] ?? [],
        job.horizon,
        job.numSamples,
        job.seed + i * 7919,
      );
    }
    return forecast;
  });
}

/** Backtests of a point-forecast graph without a plan of its own: 8 windows, two at least, each with a graph horizon of history (96 points at most). */
export function defaultBacktests(graph: { horizon: number; contextLength: number }): BacktestPlan {
  return { maxWindows: 8, minWindows: 2, minContext: Math.min(96, graph.horizon), lookback: graph.contextLength };
}

/**
 * A point-forecast graph (TinyTimeMixer): the graph's forecast, and quantiles and samples from the
 * engine's one conformal calibration (src/engine/conformal.ts) on backtests run through the graph
 * the same way (rolled out alike), as the TypeScript TTM does.
 */
async function pointForecast(def: OnnxModelDefinition, graph: ResolvedGraph, job: ForecastJob, signal?: AbortSignal): Promise<SeriesForecast[]> {
  const blocks = blocksFor(def, graph, job.horizon);
  const h = job.horizon;
  const plan = def.calibration ?? defaultBacktests(graph);
  const wantSpread = job.quantileLevels.length > 0 || job.numSamples > 0;
  const prepared = job.series.map((s) => prepareContext(s, graph.contextLength, def.spec.missing));
  const rows: Row[] = prepared.map((p, i) => ({ context: p.values, group: i }));
  const windows: { series: number; origin: number; row: number }[] = [];
  if (wantSpread) {
    job.series.forEach((s, i) => {
      const origins = backtestOrigins(s, h, plan);
      if (origins.length < plan.minWindows) {
        const need = plan.minContext + h + (plan.minWindows - 1) * Math.ceil(h / 2);
        throw new EngineError('bad_input', `series ${i}: quantiles from ${def.info.id} need at least ${need} points (in-context backtests)`, i);
      }
      for (const origin of origins) {
        windows.push({ series: i, origin, row: rows.length });
        const prep = prepareContext(s.slice(0, origin), graph.contextLength, def.spec.missing);
        rows.push({ context: prep.values, group: rows.length });
      }
    });
  }
  const outputs = await runRows(graph, rows, blocks, def.spec.maxBatchRows, signal);
  const points = job.series.map((_, i) => Array.from((outputs[i] ?? new Float32Array(0)).subarray(0, h)));
  const spreads = wantSpread
    ? conformalSpread(
        job.series,
        points,
        windows,
        windows.map((w) => (outputs[w.row] ?? new Float32Array(h)).subarray(0, h)),
        h,
        job.quantileLevels,
        job.numSamples,
        job.seed,
      )
    : null;
  return job.series.map((_, i) => {
    const info: Record<string, unknown> = { ...baseInfo(graph, prepared[i] as PreparedContext, blocks), point: 'model' };
    const forecast: SeriesForecast = { mean: points[i] ?? [], quantiles: [], info };
    const spread = spreads?.[i];
    if (!spread) return forecast;
    forecast.quantiles = spread.quantiles;
    info.quantile_method = `conformal: signed errors of ${spread.windows} in-context backtests, scaled per step (src/engine/conformal.ts)`;
    if (spread.samples) forecast.samples = spread.samples;
    return forecast;
  });
}
