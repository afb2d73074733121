/**
 * Quantiles for point-forecast graphs (TinyTimeMixer) by split-conformal calibration on
 * backtests inside the series' own history: the graph forecasts from earlier origins, the
 * signed errors against what followed are pooled per step, and a requested level q becomes
 * the point forecast plus the q-quantile of those errors.
 */
export interface CalibrationOptions {
  /** Most backtest windows per series (each costs one more row in the batch). */
  maxWindows: number;
  /** Fewest windows needed before quantiles are given. */
  minWindows: number;
  /** Fewest points of history before a backtest origin. */
  minContext: number;
  /** Errors of steps h-w..h+w are pooled for step h (steps further out have similar spread). */
  poolHalfWidth: number;
}

export const DEFAULT_CALIBRATION: CalibrationOptions = { maxWindows: 8, minWindows: 2, minContext: 96, poolHalfWidth: 2 };

/** Backtest origins, newest first: t = n - H, n - 2H, ... while t keeps minContext points. */
export function backtestOrigins(length: number, horizon: number, opts: CalibrationOptions): number[] {
  const origins: number[] = [];
  for (let t = length - horizon; t >= opts.minContext && origins.length < opts.maxWindows; t -= horizon) origins.push(t);
  return origins;
}

/** Fewest points a series needs for calibrated quantiles. */
export function calibrationMinPoints(horizon: number, opts: CalibrationOptions): number {
  return opts.minContext + opts.minWindows * horizon;
}

/** Per step, the ascending pooled errors (finite ones only). `errors[w][h]` may hold NaN. */
export function pooledErrors(errors: readonly Float64Array[], horizon: number, halfWidth: number): Float64Array[] {
  const out: Float64Array[] = [];
  for (let h = 0; h < horizon; h++) {
    const pool: number[] = [];
    for (const window of errors) {
      for (let k = Math.max(0, h - halfWidth); k <= Math.min(horizon - 1, h + halfWidth); k++) {
        const e = window[k];
        if (e !== undefined && Number.isFinite(e)) pool.push(e);
      }
    }
    out.push(Float64Array.from(pool).sort());
  }
  return out;
}

/** Plotting positions of m sorted values for the linear ("type 7") empirical quantile. */
export function empiricalLevels(m: number): Float64Array {
  return m <= 1 ? Float64Array.of(0.5) : Float64Array.from({ length: m }, (_, i) => i / (m - 1));
}
