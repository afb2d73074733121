import type { FitContext } from '../models/common.ts';
import type { GaussianForecast } from './distribution.ts';

/** Root-mean-square of the finite values (0 when none). */
export function rms(values: readonly number[]): number {
  let s = 0;
  let k = 0;
  for (const v of values) {
    if (Number.isFinite(v)) {
      s += v * v;
      k++;
    }
  }
  return k > 0 ? Math.sqrt(s / k) : 0;
}

/**
 * The random-walk family with the textbook analytic intervals (Hyndman & Athanasopoulos,
 * Forecasting: Principles and Practice, table 5.2; the same as R's forecast::rwf/naive/snaive).
 */
export function naiveForecast(y: readonly number[], ctx: FitContext): GaussianForecast {
  const last = y[y.length - 1]!;
  const sigma = rms(y.slice(1).map((v, t) => v - y[t]!));
  const sd = Array.from({ length: ctx.horizon }, (_, h) => sigma * Math.sqrt(h + 1));
  const fitted = y.map((_, t) => (t === 0 ? Number.NaN : y[t - 1]!));
  return { mean: new Array<number>(ctx.horizon).fill(last), sdLow: sd, sdHigh: sd.slice(), info: { sigma }, fitted };
}

export function seasonalNaiveForecast(y: readonly number[], ctx: FitContext): GaussianForecast {
  const m = ctx.seasonLength;
  const n = y.length;
  if (m <= 1 || n < m + 1) return { ...naiveForecast(y, ctx), info: { fallback: 'naive: fewer than season + 1 points' } };
  const sigma = rms(y.slice(m).map((v, t) => v - y[t]!));
  const mean = Array.from({ length: ctx.horizon }, (_, h) => y[n - m + (h % m)]!);
  const sd = mean.map((_, h) => sigma * Math.sqrt(Math.floor(h / m) + 1));
  const fitted = y.map((_, t) => (t < m ? Number.NaN : y[t - m]!));
  return { mean, sdLow: sd, sdHigh: sd.slice(), info: { sigma }, fitted };
}

export function driftForecast(y: readonly number[], ctx: FitContext): GaussianForecast {
  const n = y.length;
  if (n < 3) return { ...naiveForecast(y, ctx), info: { fallback: 'naive: fewer than 3 points' } };
  const slope = (y[n - 1]! - y[0]!) / (n - 1);
  const res = y.slice(1).map((v, t) => v - y[t]! - slope);
  const sigma = Math.sqrt(res.reduce((s, e) => s + e * e, 0) / (n - 2));
  const mean = Array.from({ length: ctx.horizon }, (_, h) => y[n - 1]! + slope * (h + 1));
  const sd = mean.map((_, h) => sigma * Math.sqrt((h + 1) * (1 + (h + 1) / (n - 1))));
  const fitted = y.map((_, t) => (t === 0 ? Number.NaN : y[t - 1]! + slope));
  return { mean, sdLow: sd, sdHigh: sd.slice(), info: { slope, sigma }, fitted };
}
