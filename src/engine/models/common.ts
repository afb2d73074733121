import { EngineError } from '../types.ts';
import type { ForecastJob, ModelImpl, ModelInfo, SeriesForecast } from '../types.ts';
import {
  type BacktestForecast,
  backtestForecasts,
  type CalibrationOptions,
  calibrationOrigins,
  factorFromWindows,
  scaleForecast,
  windowsOf,
} from '../stats/calibrate.ts';
import { quantileRows, samplePaths, type GaussianForecast } from '../stats/distribution.ts';
import { fillMissing } from '../stats/prepare.ts';
import { seriesSeed } from '../stats/prng.ts';
import { detectSeasonLength } from '../stats/season.ts';
import { mixForecasts, naiveBacktests, naiveBlendApplies, naiveBlendWeight } from './naive-blend.ts';
import { seasonalNaiveForecast } from '../stats/random-walk.ts';
import { calibrates, detectedSeriesWorkMs, PRICED_DETECTED_SEASON, seriesWorkMs } from '../work.ts';

export interface FitContext {
  horizon: number;
  /** Season length to use (1 = non-seasonal), from the job or detected. */
  seasonLength: number;
}

/** A constant series forecast as that constant, with zero width (ETS and CES; their fits need a spread). */
export function constantForecast(y: readonly number[], horizon: number): GaussianForecast {
  const zero = new Array<number>(horizon).fill(0);
  return { mean: new Array<number>(horizon).fill(y[y.length - 1]!), sdLow: zero, sdHigh: zero.slice(), info: { model: 'constant' }, fitted: y.slice() };
}

/** Fits one clean series (no NaN, at least minPoints values) and forecasts it. */
export type SeriesFitter = (y: number[], ctx: FitContext) => GaussianForecast;

export type StatisticalInfo = Omit<
  ModelInfo,
  'available' | 'unavailableReason' | 'provider' | 'kind' | 'supportedTasks' | 'maxContextLength' | 'contextLength' | 'maxHorizon'
> &
  Partial<Pick<ModelInfo, 'contextLength' | 'maxContextLength' | 'maxHorizon'>>;

const COMMON_CAPABILITIES = ['quantiles', 'samples', 'missing_values', 'multivariate'];

export interface StatisticalOptions {
  /**
   * Blend the forecast with seasonal naive by their backtest errors on long series with a season of
   * 24 or more, forecast a season ahead or more (models/naive-blend.ts, ADR 0029). Every model but
   * the random-walk baselines.
   */
  naiveBlend?: boolean;
}

/**
 * Wraps a per-series fitter into a ModelImpl: missing values, season resolution, quantile rows
 * and seeded sample paths are handled here once, the same way for every statistical model.
 */
export function statisticalModel(info: StatisticalInfo, fit: SeriesFitter, options: StatisticalOptions = {}): ModelImpl {
  const full: ModelImpl['info'] = {
    provider: 'builtin',
    kind: 'statistical',
    supportedTasks: ['forecast'],
    contextLength: 2048,
    maxContextLength: 100_000,
    maxHorizon: null,
    ...info,
    capabilities: [...new Set([...COMMON_CAPABILITIES, ...info.capabilities])],
  };
  return {
    info: full,
    forecast(job: ForecastJob): SeriesForecast[] {
      // Seasons to detect are detected first when the job carries its priced work: a season that
      // makes the job costlier than it was priced is refused before any fit (work.ts).
      const detected = job.seasonLength === null && job.workBudgetMs !== undefined ? detectedWithinBudget(full, job) : null;
      return job.series.map((raw, i) => forecastOne(full, fit, options, job, raw, i, detected?.[i]));
    },
  };
}

/**
 * The season of every series of a job that detects them, checked against the work the job was
 * priced for (`workBudgetMs`, planned with seasons up to PRICED_DETECTED_SEASON): a series whose
 * detected season makes the job's estimated work pass it is refused (bad_input, 422 naming its
 * input) before anything is fitted, instead of running work nobody paid for.
 */
