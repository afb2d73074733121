import { mulberry32 } from './stats/prng.ts';

/**
 * Prediction intervals for point-forecast models, from rolling-origin backtests on the series'
 * own history (locally scaled split conformal prediction). The one calibration of the engine:
 * the TypeScript TinyTimeMixer (src/engine/neural/ttm/) and the ONNX driver's point-forecast
 * graphs (src/engine/onnx/driver.ts) both plan their backtests with `backtestOrigins` and turn
 * them into quantiles and samples with `conformalSpread`, so the same model gives the same
 * intervals on either runtime (test/engine/onnx-ttm-parity.test.ts; ADR 0018).
 *
 * For one series with backtest windows j = 1..J (each: a forecast made from the history before an
 * origin, compared with what followed), with residuals e_j[t] = actual − forecast at step t:
 *   1. step scale s[t]: root mean square of e_·[t] over the windows, made non-decreasing in t
 *      (uncertainty does not shrink with the horizon) and floored at a tiny fraction of the series scale;
 *   2. standardised residuals z = e_j[t] / s_{-j}[t], pooled over all windows and steps, where
 *      s_{-j} is the step scale without window j (with one window, its own);
 *      each window's residuals are standardised by the scale of the other windows (leave one out);
 *   3. the level-p quantile at step t is forecast[t] + s[t] · Q(z, p'), where Q is the empirical
 *      quantile with the finite-sample conformal correction (rank ⌈(n+1)p⌉ above the median,
 *      ⌊(n+1)p⌋ below it) and p' is p widened for the few independent windows (`widenedLevel`).
 * Sample paths are a block bootstrap of the standardised residual paths, so they keep the
 * autocorrelation of real errors, scaled by s[t] and added to the forecast.
 *
 * Caveats (documented in docs/models-neural.md): overlapping windows make the residuals dependent,
 * so the effective sample is smaller than J·h; with few windows the extreme levels are clamped to the
 * largest residual seen.
 */

export interface Backtest {
  /** Forecast for the window (h values). */
  forecast: ArrayLike<number>;
  /** What happened (h values, NaN where unobserved). */
  actual: ArrayLike<number>;
}

export interface Calibration {
  /** Per-step scale s[t]. */
  scale: Float64Array;
  /** Pooled standardised residuals, sorted ascending. */
  z: Float64Array;
  /** The standardised residual paths per window (NaN where unobserved), for sampling. */
  paths: Float64Array[];
}

export function calibrate(backtests: Backtest[], horizon: number, seriesScale: number): Calibration {
  const floor = Math.max(Math.abs(seriesScale) * 1e-6, 1e-12);
  const sq = new Float64Array(horizon);
  const cnt = new Float64Array(horizon);
  for (const b of backtests) {
    for (let t = 0; t < horizon; t++) {
      const e = b.actual[t]! - b.forecast[t]!;
      if (Number.isFinite(e)) {
        sq[t] = sq[t]! + e * e;
        cnt[t] = cnt[t]! + 1;
      }
    }
  }
  const scale = stepScale(sq, cnt, floor);
  // Each window's errors are standardised by the scale of the OTHER windows (leave one out): a
  // scale fitted to the same errors would shrink them (with J windows, |z| ≤ √J at every step) and
  // make the intervals too narrow when there are few windows. One window alone keeps its own scale.
  const loo = backtests.length >= 2;
  const pooled: number[] = [];
  const paths = backtests.map((b) => {
    let own = scale;
    if (loo) {
      const sqOut = new Float64Array(horizon);
      const cntOut = new Float64Array(horizon);
      for (let t = 0; t < horizon; t++) {
        const e = b.actual[t]! - b.forecast[t]!;
        const inside = Number.isFinite(e);
        sqOut[t] = sq[t]! - (inside ? e * e : 0);
        cntOut[t] = cnt[t]! - (inside ? 1 : 0);
      }
      own = stepScale(sqOut, cntOut, floor);
    }
    const p = new Float64Array(horizon);
    for (let t = 0; t < horizon; t++) {
      const z = (b.actual[t]! - b.forecast[t]!) / own[t]!;
      p[t] = Number.isFinite(z) ? z : NaN;
      if (Number.isFinite(z)) pooled.push(z);
    }
    return p;
  });
  const z = Float64Array.from(pooled).sort();
  return { scale, z, paths };
}

