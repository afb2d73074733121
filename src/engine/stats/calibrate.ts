import type { GaussianForecast } from './distribution.ts';

/**
 * Interval calibration for the statistical models on the series' own backtests.
 *
 * A model's analytic intervals assume the model is right; on real data they are often too narrow
 * (theta, ARIMA: the model's uncertainty about itself is left out) or far too wide (multiplicative
 * error ETS, whose variance grows geometrically). For one series the model is refitted at up to
 * `windows` earlier origins (n - H, n - H - ceil(H/2), ...) and forecasts what followed. Each error
 * is standardised by that forecast's own standard deviation at that step (z = error / sd, the lower
 * or upper sd by the error's sign). If the model's intervals were right, |z| would be half-normal
 * and its 80% quantile 1.2816; the factor c = Q(|z|) / 1.2816 says how much wider (c > 1) or
 * narrower the intervals must be. Every standard deviation of the forecast is multiplied by c, so
 * every quantile level and the sample paths move together. c is kept within [1/5, 5] and not
 * shrunk toward 1 (analytic intervals are too narrow far more often than too wide).
 *
 * Q is the split-conformal quantile (`conformalQuantile`): rank r = 0.8 (N + 1) among the N pooled
 * |z|. A new |z| exchangeable with the N falls below the k-th smallest with probability k / (N + 1),
 * so below Q with a probability between floor(r) / (N + 1) and ceil(r) / (N + 1), about 0.8 for any
 * N. The type-7 quantile used before (rank 1 + p (N - 1), at p = 0.85 to make up for few windows)
 * covers (1 + 0.85 (N - 1)) / (N + 1) on average: 75% for N = 6 (one yearly window) but 84% for
 * N = 54 (three monthly windows), the pattern M3 showed (monthly over, yearly under).
 *
 * Two things the rank cannot see (ADR 0026):
 * - A window that scores only the first steps of the horizon says nothing of the later ones, where
 *   errors grow fastest: every window scores the whole horizon. When the seasonal minimum history
 *   (`minTrain`) leaves no such window, the newest origin n - H may go down to `minTrainNewest`.
 * - The |z| of one window are one draw of that window's error scale (its steps move together), and
 *   windows differ: pooled over several windows the |z| carry that spread, from one window they do
 *   not. With backtests from a single origin c is widened by ONE_ORIGIN_WIDENING.
 * Series too short for one backtest window are left as they are (`info.calibration` says so).
 */
export interface CalibrationOptions {
  windows: number;
  /** Fewest points before a backtest origin. */
  minTrain: number;
  /**
   * Fewest points before the newest origin n - H when `minTrain` leaves no window that scores the
   * whole horizon (at most `minTrain`; default `minTrain`).
   */
  minTrainNewest?: number;
}

export interface CalibrationResult {
  factor: number;
  /** Q(|z|) / 1.2816, before the one-origin widening and the [1/5, 5] clamp. */
  rawFactor: number;
  /** Backtest windows used (auto-arima on short series: refits and searches at each origin). */
  windows: number;
  /** Distinct backtest origins. */
  origins: number;
  errors: number;
}

const Z80 = 1.2815515655446004;
/** The interval the factor is matched to: the 80% central interval, |z| at its 0.8 quantile. */
const CAL_LEVEL = 0.8;
/**
 * Widening of the factor when all backtests come from one origin. A window's error scale varies
 * from window to window around the series' own. On every 10th M3 series with three full windows,
 * the standard deviation of log RMS|z| between a series' windows is 0.41-0.58 by model (0.45 for
 * naive and theta); those windows are half a horizon apart and share half their steps, so between
 * windows that share none (a backtest window and the future) it is about 0.45 / sqrt(1 - 0.5) = 0.64.
 * A factor taken from one window then misses the test window's scale by a log-normal error of sd
 * sqrt(2) * 0.64 = 0.9 (that window's deviation and the test window's): an interval at the factor
 * itself covers 73% on average, and 80% needs 1.33 times it. From two origins on, the pooled |z|
 * mix the windows' scales themselves (bench/results/m3-intervals.md: 80% coverage by number of
 * origins).
 */
