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
 *   not. Windows whose origins are close share most of their steps and are nearly one draw. c is
 *   widened by `originWidening` of the effective number of origins (`effectiveOrigins`: 1 for one
 *   origin or for windows at the same origin, 1.8 for three origins half a horizon apart), most for
 *   one, little for several (ADR 0027; ADR 0026 widened only a single origin, by 1.33, so two origins
 *   one step apart, a yearly series of 15-17 points, were not widened at all).
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
  /** Steps between backtest origins (default ceil(H/2)). */
  stride?: number;
}

export interface CalibrationResult {
  factor: number;
  /** Q(|z|) / 1.2816, before the one-origin widening and the [1/5, 5] clamp. */
  rawFactor: number;
  /** Backtest windows used (auto-arima on short series: refits and searches at each origin). */
  windows: number;
  /** Distinct backtest origins. */
  origins: number;
  /** Effective number of independent origins (`effectiveOrigins`). */
  effectiveOrigins: number;
  /** The factor's widening for that number (`originWidening`), before the clamp. */
  widening: number;
  errors: number;
}

const Z80 = 1.2815515655446004;
/** The interval the factor is matched to: the 80% central interval, |z| at its 0.8 quantile. */
const CAL_LEVEL = 0.8;
/**
 * Effective number of independent backtest origins: J^2 / sum over pairs of the share of the horizon
 * two windows have in common, max(0, 1 - |o_i - o_j| / H). Windows at the same origin (auto-arima's
 * refit and search) count once; two origins one step apart (a yearly series of 15 points, horizon 6:
 * n - H = 9 and the minimum 8) count 1.09; three origins half a horizon apart 1.8; origins a whole
 * horizon or more apart count one each. The window scales are modelled as log-normal with a
 * correlation that falls linearly with the distance between origins (0.5 half a horizon apart, the
 * ratio of the spreads measured on M3 in ADR 0026); J_eff is the number of independent windows
 * whose mean scale is as precise as these windows'.
 */
export function effectiveOrigins(origins: readonly number[], horizon: number): number {
  const distinct = [...new Set(origins)];
  if (distinct.length <= 1) return distinct.length;
  const h = Math.max(1, horizon);
  let shared = 0;
  for (const a of distinct) for (const b of distinct) shared += Math.max(0, 1 - Math.abs(a - b) / h);
  return (distinct.length * distinct.length) / shared;
}

/**
 * Excess widening for one effective origin: the factor is multiplied by 1 + ORIGIN_WIDENING / J_eff^2.
 * A factor from few windows misses the test window's scale by the spread of window scales, and
 * coverage, concave in the width, loses more from a too-narrow factor than it gains from a too-wide
 * one; the loss shrinks as windows are pooled. Under the log-normal model of `effectiveOrigins` a
 * simulation (bench/interval-widening-sim.ts) needs 1.12-1.16 for one origin and 1.08-1.09 for three
 * half a horizon apart when log window scales spread by 0.45; the three-origin series of M3 already
 * cover about 80%, so the curve falls faster than the model's. The constant and the power were fitted
 * on the fast models over all of M3 (one curve for every model and frequency: the 20 cells went from
 * 2.2 to 2.0 points RMS away from 80%) and checked on auto-ets, auto-arima and combo (every 10th
 * series; bench/results/m3-intervals-origins.md and -slow10.md; ADR 0027). It replaces ADR 0026's
 * 1.33 for a single distinct origin (from a spread of 0.64, which counted the sampling noise of a
 * window's RMS|z| as scale spread) and nothing for two or more, however close.
 */
export const ORIGIN_WIDENING = 0.1;

/** The widening of the factor for `jEff` effective backtest origins (1 + ORIGIN_WIDENING / jEff^2; none without an origin). */
export function originWidening(jEff: number): number {
  return jEff > 0 ? 1 + ORIGIN_WIDENING / (jEff * jEff) : 1;
}

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
  const stride = opts.stride ?? Math.max(1, Math.ceil(horizon / 2));
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

/** One backtest window: its origin and the |z| of its steps (NaN where not usable). */
export interface BacktestWindow {
  origin: number;
  z: number[];
}

