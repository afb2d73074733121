import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { EngineError } from '../../types.ts';
import type { ForecastJob, ModelEnv, ModelFiles, ModelImpl, SeriesForecast } from '../../types.ts';
import { backtestContext, backtestOrigins, conformalSpread, TTM_BACKTESTS } from '../../conformal.ts';
import { readSafetensors } from '../safetensors.ts';
import { createJsRuntime } from './forward.ts';
import type { TtmRuntime } from './forward.ts';
import { paddingOf, predict } from './predict.ts';
import { detectSeasonLength } from '../../stats/season.ts';
import { createWasmRuntime } from './wasm.ts';
import { loadTtmWeights, TTM_CONTEXT, TTM_HORIZON } from './weights.ts';

export const TTM_R2_ID = 'ibm-granite/granite-timeseries-ttm-r2';

export const TTM_R2_FILES: ModelFiles = {
  repo: TTM_R2_ID,
  revision: 'main',
  files: [
    { path: 'model.safetensors', sha256: 'a706726a7eb01bbcb42994b7dcb3c06ea9557898dbae8d480eb04fe8ccb89710', size: 3_240_592 },
    { path: 'config.json', sha256: '717a757febfb7191c464d6240c6db3f36ef7c24990e2b86e1ff5794477a8f770', size: 1_622 },
  ],
};

/**
 * Fewest points a series needs (the catalog's `min_points`). Shorter than the 512-point context, a
 * series is padded at the front (its oldest season repeated, masked from the scaler: predict.ts); on M3 monthly
 * padded TTM beats seasonal-naive down to 36 points of history (bench/results/m3-ttm.md).
 */
export const TTM_MIN_POINTS = 36;

/** Longest horizon: two model windows rolled out (the model card advises against rolling further). */
export const TTM_MAX_HORIZON = 2 * TTM_HORIZON;

let cached: { file: string; runtime: TtmRuntime } | null = null;

/** Loads (once per worker) and checks the weights, then builds the fastest runtime available. */
export function loadTtmRuntime(modelsDir: string): TtmRuntime {
  const weightsFile = path.join(modelsDir, TTM_R2_FILES.repo, 'model.safetensors');
  if (cached?.file === weightsFile) return cached.runtime;
  let bytes: Buffer;
  try {
    bytes = readFileSync(weightsFile);
  } catch {
    throw new EngineError('unavailable', `${TTM_R2_ID} weights are not downloaded: run \`npm run models -- pull ${TTM_R2_ID}\``);
  }
  const pinned = TTM_R2_FILES.files[0]!.sha256;
  const actual = createHash('sha256').update(bytes).digest('hex');
  if (actual !== pinned) {
    throw new EngineError('unavailable', `${weightsFile} does not match its pinned sha256: run \`npm run models -- pull ${TTM_R2_ID}\``);
  }
  const weights = loadTtmWeights(readSafetensors(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength)));
  const runtime = createWasmRuntime(weights) ?? createJsRuntime(weights);
  cached = { file: weightsFile, runtime };
  return runtime;
}

export const ttmR2: ModelImpl = {
  info: {
    id: TTM_R2_ID,
    name: 'Granite TimeSeries TTM R2 (512 → 96)',
    provider: 'ibm-granite',
    family: 'TinyTimeMixer',
    kind: 'neural',
    description:
      'IBM Granite TinyTimeMixer R2, a pretrained 805K-parameter MLP-mixer forecaster for minutely to hourly data: ' +
      'looks at the last 512 points, forecasts 96 (up to 192 by rolling out). Series of 36 to 511 points are padded at the front ' +
      '(their oldest season repeated backwards, masked from the scaler; less accurate than a full context, see the model info `padded`). ' +
      'Point forecasts; quantiles and samples come from conformal calibration on backtests over the series history.',
    license: 'Apache-2.0',
    supportedTasks: ['forecast'],
    minPoints: TTM_MIN_POINTS,
    paddedBelow: TTM_CONTEXT,
    // The network reads 512 points; older ones feed the calibration backtests (src/engine/conformal.ts).
    contextLength: backtestContext(TTM_BACKTESTS, TTM_CONTEXT, TTM_HORIZON),
    maxContextLength: 8192,
    maxHorizon: TTM_MAX_HORIZON,
    capabilities: ['quantiles', 'samples', 'missing_values', 'multivariate'],
    quantileMethod: 'conformal',
  },
  files: TTM_R2_FILES,
  forecast: (job: ForecastJob, env: ModelEnv) => forecastTtm(job, env),
};