function detectedWithinBudget(info: ModelImpl['info'], job: ForecastJob): number[] {
  const calibrated = calibrates(job);
  const seasons: number[] = [];
  let total = 0;
  let worst = { i: -1, over: 0 };
  for (const [i, raw] of job.series.entries()) {
    const { y } = fillMissing(raw, info.minPoints, i);
    const m = Math.max(1, Math.round(detectSeasonLength(y)));
    seasons.push(m);
    const work = detectedSeriesWorkMs(info.id, raw.length, m, calibrated);
    total += work;
    const over = work - seriesWorkMs(info.id, { points: raw.length, seasonLength: null, calibrated });
    if (over > worst.over) worst = { i, over };
  }
  // A relative tolerance: the budget is the same sum, computed on the planning side.
  const budget = job.workBudgetMs as number;
  if (total > budget * (1 + 1e-9) && worst.i >= 0) {
    throw new EngineError(
      'bad_input',
      `series ${worst.i}: its detected season of ${seasons[worst.i]} steps makes this ${info.id} job about ${(total / 1000).toFixed(1)} s of model work, more than the ` +
        `${(budget / 1000).toFixed(1)} s it was priced for (a season of at most ${PRICED_DETECTED_SEASON} is assumed when no frequency is sent): ` +
        'send parameters.frequency so that the season is priced, or a shorter context_length',
      worst.i,
    );
  }
  return seasons;
}

function forecastOne(
  info: ModelImpl['info'],
  fit: SeriesFitter,
  options: StatisticalOptions,
  job: ForecastJob,
  raw: number[],
  i: number,
  detectedSeason?: number,
): SeriesForecast {
  const { y, missing } = fillMissing(raw, info.minPoints, i);
  const detected = job.seasonLength === null;
  const seasonLength = Math.max(1, Math.round(job.seasonLength ?? detectedSeason ?? detectSeasonLength(y)));
  let fc: GaussianForecast;
  try {
    fc = fit(y, { horizon: job.horizon, seasonLength });
    // Calibration rescales the standard deviations: a job that asks for no quantile and no sample
    // (imputation's fits) skips its backtest refits, unless the seasonal-naive blend, which moves
    // the mean, applies (the same inputs always get the same mean).
    const opts = calibrationOptions(info.minPoints, seasonLength);
    const blend = options.naiveBlend === true && naiveBlendApplies(y.length, seasonLength, job.horizon, oldestOrigin(y.length, job.horizon, opts));
    if (job.quantileLevels.length > 0 || job.numSamples > 0 || blend) fc = calibrated(y, fc, fit, job.horizon, seasonLength, opts, blend);
  } catch (err) {
    if (err instanceof EngineError) throw err;
    throw new EngineError('failed', `${info.id} failed on series ${i}: ${err instanceof Error ? err.message : String(err)}`, i);
  }
  if (fc.mean.length !== job.horizon || fc.mean.some((v) => !Number.isFinite(v))) {
    throw new EngineError('failed', `${info.id} produced no finite forecast for series ${i}`, i);
  }
  // A series that never goes below zero is forecast never below zero (counts, sales, loads): a
  // negative value is then always further from any possible outcome than zero is.
  const floor = y.every((v) => v >= 0) ? (v: number): number => Math.max(0, v) : (v: number): number => v;
  const out: SeriesForecast = {
    mean: fc.mean.map(floor),
    quantiles: quantileRows(fc, job.quantileLevels).map((row) => row.map(floor)),
    info: { seasonLength, seasonDetected: detected, missingFilled: missing, pointsUsed: y.length, ...fc.info },
  };
  if (job.fitted) {
    // fillMissing drops leading missing values: the fitted values are aligned to the raw series.
    const lead = new Array<number>(raw.length - y.length).fill(Number.NaN);
    out.fitted = [...lead, ...(fc.fitted ?? new Array<number>(y.length).fill(Number.NaN))];
  }
  if (job.numSamples > 0) out.samples = samplePaths(fc, job.numSamples, seriesSeed(job.seed, i)).map((row) => row.map(floor));
  return out;
}

/**
 * Backtest windows used to calibrate every statistical model's intervals (stats/calibrate.ts),
 * whatever the series' length. Long series used to get one window (each refit then repeated the
 * model search: auto-arima on 1,000 hourly points cost about 5 s of CPU per refit); refits of the
 * chosen model are cheap, and on 28 ETT hourly cases (bench/ett-hourly.ts --origins 2) one
 * window's factor left 80% intervals covering 73-79% (theta, naive, auto-ets, mstl, auto-arima), three
 * 79-86% (bench/results/ett-hourly.md).
 */
