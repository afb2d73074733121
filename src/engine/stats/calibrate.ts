import type { GaussianForecast } from './distribution.ts';

/**
 * Interval calibration for the statistical models on the series' own backtests.
 *
 * A model's analytic intervals assume the model is right; on real data they are often too narrow
 * (theta, ARIMA: the model's uncertainty about itself is left out) or far too wide (multiplicative
 * error ETS, whose variance grows geometrically). For one series the model is refitted at up to
 * `windows` earlier origins (n - H, n - H - ceil(H/2), ...; each keeping at least `minTrain`
 * points) and forecasts what followed. Each error is standardised by that forecast's own
 * standard deviation at that step (z = error / sd, the lower or upper sd by the error's sign).
 * If the model's intervals were right, |z| would be half-normal and its 80% quantile 1.2816; the
 * factor c = Q_0.85(|z|) / 1.2816 (type-7 empirical quantile over all windows and steps; 0.85
 * rather than 0.8, see CAL_LEVEL) says how much wider (c > 1) or narrower the intervals must be.
 * c is kept within [1/5, 5] and not shrunk toward 1: analytic intervals are too narrow far more
 * often than too wide, so shrinking pulled most factors the wrong way (with log c shrunk by
 * k / (k + 0.5) for k windows, M3 yearly intervals covered 73-75% for naive and theta; without,
 * 77-79%: bench/results/m3-intervals.md). Every standard deviation of the forecast is multiplied
 * by c, so every quantile level and the sample paths move together.
 * Series too short for one backtest window are left as they are (`info.calibration` says so).
 */
export interface CalibrationOptions {
  windows: number;
  minTrain: number;
}

export interface CalibrationResult {
  factor: number;
  /** Q_0.85(|z|) / 1.2816 before the [1/5, 5] clamp. */
  rawFactor: number;
  windows: number;
  errors: number;
}

const Z80 = 1.2815515655446004;
/**
 * The |z| quantile matched to the 80% interval's half-width. 0.85 rather than 0.8: the factor is
 * estimated from a few windows, and a factor that comes out too small loses more coverage than one
 * too large gains, so the unbiased choice covers less than 80% on average (measured on every 10th
 * M3 series: 0.8 gave 69-78% per frequency for naive and theta, 0.85 gave 73-82%).
 */
const CAL_LEVEL = 0.85;

function quantile(sorted: readonly number[], p: number): number {
  const h = (sorted.length - 1) * p;
  const lo = Math.floor(h);
  const hi = Math.min(sorted.length - 1, lo + 1);
  return sorted[lo]! + (h - lo) * (sorted[hi]! - sorted[lo]!);
}

/** Backtest origins, newest first, each leaving at least one step to score. */
export function calibrationOrigins(n: number, horizon: number, opts: CalibrationOptions): number[] {
  const stride = Math.max(1, Math.ceil(horizon / 2));
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

/** The factor from the backtests' |z| (see the module comment); null without a usable window. */
export function factorFromZ(windows: readonly (readonly number[])[]): CalibrationResult | null {
  const z = windows.flat().filter((v) => Number.isFinite(v));
  if (windows.length === 0 || z.length === 0) return null;
  z.sort((a, b) => a - b);
  const raw = quantile(z, CAL_LEVEL) / Z80;
  return { factor: Math.min(5, Math.max(0.2, raw)), rawFactor: raw, windows: windows.length, errors: z.length };
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