export function forecastTtm(job: ForecastJob, env: ModelEnv, runtime?: TtmRuntime): SeriesForecast[] {
  const h = job.horizon;
  if (!Number.isInteger(h) || h < 1) throw new EngineError('bad_input', 'horizon must be a positive integer');
  if (h > TTM_MAX_HORIZON) {
    throw new EngineError(
      'bad_input',
      `${TTM_R2_ID} forecasts at most ${TTM_MAX_HORIZON} steps (its 96-step window rolled out once); got ${h}`,
      undefined,
      'horizon',
    );
  }
  job.series.forEach((s, i) => {
    let observed = 0;
    for (let t = 0; t < s.length; t++) if (Number.isFinite(s[t]!)) observed++;
    if (observed < TTM_MIN_POINTS) {
      throw new EngineError('bad_input', `series ${i} has ${observed} observed points; ${TTM_R2_ID} needs at least min_points=${TTM_MIN_POINTS}`, i);
    }
    let inWindow = 0;
    for (let t = Math.max(0, s.length - TTM_CONTEXT); t < s.length; t++) if (Number.isFinite(s[t]!)) inWindow++;
    if (inWindow === 0) {
      throw new EngineError('bad_input', `series ${i} has no observed value in its last ${TTM_CONTEXT} points`, i);
    }
  });
  const rt = runtime ?? loadTtmRuntime(env.modelsDir);
  return ttmForecasts(job, (contexts, horizon, seasons) => predict(rt, contexts, horizon, seasons), rt.kind);
}

/**
 * Point forecasts of `horizon` steps for each context (the network, rolled out); `seasons[k]` is the
 * season length used to pad context k when it is shorter than 512 points.
 */
export type TtmPredictor = (contexts: ArrayLike<number>[], horizon: number, seasons: number[]) => Float64Array[];

/**
 * Season length for padding a series: the request's (from `frequency`), else detected on its
 * observed points; only needed when some context of the series (its own or a backtest's) is
 * shorter than 512 points.
 */
export function paddingSeason(s: readonly number[], given: number | null, horizon: number): number {
  if (s.length >= backtestContext(TTM_BACKTESTS, TTM_CONTEXT, horizon)) return 1;
  if (given !== null) return Math.max(1, Math.round(given));
  const observed = s.slice(Math.max(0, s.length - TTM_CONTEXT)).filter(Number.isFinite);
  return Math.max(1, detectSeasonLength(observed));
}

/**
 * Forecasts, quantiles and samples of a checked job from a predictor: the network on this
 * runtime, or (in the parity test) a stand-in for the ONNX graph, so both runtimes' calibration
 * can be compared on the same point forecasts.
 */
export function ttmForecasts(job: ForecastJob, predictor: TtmPredictor, runtimeKind: string): SeriesForecast[] {
  const h = job.horizon;
  // One batch: every series' forecast, then every backtest window of every series (the shared
  // calibration plans them and turns them into quantiles and samples, as the ONNX driver does).
  const contexts: ArrayLike<number>[] = [...job.series];
  const seasonOf = job.series.map((s) => paddingSeason(s, job.seasonLength, h));
  const seasons = [...seasonOf];
  const windows: { series: number; origin: number }[] = [];
  const wantSpread = job.quantileLevels.length > 0 || job.numSamples > 0;
  job.series.forEach((s, i) => {
    const origins = backtestOrigins(s, h, TTM_BACKTESTS);
    if (wantSpread && origins.length < TTM_BACKTESTS.minWindows) {
      const least = h + (s.length < TTM_CONTEXT ? (TTM_BACKTESTS.shortMinContext ?? TTM_BACKTESTS.minContext) : TTM_BACKTESTS.minContext);
      throw new EngineError(
        'bad_input',
        `series ${i}: quantiles and samples from ${TTM_R2_ID} need a backtest window with observed history (at least ${least} points for ${h} steps; ` +
          `the series has ${s.length}): send a shorter prediction_length, or no quantile_levels and num_samples`,
        i,
      );
    }
    for (const origin of origins) {
      windows.push({ series: i, origin });
      contexts.push(s.slice(0, origin));
      seasons.push(seasonOf[i]!);
    }
  });
  const preds = predictor(contexts, h, seasons);
  const means = preds.slice(0, job.series.length);
  const spreads = conformalSpread(job.series, means, windows, preds.slice(job.series.length), h, job.quantileLevels, job.numSamples, job.seed);
  return job.series.map((s, i) => {
    const spread = spreads[i]!;
    const window = s.slice(Math.max(0, s.length - TTM_CONTEXT));
    const pad = paddingOf(s.length, seasonOf[i]);
    const result: SeriesForecast = {
      mean: Array.from(means[i]!),
      quantiles: spread.quantiles,
      info: {
        contextUsed: window.length,
        imputedPoints: window.filter((v) => !Number.isFinite(v)).length,
        ...(pad.padded > 0
          ? {
              padded: pad.padded,
              padding: pad.padding,
              ...(pad.padding === 'oldest_season' ? { paddingSeasonLength: seasonOf[i] } : {}),
              warning:
                `context padded: ${window.length} of ${TTM_CONTEXT} points are real, the other ${pad.padded} repeat its oldest ` +
                (pad.padding === 'oldest_season' ? `season (${seasonOf[i]} points)` : 'value') +
                ' and are masked from the scaler; expect lower accuracy than with a full context (docs/models-neural.md)',
            }
          : {}),
        rolledOut: h > TTM_HORIZON,
        calibration: 'conformal',
        backtestWindows: spread.windows,
        runtime: runtimeKind,
      },
    };
    if (spread.samples) result.samples = spread.samples;
    return result;
  });
}