export const ONE_ORIGIN_WIDENING = 1.33;

/**
 * Split-conformal quantile of ascending values: rank p (N + 1), interpolated between neighbours
 * (Hyndman and Fan's type 6); above the largest value, the largest; below the smallest, the smallest.
 */
export function conformalQuantile(sorted: readonly number[], p: number): number {
  const n = sorted.length;
  const r = p * (n + 1);
  if (r >= n) return sorted[n - 1]!;
  if (r <= 1) return sorted[0]!;
  const lo = Math.floor(r);
  return sorted[lo - 1]! + (r - lo) * (sorted[lo]! - sorted[lo - 1]!);
}

/**
 * Backtest origins, newest first, each leaving at least one step to score: n - H - k ceil(H/2)
 * (k = 0, 1, ...) not below `minTrain`. When n - H is below `minTrain` but not below
 * `minTrainNewest`, the one origin n - H (a window scoring the whole horizon); when it is below
 * both, one window at `minTrain` scoring what follows it.
 */
export function calibrationOrigins(n: number, horizon: number, opts: CalibrationOptions): number[] {
  const stride = Math.max(1, Math.ceil(horizon / 2));
  const newest = n - horizon;
  if (newest < opts.minTrain && newest >= Math.min(opts.minTrain, opts.minTrainNewest ?? opts.minTrain) && newest > 0) return [newest];
  const out: number[] = [];
  for (let k = 0; k < opts.windows; k++) {
    const o = Math.max(opts.minTrain, n - horizon - k * stride);
    if (o >= n || out.includes(o)) break;
    out.push(o);
  }
  return out;
}

/**
 * The backtests: for each origin (calibrationOrigins), the standardised errors |z| of the
 * forecast from that origin, one per step (NaN where the error or the sd is not usable).
 * Windows whose refit throws, or with no usable step, are left out.
 */
export function backtestZ(
  y: readonly number[],
  horizon: number,
  forecastAt: (train: number[], h: number) => GaussianForecast,
  opts: CalibrationOptions,
): number[][] {
  const out: number[][] = [];
  for (const o of calibrationOrigins(y.length, horizon, opts)) {
    const h = Math.min(horizon, y.length - o);
    let fc: GaussianForecast;
    try {
      fc = forecastAt(y.slice(0, o), h);
    } catch {
      continue;
    }
    const z = new Array<number>(h).fill(Number.NaN);
    let any = false;
    for (let t = 0; t < h; t++) {
      const e = y[o + t]! - fc.mean[t]!;
      const sd = e >= 0 ? fc.sdHigh[t]! : fc.sdLow[t]!;
      if (!Number.isFinite(e) || !(sd > 0)) continue;
      z[t] = Math.abs(e / sd);
      any = true;
    }
    if (any) out.push(z);
  }
  return out;
}

/**
 * The factor from the backtests' |z| (see the module comment); null without a usable window.
 * `origins`: distinct origins among the windows (default: one per window).
 */
export function factorFromZ(windows: readonly (readonly number[])[], origins = windows.length): CalibrationResult | null {
  const z = windows.flat().filter((v) => Number.isFinite(v));
  if (windows.length === 0 || z.length === 0) return null;
  z.sort((a, b) => a - b);
  const raw = conformalQuantile(z, CAL_LEVEL) / Z80;
  const widened = origins <= 1 ? raw * ONE_ORIGIN_WIDENING : raw;
  return { factor: Math.min(5, Math.max(0.2, widened)), rawFactor: raw, windows: windows.length, origins, errors: z.length };
}

export function calibrationFactor(
  y: readonly number[],
  horizon: number,
  forecastAt: (train: number[], h: number) => GaussianForecast,
  opts: CalibrationOptions,
): CalibrationResult | null {
  return factorFromZ(backtestZ(y, horizon, forecastAt, opts));
}

export function scaleForecast(fc: GaussianForecast, factor: number): GaussianForecast {
  return { ...fc, sdLow: fc.sdLow.map((s) => s * factor), sdHigh: fc.sdHigh.map((s) => s * factor) };
}