/** Per-step RMS of the errors (the last known one where a step has none), non-decreasing in the step, at least `floor`. */
function stepScale(sq: Float64Array, cnt: Float64Array, floor: number): Float64Array {
  const horizon = sq.length;
  const scale = new Float64Array(horizon);
  let running = floor;
  let lastKnown = NaN;
  for (let t = 0; t < horizon; t++) {
    if (cnt[t]! > 0) lastKnown = Math.sqrt(Math.max(0, sq[t]!) / cnt[t]!);
    const v = Number.isFinite(lastKnown) ? lastKnown : floor;
    running = Math.max(running, v);
    scale[t] = running;
  }
  return scale;
}

/** Conformal empirical quantile of the sorted standardised residuals (0 when there are none). */
export function conformalQuantile(z: Float64Array, p: number): number {
  const n = z.length;
  if (n === 0) return 0;
  let rank = p >= 0.5 ? Math.ceil((n + 1) * p) : Math.floor((n + 1) * p);
  if (p === 0.5) rank = Math.ceil(n / 2);
  rank = Math.min(n, Math.max(1, rank));
  return z[rank - 1]!;
}

/** Quantile rows (one per level) around a point forecast. Monotone in the level by construction. */
export function quantileRows(forecast: ArrayLike<number>, cal: Calibration, levels: readonly number[]): number[][] {
  const windows = cal.paths.length;
  return levels.map((p) => {
    const q = conformalQuantile(cal.z, widenedLevel(p, windows));
    const row = new Array<number>(forecast.length);
    for (let t = 0; t < forecast.length; t++) row[t] = forecast[t]! + cal.scale[t]! * q;
    return row;
  });
}

/**
 * The level whose standardised-residual quantile is used for level p with J backtest windows:
 * p moved away from the median by a factor 1 + 1/(2J) (J = 8: 0.9 → 0.925; J = 4: 0.95; J = 2: 1, the largest residual).
 * The pooled residuals are J·h numbers but only about J independent ones (the steps of a window
 * move together and the windows overlap), so their empirical quantiles understate the tails; the
 * factor was measured on M3 monthly, where it brings the 80% interval from 72% to 81-83% coverage
 * with 2 to 8 windows (bench/results/m3-ttm.md).
 */
export function widenedLevel(p: number, windows: number): number {
  if (windows < 1) return p;
  return Math.min(1, Math.max(0, 0.5 + (p - 0.5) * (1 + 1 / (2 * windows))));
}

/** Sample paths: forecast + s[t]·z, z from blocks of random backtest residual paths. */
export function samplePaths(forecast: ArrayLike<number>, cal: Calibration, count: number, rand: () => number): number[][] {
  const h = forecast.length;
  const block = Math.max(1, Math.ceil(h / 8));
  const out: number[][] = [];
  for (let s = 0; s < count; s++) {
    const path = new Array<number>(h);
    for (let t0 = 0; t0 < h; t0 += block) {
      const usable = cal.paths.length > 0;
      const src = usable ? cal.paths[Math.floor(rand() * cal.paths.length)]! : undefined;
      const shift = Math.floor(rand() * h);
      for (let t = t0; t < Math.min(h, t0 + block); t++) {
        let z = src ? src[(t + shift) % h]! : NaN;
        // A missing residual (unobserved actual) is replaced by a draw from the pooled residuals.
        if (!Number.isFinite(z)) z = cal.z.length > 0 ? cal.z[Math.floor(rand() * cal.z.length)]! : 0;
        path[t] = forecast[t]! + cal.scale[t]! * z;
      }
    }
    out.push(path);
  }
  return out;
}

/** Where a model's calibration backtests start. */
export interface BacktestPlan {
  /** Most backtest windows per series (each costs one more forecast in the batch). */
  maxWindows: number;
  /** Fewest windows needed before quantiles or samples are given (fewer: bad input). */
  minWindows: number;
  /** Fewest points of history before a backtest origin. */
  minContext: number;
  /** Points the model reads before an origin: a window whose last `lookback` points hold no observation is skipped. */
  lookback: number;
  /**
   * For a series shorter than `lookback` (a model that pads short contexts): fewest points of
   * history before an origin, in place of `minContext`.
   */
  shortMinContext?: number;
}

