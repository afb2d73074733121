import { createRequire } from 'node:module';
import type ARIMAModule from 'arima';
import type { GaussianForecast } from '../stats/distribution.ts';
import { statisticalModel, rms, type FitContext } from './common.ts';
import { driftForecast } from './simple.ts';
import { deseasonalise } from '../stats/season.ts';

type ArimaConstructor = typeof ARIMAModule;

const require = createRequire(import.meta.url);
let ctor: ArimaConstructor | null = null;
/**
 * Loaded on first use: the package compiles its WASM synchronously at require time. Its C code
 * printf()s optimiser chatter ("non-stationary AR part") through the print hooks Emscripten binds
 * from console.log/console.error at that moment, so they are silenced just for the require.
 */
function arimaConstructor(): ArimaConstructor {
  if (ctor) return ctor;
  const { log, error } = console;
  console.log = () => {};
  console.error = () => {};
  try {
    ctor = require('arima') as ArimaConstructor;
  } finally {
    console.log = log;
    console.error = error;
  }
  return ctor;
}

/** The package refuses auto-ARIMA on fewer points than this (its own guard against a WASM crash). */
const MIN_AUTO_POINTS = 20;

/**
 * Forecast variances from the library are used when they are plausible. The wrapped C library
 * (ctsa) returns garbage for some degenerate fits (an ARIMA(0,1,0) comes back with input values
 * as "variances"), so we require finite, positive, non-decreasing values (an ARIMA's h-step
 * variance never shrinks with h) that are not copies of the input.
 */
function plausibleVariances(v: readonly number[], y: readonly number[]): boolean {
  const inputs = new Set(y);
  for (let h = 0; h < v.length; h++) {
    const x = v[h]!;
    if (!Number.isFinite(x) || x <= 0 || inputs.has(x)) return false;
    if (h > 0 && x < v[h - 1]! * (1 - 1e-6)) return false;
  }
  return true;
}

/**
 * ctsa's auto-ARIMA sometimes returns forecasts that do not continue the series (all zeros for
 * a random walk, or a level far from the last value). A one-step forecast more than four
 * standard deviations of the first differences away from the last value is not something a
 * fitted ARIMA produces, so such answers are replaced by the random walk (naive), which is what
 * those degenerate (0,1,0) searches amount to.
 */
function plausiblePoints(p: readonly number[], y: readonly number[]): boolean {
  const n = y.length;
  const sdDiff = rms(y.slice(1).map((v, t) => v - y[t]!));
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of y) {
    lo = Math.min(lo, v);
    hi = Math.max(hi, v);
  }
  const range = hi - lo;
  if (!p.every((v) => Number.isFinite(v) && v >= lo - 2 * range && v <= hi + 2 * range)) return false;
  return Math.abs(p[0]! - y[n - 1]!) <= 4 * sdDiff + 1e-9 * Math.abs(y[n - 1]!);
}

/**
 * AutoARIMA from the `arima` package (ctsa compiled to WASM: stepwise order search, p, q <= 5,
 * d <= 2). A season is removed first by classical decomposition (R thetaf's ACF test) and the
 * search is non-seasonal: ctsa's seasonal search was 28 times slower on M3 monthly and less
 * accurate. Below 20 points (the package's own limit) the random walk with drift answers; an
 * implausible answer from the library is replaced by the naive forecast; `info.fallback` says so.
 * Intervals use the library's h-step forecast variances (Gaussian), seasonal index applied.
 */
export function arimaForecast(y: readonly number[], ctx: FitContext): GaussianForecast {
  const n = y.length;
  if (n < MIN_AUTO_POINTS) {
    const fc = driftForecast(y, ctx);
    return { ...fc, info: { ...fc.info, fallback: `drift: fewer than ${MIN_AUTO_POINTS} points for auto-ARIMA` } };
  }
  const seasonal = deseasonalise(y, ctx.seasonLength);
  const x = seasonal.adjusted;
  const ARIMA = arimaConstructor();
  const model = new ARIMA({ auto: true, P: 0, D: 0, Q: 0, s: 0, verbose: false });
  let point: number[];
  let sd: number[];
  const info: Record<string, unknown> = { seasonalAdjustment: seasonal.type };
  try {
    model.fit(x.slice());
    const [p, variance] = model.predict(ctx.horizon);
    const sigma = rms(x.slice(1).map((v, t) => v - x[t]!));
    if (!plausiblePoints(p, x)) {
      point = new Array<number>(ctx.horizon).fill(x[n - 1]!);
      sd = point.map((_, h) => sigma * Math.sqrt(h + 1));
      info['fallback'] = 'naive: auto-ARIMA returned an implausible forecast';
    } else {
      point = p;
      if (plausibleVariances(variance, x)) {
        sd = variance.map((v) => Math.sqrt(v));
      } else {
        // The random-walk variance: what the degenerate ARIMA(0,1,0) fits would report.
        sd = point.map((_, h) => sigma * Math.sqrt(h + 1));
        info['varianceSource'] = 'random walk (library variances implausible)';
      }
    }
  } finally {
    model.destroy();
  }
  const scaled = sd.map((v, h) => seasonal.scaleSd(v, n + h));
  return { mean: point.map((v, h) => seasonal.reseasonalise(v, n + h)), sdLow: scaled, sdHigh: scaled.slice(), info };
}

export const autoArima = statisticalModel(
  {
    id: 'auto-arima',
    name: 'AutoARIMA',
    family: 'ARIMA',
    description:
      'ARIMA with automatic order selection (stepwise search) via the `arima` package (ctsa in WASM), on the seasonally adjusted series; random walk with drift below 20 points.',
    minPoints: 4,
    capabilities: ['seasonality'],
    quantileMethod: "analytic: the ARIMA model's h-step forecast variances (Gaussian); random-walk variance when the library's are implausible",
  },
  arimaForecast,
);