export const CALIBRATION_WINDOWS = 3;

/** Shortest training series of a backtest window: the model's minimum, 8, and two seasons and two points. */
export function calibrationMinTrain(minPoints: number, seasonLength: number): number {
  return Math.max(minPoints, 8, seasonLength > 1 ? 2 * seasonLength + 2 : 0);
}

/**
 * The backtest plan of every statistical model: CALIBRATION_WINDOWS origins with the history of
 * `calibrationMinTrain`; a series too short for a window over the whole horizon with that history
 * gets one at n - H from the model's minimum and 8 points (a quarterly series of 16 points, horizon
 * 8: one window of 8 points forecasting 8, not one of 10 forecasting 6; stats/calibrate.ts).
 */
export function calibrationOptions(minPoints: number, seasonLength: number): CalibrationOptions {
  return { windows: CALIBRATION_WINDOWS, minTrain: calibrationMinTrain(minPoints, seasonLength), minTrainNewest: Math.max(minPoints, 8) };
}

function oldestOrigin(n: number, horizon: number, opts: CalibrationOptions): number | null {
  const origins = calibrationOrigins(n, horizon, opts);
  return origins.length > 0 ? Math.min(...origins) : null;
}

function calibrated(
  y: number[],
  fc: GaussianForecast,
  fit: SeriesFitter,
  horizon: number,
  seasonLength: number,
  opts: CalibrationOptions,
  blend: boolean,
): GaussianForecast {
  // A model that chose its specification by a search (ETS form, ARIMA orders) refits that
  // specification only (`fc.refit`): the backtests measure the chosen model's errors at a
  // fraction of the search's cost (auto-arima on 1,000 hourly points: one CSS-ML fit instead of
  // dozens). Models without a search are refitted in full.
  const refit = fc.refit ?? ((train: number[], h: number) => fit(train, { horizon: h, seasonLength }));
  // With `research` (the search again, where cheap) the factor comes from its backtests, at the same
  // origins (ADR 0036): they replay the whole procedure, choice included; the refits' errors are
  // those of a model chosen with the backtest windows in view. The refits still set the blend weight.
  let own = backtestForecasts(y, horizon, refit, opts);
  let again = fc.research ? backtestForecasts(y, horizon, fc.research, opts) : [];
  let info: Record<string, unknown> = fc.info;
  if (blend) {
    // The seasonal-naive blend (naive-blend.ts): the weight from the refits' errors, then the
    // forecast and every backtest forecast blended alike, so the factor calibrates the blend.
    const naiveOwn = naiveBacktests(y, own, seasonLength);
    const w = naiveBlendWeight(y, own, naiveOwn);
    if (w) {
      const mix = (bt: readonly BacktestForecast[], naive: readonly BacktestForecast[]): BacktestForecast[] =>
        bt.map((b, k) => ({ origin: b.origin, fc: mixForecasts(b.fc, naive[k]!.fc, w.weight) }));
      own = mix(own, naiveOwn);
      again = mix(again, naiveBacktests(y, again, seasonLength));
      fc = mixForecasts(fc, seasonalNaiveForecast(y, { horizon, seasonLength }), w.weight);
      const r = (v: number): number => Number(v.toPrecision(6));
      info = { ...info, naiveBlend: { weight: r(w.weight), modelMae: r(w.modelMae), naiveMae: r(w.naiveMae), windows: w.windows } };
    }
  }
  const replayed = windowsOf(y, again);
  const cal = factorFromWindows(replayed.length > 0 ? replayed : windowsOf(y, own), horizon);
  if (!cal) return { ...fc, info: { ...info, calibration: 'none: series too short for a backtest window' } };
  const out = scaleForecast(fc, cal.factor);
  return {
    ...out,
    info: {
      ...info,
      calibration: {
        factor: cal.factor,
        rawFactor: cal.rawFactor,
        windows: cal.windows,
        origins: cal.origins,
        effectiveOrigins: Math.round(cal.effectiveOrigins * 100) / 100,
        errors: cal.errors,
        backtests: replayed.length > 0 ? 'search-again' : 'refit',
      },
    },
  };
}
