/**
 * Prediction intervals for point-forecast models, from rolling-origin backtests on the series'
 * own history (locally scaled split conformal prediction).
 *
 * For one series with backtest windows j = 1..J (each: a forecast made from the history before an
 * origin, compared with what followed), with residuals e_j[t] = actual − forecast at step t:
 *   1. step scale s[t]: root mean square of e_·[t] over the windows, made non-decreasing in t
 *      (uncertainty does not shrink with the horizon) and floored at a tiny fraction of the series scale;
 *   2. standardised residuals z = e_j[t] / s[t], pooled over all windows and steps;
 *   3. the level-p quantile at step t is forecast[t] + s[t] · Q(z, p), where Q is the empirical
 *      quantile with the finite-sample conformal correction (rank ⌈(n+1)p⌉ above the median,
 *      ⌊(n+1)p⌋ below it).
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
  const scale = new Float64Array(horizon);
  let running = floor;
  let lastKnown = NaN;
  for (let t = 0; t < horizon; t++) {
    if (cnt[t]! > 0) lastKnown = Math.sqrt(sq[t]! / cnt[t]!);
    const v = Number.isFinite(lastKnown) ? lastKnown : floor;
    running = Math.max(running, v);
    scale[t] = running;
  }
  const pooled: number[] = [];
  const paths = backtests.map((b) => {
    const p = new Float64Array(horizon);
    for (let t = 0; t < horizon; t++) {
      const z = (b.actual[t]! - b.forecast[t]!) / scale[t]!;
      p[t] = Number.isFinite(z) ? z : NaN;
      if (Number.isFinite(z)) pooled.push(z);
    }
    return p;
  });
  const z = Float64Array.from(pooled).sort();
  return { scale, z, paths };
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
  return levels.map((p) => {
    const q = conformalQuantile(cal.z, p);
    const row = new Array<number>(forecast.length);
    for (let t = 0; t < forecast.length; t++) row[t] = forecast[t]! + cal.scale[t]! * q;
    return row;
  });
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
