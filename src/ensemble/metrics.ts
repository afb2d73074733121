/**
 * Forecast accuracy measures, as defined for the M3/M4 competitions (sMAPE, MASE) and for
 * probabilistic forecasts (weighted quantile loss, the usual discrete approximation of CRPS).
 * NaN in the actuals marks a missing value: that step is skipped.
 */

/** Mean over steps of 200·|y − f| / (|y| + |f|); a step where both are 0 counts as 0. */
export function smape(actual: number[], forecast: number[]): number {
  let sum = 0;
  let n = 0;
  for (let i = 0; i < actual.length; i++) {
    const y = actual[i] as number;
    const f = forecast[i] as number;
    if (Number.isNaN(y)) continue;
    const d = Math.abs(y) + Math.abs(f);
    sum += d === 0 ? 0 : (200 * Math.abs(y - f)) / d;
    n++;
  }
  return n === 0 ? Number.NaN : sum / n;
}

/** In-sample mean absolute seasonal difference: the MASE scale. Falls back to lag 1, then to 1. */
export function maseScale(train: number[], season: number): number {
  const scaleAt = (m: number) => {
    let sum = 0;
    let n = 0;
    for (let t = m; t < train.length; t++) {
      const a = train[t] as number;
      const b = train[t - m] as number;
      if (Number.isNaN(a) || Number.isNaN(b)) continue;
      sum += Math.abs(a - b);
      n++;
    }
    return n === 0 ? 0 : sum / n;
  };
  const m = season > 1 && train.length > season ? season : 1;
  const s = scaleAt(m);
  if (s > 0) return s;
  const s1 = m === 1 ? s : scaleAt(1);
  return s1 > 0 ? s1 : 1;
}

export function mase(actual: number[], forecast: number[], train: number[], season: number): number {
  let sum = 0;
  let n = 0;
  for (let i = 0; i < actual.length; i++) {
    const y = actual[i] as number;
    if (Number.isNaN(y)) continue;
    sum += Math.abs(y - (forecast[i] as number));
    n++;
  }
  return n === 0 ? Number.NaN : sum / n / maseScale(train, season);
}

/**
 * Weighted quantile loss: 2·Σ_levels Σ_steps pinball_q(y, ŷ_q) / (|levels| · Σ_steps |y|).
 * With enough evenly spread levels this approximates CRPS scaled by the series' magnitude.
 */
export function weightedQuantileLoss(actual: number[], levels: number[], quantiles: number[][]): number {
  let loss = 0;
  let scale = 0;
  for (let i = 0; i < actual.length; i++) {
    const y = actual[i] as number;
    if (Number.isNaN(y)) continue;
    scale += Math.abs(y);
    levels.forEach((q, k) => {
      const pred = (quantiles[k] as number[])[i] as number;
      loss += y >= pred ? q * (y - pred) : (1 - q) * (pred - y);
    });
  }
  if (levels.length === 0) return Number.NaN;
  const denom = levels.length * (scale > 0 ? scale : 1);
  return (2 * loss) / denom;
}
