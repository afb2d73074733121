/**
 * The work a job causes, estimated before it runs (ADR 0039): milliseconds of one core of the
 * reference machine (bench/results/work-price.md), for the worst data of the shape the caller sent,
 * since the caller chooses the data. The forecasting service prices input tokens by it and refuses
 * at planning a job estimated past the engine's budget; a statistical model refuses, before fitting,
 * a job whose detected season makes it costlier than it was priced (`checkWorkBudget`). One formula
 * for both, so the price and the bound cannot drift apart.
 *
 * Per series: `fixed + perPoint × points`, where both may depend on the season length the model
 * searches with; a model whose cost does not grow with the data (the random walks) costs nothing
 * here and is priced by its tokens alone.
 */

/** Season length assumed when pricing a job whose season will be detected (no frequency sent): a day of hours. */
export const PRICED_DETECTED_SEASON = 24;

/** Season detection (stats/season.ts: an ACF up to lag 400 and a periodogram) when no frequency is sent, per point. */
const DETECT_MS_PER_POINT = 0.01;

/**
 * A job without quantiles, samples or the seasonal-naive blend skips the calibration's backtest
 * refits (models/common.ts): measured at 0.4–0.75 of the calibrated cost; the upper end is kept.
 */
const UNCALIBRATED = 0.75;

/** The blend of models/naive-blend.ts applies from a season (and horizon) of 24 on: priced as calibrated then. */
const BLEND_HORIZON = 24;

export interface WorkShape {
  /** Steps of the series the model reads (after the context cut). */
  points: number;
  /** The season length of the job (from the frequency), or null when the model detects it. */
  seasonLength: number | null;
  /** Whether the job calibrates its intervals (quantiles, samples, or a horizon the blend may apply to). */
  calibrated: boolean;
}

type Cost = (points: number, season: number) => number;

/** Largest season the detector can report on `points` points (stats/season.ts: lags up to (n − 1)/2 − 2, at most 400). */
export function detectableSeason(points: number): number {
  return Math.max(1, Math.min(Math.floor((points - 1) / 2) - 2, 400));
}

/**
 * AutoETS (models/ets.ts): every form fitted by Nelder–Mead over the smoothing parameters and the
 * initial states, m − 1 of them seasonal, so the iterations grow with the season and each costs
 * O(points · m); seasonal forms only for 2 ≤ m ≤ 24 and more than m points (R's ets).
 */
const ets: Cost = (n, m) => (m >= 2 && m <= 24 && n > m ? 10 * m * m + (0.12 + 0.013 * m) * n : 100 + 0.08 * n);

/**
 * AutoARIMA (models/arima.ts): the Kalman filter of a seasonal model carries a state of about
 * (P + D) · m, P ≤ min(2, n / 3m); each likelihood costs O(points · state²) and the stepwise search
 * fits up to 94 of them. Measured (bench/results/work-price.md) the time per point follows state^1.5
 * (the larger models fail early); seasonal parts only when the series holds more than two seasons.
 */
const arima: Cost = (n, m) => {
  const state = m > 1 && n > 2 * m ? (Math.min(2, Math.floor(n / (3 * m))) + 1) * m : 0;
  return 600 + (0.07 + 0.0025 * state ** 1.5) * n;
};

const theta: Cost = (n) => 20 + 0.02 * n;
const ces: Cost = (n, m) => (m > 1 && n >= 2 * m ? 300 + 0.45 * n : 100 + 0.1 * n);
const mstl: Cost = (n) => 200 + 0.14 * n;

/** The built-in statistical models' costs; a model not listed (the random walks, neural models) is priced by its tokens. */
const COSTS: Readonly<Record<string, Cost>> = {
  'auto-ets': ets,
  'auto-arima': arima,
  theta,
  ces,
  mstl,
  // combo fits its three members on every series (models/combo.ts).
  combo: (n, m) => ets(n, m) + arima(n, m) + theta(n, m),
};

/** Whether `model`'s cost depends on the data's shape (else its work is 0 and tokens price it). */
export const hasWorkEstimate = (model: string): boolean => COSTS[model] !== undefined;

/**
 * Estimated milliseconds of one series of a job. A season to detect is priced as the costliest of
 * the seasons up to PRICED_DETECTED_SEASON (and the largest the detector can report on so few
 * points), plus the detection: a detected season up to it never costs more than was priced.
 */
export function seriesWorkMs(model: string, shape: WorkShape): number {
  const cost = COSTS[model];
  if (!cost) return 0;
  const scale = shape.calibrated ? 1 : UNCALIBRATED;
  if (shape.seasonLength !== null) return scale * cost(shape.points, Math.max(1, Math.round(shape.seasonLength)));
  let worst = 0;
  for (let m = 1; m <= Math.min(PRICED_DETECTED_SEASON, detectableSeason(shape.points)); m++) worst = Math.max(worst, cost(shape.points, m));
  return scale * worst + DETECT_MS_PER_POINT * shape.points;
}

/** The same for a series whose season was detected as `detected`: what the job really costs. */
export function detectedSeriesWorkMs(model: string, points: number, detected: number, calibrated: boolean): number {
  return seriesWorkMs(model, { points, seasonLength: detected, calibrated }) + (COSTS[model] ? DETECT_MS_PER_POINT * points : 0);
}

/** Whether a job calibrates its intervals, as models/common.ts decides (the blend conservatively: by the horizon alone). */
export function calibrates(job: { quantileLevels: readonly number[]; numSamples: number; horizon: number }): boolean {
  return job.quantileLevels.length > 0 || job.numSamples > 0 || job.horizon >= BLEND_HORIZON;
}

/** Estimated milliseconds of a whole job: its series are fitted one after the other on one worker. */
export function jobWorkMs(job: {
  model: string;
  series: readonly { length: number }[];
  seasonLength: number | null;
  quantileLevels: readonly number[];
  numSamples: number;
  horizon: number;
}): number {
  const calibrated = calibrates(job);
  let total = 0;
  for (const s of job.series) total += seriesWorkMs(job.model, { points: s.length, seasonLength: job.seasonLength, calibrated });
  return total;
}
