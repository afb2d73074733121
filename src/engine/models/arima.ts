import { createRequire } from 'node:module';
import type ARIMAModule from 'arima';
import type { GaussianForecast } from '../stats/distribution.ts';
import { statisticalModel, rms, type FitContext } from './common.ts';
import { driftForecast } from './simple.ts';

type ArimaConstructor = typeof ARIMAModule;

const require = createRequire(import.meta.url);
let ctor: ArimaConstructor | null = null;
/** Loaded on first use: the package compiles its WASM synchronously at require time. */
function arimaConstructor(): ArimaConstructor {
  ctor ??= require('arima') as ArimaConstructor;
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

function plausiblePoints(p: readonly number[], y: readonly number[]): boolean {
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of y) {
    lo = Math.min(lo, v);
    hi = Math.max(hi, v);
  }
  const span = Math.max(hi - lo, Math.abs(hi), 1e-9);
  return p.every((v) => Number.isFinite(v) && v > lo - 10 * span && v < hi + 10 * span);
}

/**
 * AutoARIMA from the `arima` package (ctsa compiled to WASM: Hyndman-Khandakar stepwise search,
 * exact maximum likelihood). Seasonal when the season length is > 1 and there are at least two
 * seasons plus a margin, non-seasonal otherwise. Below 20 points (the package's own limit) or when
 * the library's answer is implausible, the random walk with drift answers and `info.fallback`
 * says so. Intervals use the library's h-step forecast variances (Gaussian).
 */
export function arimaForecast(y: readonly number[], ctx: FitContext): GaussianForecast {
  const n = y.length;
  if (n < MIN_AUTO_POINTS) {
    const fc = driftForecast(y, ctx);
    return { ...fc, info: { ...fc.info, fallback: `drift: fewer than ${MIN_AUTO_POINTS} points for auto-ARIMA` } };
  }
  const ARIMA = arimaConstructor();
  const m = ctx.seasonLength;
  const seasonal = m > 1 && n >= 2 * m + MIN_AUTO_POINTS / 2;
  const model = new ARIMA(seasonal ? { auto: true, s: m, verbose: false } : { auto: true, P: 0, D: 0, Q: 0, s: 0, verbose: false });
  try {
    model.fit(y.slice());
    const [point, variance] = model.predict(ctx.horizon);
    if (!plausiblePoints(point, y)) {
      const fc = driftForecast(y, ctx);
      return { ...fc, info: { ...fc.info, fallback: 'drift: auto-ARIMA returned no usable forecast' } };
    }
    let sd: number[];
    let varianceSource = 'arima';
    if (plausibleVariances(variance, y)) {
      sd = variance.map((v) => Math.sqrt(v));
    } else {
      // The random-walk variance: what the degenerate ARIMA(0,1,0) fits would report.
      const sigma = rms(y.slice(1).map((v, t) => v - y[t]!));
      sd = point.map((_, h) => sigma * Math.sqrt(h + 1));
      varianceSource = 'random walk (library variances implausible)';
    }
    return { mean: point.slice(), sdLow: sd, sdHigh: sd.slice(), info: { seasonalSearch: seasonal, varianceSource } };
  } finally {
    model.destroy();
  }
}

export const autoArima = statisticalModel(
  {
    id: 'auto-arima',
    name: 'AutoARIMA',
    family: 'ARIMA',
    description:
      'Seasonal ARIMA with automatic order selection (Hyndman-Khandakar stepwise search) via the `arima` package (ctsa in WASM); random walk with drift below 20 points.',
    minPoints: 4,
    capabilities: ['seasonality'],
    quantileMethod: "analytic: the ARIMA model's h-step forecast variances (Gaussian); random-walk variance when the library's are implausible",
  },
  arimaForecast,
);