/**
 * TinyTimeMixer R2 on both runtimes: 8 windows, each with 256 points of history at least, of the
 * 512 the network reads; a series shorter than 512 points (padded) backtests from 8 points of history,
 * so that a 36-point series with horizon 18 still gets two windows (bench/results/m3-ttm.md).
 */
export const TTM_BACKTESTS: BacktestPlan = { maxWindows: 8, minWindows: 1, minContext: 256, lookback: 512, shortMinContext: 8 };

/** Oldest point a plan reads: the context a model needs to run all its backtests (the catalog's `context_length`). */
export function backtestContext(plan: BacktestPlan, modelContext: number, horizon: number): number {
  return modelContext + horizon + (plan.maxWindows - 1) * Math.ceil(horizon / 2);
}

/**
 * Backtest origins of one series, newest first: n − h, n − h − ⌈h/2⌉, … while at least
 * `minContext` points precede the origin and fewer than `maxWindows` were taken; an origin whose
 * last `lookback` points are all missing is skipped (the model would see no data).
 */
export function backtestOrigins(series: ArrayLike<number>, horizon: number, plan: BacktestPlan): number[] {
  const stride = Math.max(1, Math.ceil(horizon / 2));
  const origins: number[] = [];
  const minContext = plan.shortMinContext !== undefined && series.length < plan.lookback ? plan.shortMinContext : plan.minContext;
  for (let j = 0; j < plan.maxWindows; j++) {
    const origin = series.length - horizon - j * stride;
    if (origin < minContext) break;
    if (hasObserved(series, origin, plan.lookback)) origins.push(origin);
  }
  return origins;
}

function hasObserved(s: ArrayLike<number>, origin: number, lookback: number): boolean {
  for (let t = Math.max(0, origin - lookback); t < origin; t++) if (Number.isFinite(s[t]!)) return true;
  return false;
}

/** Mean absolute value of the observed points (1 without any): the floor of the per-step scale is relative to it. */
export function seriesScale(s: ArrayLike<number>): number {
  let sum = 0;
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const v = s[i]!;
    if (Number.isFinite(v)) {
      sum += Math.abs(v);
      n++;
    }
  }
  return n > 0 ? sum / n : 1;
}

/** One series' calibrated spread. */
export interface Spread {
  quantiles: number[][];
  samples?: number[][];
  /** Backtest windows the calibration used. */
  windows: number;
}

/**
 * The calibration step of a point-forecast model, the same on every runtime: for each series, the
 * backtests (`windowForecasts[k]` forecast from `windows[k].origin`, compared with what followed)
 * give the per-step scale and standardised residuals; quantiles are `quantileRows` around the point
 * forecast and samples `samplePaths`, drawn from one seeded stream over the series in order.
 */
export function conformalSpread(
  series: readonly ArrayLike<number>[],
  points: readonly ArrayLike<number>[],
  windows: readonly { series: number; origin: number }[],
  windowForecasts: readonly ArrayLike<number>[],
  horizon: number,
  quantileLevels: readonly number[],
  numSamples: number,
  seed: number,
): Spread[] {
  const backtests: Backtest[][] = series.map(() => []);
  windows.forEach((w, k) => {
    const s = series[w.series]!;
    const actual = Float64Array.from({ length: horizon }, (_, t) => (w.origin + t < s.length ? s[w.origin + t]! : Number.NaN));
    backtests[w.series]!.push({ forecast: windowForecasts[k]!, actual });
  });
  const rand = mulberry32(seed);
  return series.map((s, i) => {
    const point = points[i]!;
    const cal = calibrate(backtests[i]!, horizon, seriesScale(s));
    const spread: Spread = { quantiles: quantileRows(point, cal, quantileLevels), windows: backtests[i]!.length };
    if (numSamples > 0) spread.samples = samplePaths(point, cal, numSamples, rand);
    return spread;
  });
}