/** One backtest forecast: its origin and what the model forecast from there. */
export interface BacktestForecast {
  origin: number;
  fc: GaussianForecast;
}

/**
 * The backtest forecasts: for each origin (calibrationOrigins), the model refitted to the points
 * before it and its forecast of what followed (the horizon, or fewer steps where the series ends).
 * Origins whose refit throws are left out.
 */
export function backtestForecasts(
  y: readonly number[],
  horizon: number,
  forecastAt: (train: number[], h: number) => GaussianForecast,
  opts: CalibrationOptions,
): BacktestForecast[] {
  const out: BacktestForecast[] = [];
  for (const o of calibrationOrigins(y.length, horizon, opts)) {
    try {
      out.push({ origin: o, fc: forecastAt(y.slice(0, o), Math.min(horizon, y.length - o)) });
    } catch {
      // a refit that fails is left out
    }
  }
  return out;
}

/**
 * The standardised errors |z| of backtest forecasts, one per step (NaN where the error or the sd
 * is not usable). Windows with no usable step are left out.
 */
export function windowsOf(y: readonly number[], forecasts: readonly BacktestForecast[]): BacktestWindow[] {
  const out: BacktestWindow[] = [];
  for (const { origin: o, fc } of forecasts) {
    const h = fc.mean.length;
    const z = new Array<number>(h).fill(Number.NaN);
    let any = false;
    for (let t = 0; t < h; t++) {
      const e = y[o + t]! - fc.mean[t]!;
      const sd = e >= 0 ? fc.sdHigh[t]! : fc.sdLow[t]!;
      if (!Number.isFinite(e) || !(sd > 0)) continue;
      z[t] = Math.abs(e / sd);
      any = true;
    }
    if (any) out.push({ origin: o, z });
  }
  return out;
}

/**
 * The backtests: for each origin (calibrationOrigins), the standardised errors |z| of the
 * forecast from that origin (`backtestForecasts`, `windowsOf`).
 */
export function backtestWindows(
  y: readonly number[],
  horizon: number,
  forecastAt: (train: number[], h: number) => GaussianForecast,
  opts: CalibrationOptions,
): BacktestWindow[] {
  return windowsOf(y, backtestForecasts(y, horizon, forecastAt, opts));
}

/** The |z| of `backtestWindows`, without their origins (bench/m3-intervals.ts). */
export function backtestZ(
  y: readonly number[],
  horizon: number,
  forecastAt: (train: number[], h: number) => GaussianForecast,
  opts: CalibrationOptions,
): number[][] {
  return backtestWindows(y, horizon, forecastAt, opts).map((w) => w.z);
}

/**
 * The factor from the backtests' |z| (see the module comment); null without a usable window.
 * `horizon` is the forecast's: with the windows' origins it gives the effective number of origins.
 */
export function factorFromWindows(windows: readonly BacktestWindow[], horizon: number): CalibrationResult | null {
  const z = windows.flatMap((w) => w.z).filter((v) => Number.isFinite(v));
  if (windows.length === 0 || z.length === 0) return null;
  z.sort((a, b) => a - b);
  const raw = conformalQuantile(z, CAL_LEVEL) / Z80;
  const origins = windows.map((w) => w.origin);
  const jEff = effectiveOrigins(origins, horizon);
  const widening = originWidening(jEff);
  return {
    factor: Math.min(5, Math.max(0.2, raw * widening)),
    rawFactor: raw,
    windows: windows.length,
    origins: new Set(origins).size,
    effectiveOrigins: jEff,
    widening,
    errors: z.length,
  };
}

export function calibrationFactor(
  y: readonly number[],
  horizon: number,
  forecastAt: (train: number[], h: number) => GaussianForecast,
  opts: CalibrationOptions,
): CalibrationResult | null {
  return factorFromWindows(backtestWindows(y, horizon, forecastAt, opts), horizon);
}

export function scaleForecast(fc: GaussianForecast, factor: number): GaussianForecast {
  return { ...fc, sdLow: fc.sdLow.map((s) => s * factor), sdHigh: fc.sdHigh.map((s) => s * factor) };
}
