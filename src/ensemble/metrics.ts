import { maxAbs, unitOf } from '../shared/unit-scale.ts';

/**
 * Forecast accuracy measures, as defined for the M3/M4 competitions (sMAPE, MASE) and for
 * probabilistic forecasts (weighted quantile loss, the usual discrete approximation of CRPS).
 * NaN in the actuals marks a missing value: that step is skipped.
 *
 * Each is computed in units of the largest |value| it reads (`unitOf`, a power of two: the same
 * digits as in the data's units, but no difference, sum or |y| + |f| can overflow: at 1e308 they
 * did, and sMAPE, MASE and WQL came out NaN, 0 or Infinity). All three are ratios, so they need no
 * putting back, but for the fallbacks in the data's units (a MASE scale of 1, a WQL scale of 1).
 */

/** Mean over steps of 200·|y − f| / (|y| + |f|); a step where both are 0 counts as 0. */
export function smape(actual: number[], forecast: number[]): number {
  const c = unitOf(maxAbs(actual, forecast));
  let sum = 0;
  let n = 0;
  for (let i = 0; i < actual.length; i++) {
    const y = (actual[i] as number) / c;
    const f = (forecast[i] as number) / c;
    if (Number.isNaN(y)) continue;
    const d = Math.abs(y) + Math.abs(f);
    sum += d === 0 ? 0 : (200 * Math.abs(y - f)) / d;
    n++;
  }
  return n === 0 ? Number.NaN : sum / n;
}

/** Mean absolute lag-m difference of `train` in units of `c` (0 when there is none). */
function meanAbsDiff(train: number[], m: number, c: number): number {
  let sum = 0;
  let n = 0;
  for (let t = m; t < train.length; t++) {
    const a = train[t] as number;
    const b = train[t - m] as number;
    if (Number.isNaN(a) || Number.isNaN(b)) continue;
    sum += Math.abs(a / c - b / c);
    n++;
  }
  return n === 0 ? 0 : sum / n;
}

/** The MASE scale in units of `c`: the seasonal difference, else lag 1; 0 when both are 0 (the caller's fallback). */
function scaleIn(train: number[], season: number, c: number): number {
  const m = season > 1 && train.length > season ? season : 1;
  const s = meanAbsDiff(train, m, c);
  if (s > 0 || m === 1) return s;
  return meanAbsDiff(train, 1, c);
}

/** In-sample mean absolute seasonal difference: the MASE scale. Falls back to lag 1, then to 1. */
export function maseScale(train: number[], season: number): number {
  const c = unitOf(maxAbs(train));
  const s = scaleIn(train, season, c);
  return s > 0 ? s * c : 1;
}

export function mase(actual: number[], forecast: number[], train: number[], season: number): number {
  const c = unitOf(maxAbs(actual, forecast, train));
  let sum = 0;
  let n = 0;
  for (let i = 0; i < actual.length; i++) {
    const y = actual[i] as number;
    if (Number.isNaN(y)) continue;
    sum += Math.abs(y / c - (forecast[i] as number) / c);
    n++;
  }
  if (n === 0) return Number.NaN;
  const scale = scaleIn(train, season, c);
  // A flat training part has no scale: the error in the data's units, divided by 1.
  return scale > 0 ? sum / n / scale : (sum / n) * c;
}

/**
 * Weighted quantile loss: 2·Σ_levels Σ_steps pinball_q(y, ŷ_q) / (|levels| · Σ_steps |y|).
 * With enough evenly spread levels this approximates CRPS scaled by the series' magnitude.
 */
export function weightedQuantileLoss(actual: number[], levels: number[], quantiles: number[][]): number {
  const c = unitOf(maxAbs(actual, ...quantiles));
  let loss = 0;
  let scale = 0;
  for (let i = 0; i < actual.length; i++) {
    const y = (actual[i] as number) / c;
    if (Number.isNaN(y)) continue;
    scale += Math.abs(y);
    levels.forEach((q, k) => {
      const pred = ((quantiles[k] as number[])[i] as number) / c;
      loss += y >= pred ? q * (y - pred) : (1 - q) * (pred - y);
    });
  }
  if (levels.length === 0) return Number.NaN;
  // Every actual 0: the loss in the data's units, divided by 1.
  return scale > 0 ? (2 * loss) / (levels.length * scale) : (2 * loss * c) / levels.length;
}
