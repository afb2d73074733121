import type { GaussianForecast } from '../stats/distribution.ts';
import { statisticalModel, rms, type FitContext } from './common.ts';

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

export const naive = statisticalModel(
  {
    id: 'naive',
    name: 'Naive',
    family: 'random walk',
    description: 'Repeats the last observation. The baseline every model must beat.',
    minPoints: 2,
    capabilities: ['fitted_values'],
    quantileMethod: 'analytic: random walk, sd_h = sigma * sqrt(h), sigma from in-sample one-step errors',
  },
  naiveForecast,
);

export const seasonalNaive = statisticalModel(
  {
    id: 'seasonal-naive',
    name: 'Seasonal naive',
    family: 'random walk',
    description: 'Repeats the last observed season; falls back to naive when the series is shorter than a season.',
    minPoints: 2,
    capabilities: ['seasonality', 'fitted_values'],
    quantileMethod: 'analytic: seasonal random walk, sd_h = sigma * sqrt(floor((h-1)/m) + 1), sigma from in-sample seasonal errors',
  },
  seasonalNaiveForecast,
);

export const drift = statisticalModel(
  {
    id: 'drift',
    name: 'Random walk with drift',
    family: 'random walk',
    description: 'Extends the line from the first to the last observation; strong on short yearly series.',
    minPoints: 2,
    capabilities: ['fitted_values'],
    quantileMethod: 'analytic: random walk with drift, sd_h = sigma * sqrt(h * (1 + h / (n - 1)))',
  },
  driftForecast,
);
