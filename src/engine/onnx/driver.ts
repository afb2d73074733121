import { EngineError, type ForecastJob, type ModelEnv, type ModelFiles, type ModelImpl, type SeriesForecast } from '../types.ts';
import { backtestOrigins, calibrationMinPoints, DEFAULT_CALIBRATION, empiricalLevels, pooledErrors, type CalibrationOptions } from './conformal.ts';
import { countFinite, prepareContext, type PreparedContext } from './prepare.ts';
import { checkLevels, samplePaths, sortSmall, valueAtLevel } from './quantiles.ts';
import { runRows, type Row } from './run.ts';
import { graphPath, loadGraph, type ResolvedGraph } from './session.ts';
import type { OnnxGraphSpec } from './spec.ts';

export interface OnnxModelDefinition {
  info: ModelImpl['info'];
  files: ModelFiles;
  spec: OnnxGraphSpec;
  /** For point-forecast graphs: how quantiles and samples are calibrated. */
  calibration?: CalibrationOptions;
}

/** A ModelImpl that serves one exported ONNX graph through the generic driver. */
export function onnxModel(def: OnnxModelDefinition): ModelImpl {
  return {
    info: def.info,
    files: def.files,
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

async function pointForecast(def: OnnxModelDefinition, graph: ResolvedGraph, job: ForecastJob, signal?: AbortSignal): Promise<SeriesForecast[]> {
  const blocks = blocksFor(def, graph, job.horizon);
  // Backtests span everything one forecast produces (blocks × the graph's horizon), rolled out
  // the same way, so a rolled-out horizon is calibrated on rolled-out errors.
  const H = blocks * graph.horizon;
  const calib = def.calibration ?? { ...DEFAULT_CALIBRATION, minContext: Math.min(DEFAULT_CALIBRATION.minContext, graph.horizon) };
  const wantSpread = job.quantileLevels.length > 0 || job.numSamples > 0;
  const prepared = job.series.map((s) => prepareContext(s, graph.contextLength, def.spec.missing));
  const rows: Row[] = prepared.map((p, i) => ({ context: p.values, group: i }));
  const windows: { series: number; origin: number; row: number }[] = [];
  if (wantSpread) {
    job.series.forEach((s, i) => {
      const origins = backtestOrigins(s.length, H, calib);
      if (origins.length < calib.minWindows) {
        const need = calibrationMinPoints(H, calib);
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
  const errorsBySeries = job.series.map(() => [] as Float64Array[]);
  for (const w of windows) {
    const fc = outputs[w.row] ?? new Float32Array(H);
    const s = job.series[w.series] ?? [];
    errorsBySeries[w.series]?.push(Float64Array.from({ length: H }, (_, h) => (s[w.origin + h] ?? NaN) - (fc[h] ?? NaN)));
  }
  return job.series.map((_, i) => {
    const point = Array.from((outputs[i] ?? new Float32Array(0)).subarray(0, job.horizon));
    const info: Record<string, unknown> = { ...baseInfo(graph, prepared[i] as PreparedContext, blocks), point: 'model' };
    const forecast: SeriesForecast = { mean: point, quantiles: [], info };
    if (!wantSpread) return forecast;
    const errors = errorsBySeries[i] ?? [];
    const pooled = pooledErrors(errors, H, calib.poolHalfWidth);
    const stepValues = (h: number): Float64Array => (pooled[h] ?? new Float64Array(0)).map((e) => e + (point[h] ?? NaN));
    const stepLevels = (h: number): Float64Array => empiricalLevels(pooled[h]?.length ?? 0);
    forecast.quantiles = job.quantileLevels.map((q) => point.map((_, h) => valueAtLevel(stepLevels(h), stepValues(h), q)));
    info.quantile_method = `conformal: signed errors of ${errors.length} in-context backtests, steps pooled ±${calib.poolHalfWidth}`;
    if (job.numSamples > 0) forecast.samples = samplePaths(stepLevels, stepValues, job.horizon, job.numSamples, job.seed + i * 7919);
    return forecast;
  });
}
