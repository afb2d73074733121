import { gaussian, mulberry32 } from './prng.ts';
import { qnorm } from './normal.ts';

/**
 * A forecast as the statistical models produce it: a point forecast and, per step, the
 * standard deviation of a normal predictive distribution, possibly different below and above
 * the mean (a split normal) when the model's own interval is asymmetric.
 */
export interface GaussianForecast {
  mean: number[];
  sdLow: number[];
  sdHigh: number[];
  info: Record<string, unknown>;
  /** In-sample one-step-ahead predictions of the series fitted, one per value (NaN where none). */
  fitted?: number[];
  /**
   * The same model (the specification the search chose: ETS form, ARIMA orders) fitted afresh to
   * a shorter series, without the model search: what the backtest calibration refits
   * (models/common.ts). Absent: the calibration runs the whole fitter again.
   */
  refit?: (train: number[], horizon: number) => GaussianForecast;
  /**
   * The whole fitter, its search included, on a shorter series: given where that search is cheap
   * (auto-arima on short series). The calibration then takes its factor from these backtests (the
   * errors of choosing the model again) instead of `refit`'s (the errors of a model chosen with the
   * backtest windows in view), so the intervals carry the uncertainty of the model choice
   * (models/common.ts, ADR 0036; pooled with `refit`'s until then, ADR 0024).
   */
  research?: (train: number[], horizon: number) => GaussianForecast;
}

/** Quantile rows (one per level, in the levels' order), forced monotone in the level. */
export function quantileRows(fc: GaussianForecast, levels: readonly number[]): number[][] {
  const rows = levels.map((p) => {
    const z = qnorm(p);
    return fc.mean.map((m, h) => m + z * (z < 0 ? fc.sdLow[h]! : fc.sdHigh[h]!));
  });
  // Levels arrive ascending; a running maximum guards against rounding in degenerate cases.
  for (let r = 1; r < rows.length; r++) {
    const row = rows[r]!;
    const below = rows[r - 1]!;
    for (let h = 0; h < row.length; h++) if (row[h]! < below[h]!) row[h] = below[h]!;
  }
  return rows;
}

/**
 * Sample paths: each path draws independent standard normal shocks e_1..e_H from a seeded PRNG
 * and uses Z_h = (e_1 + ... + e_h) / sqrt(h), so every step's marginal is exactly the model's
 * predictive distribution while neighbouring steps are correlated the way accumulated forecast
 * errors are (corr(Z_h, Z_k) = sqrt(h / k) for h <= k), instead of jumping independently.
 */
export function samplePaths(fc: GaussianForecast, numSamples: number, seed: number): number[][] {
  const normal = gaussian(mulberry32(seed));
  const paths: number[][] = [];
  for (let s = 0; s < numSamples; s++) {
    let sum = 0;
    paths.push(
      fc.mean.map((m, h) => {
        sum += normal();
        const z = sum / Math.sqrt(h + 1);
        return m + z * (z < 0 ? fc.sdLow[h]! : fc.sdHigh[h]!);
      }),
    );
  }
  return paths;
}

/** Standard deviations recovered from a symmetric-or-not central interval at `level`. */
export function sdFromInterval(
  point: readonly number[],
  lower: readonly number[],
  upper: readonly number[],
  level: number,
): { sdLow: number[]; sdHigh: number[] } {
  const z = qnorm(0.5 + level / 2);
  const clean = (v: number): number => (Number.isFinite(v) && v > 0 ? v : 0);
  return {
    sdLow: point.map((p, h) => clean((p - lower[h]!) / z)),
    sdHigh: point.map((p, h) => clean((upper[h]! - p) / z)),
  };
}
