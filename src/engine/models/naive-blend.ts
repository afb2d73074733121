import type { BacktestForecast } from '../stats/calibrate.ts';
import type { GaussianForecast } from '../stats/distribution.ts';
import { seasonalNaiveForecast } from '../stats/random-walk.ts';

/**
 * The seasonal-naive blend of long high-frequency seasonal series (ADR 0029).
 *
 * The statistical models fit by one-step-ahead criteria (likelihood, one-step squared error). On a
 * long seasonal series with a long horizon that criterion can prefer a model whose forecasts many
 * steps ahead are poor: on hourly data ETS's maximum-likelihood fit drives alpha to 1 and gamma to 0
 * (the level follows every hour, the daily profile is frozen at its long-run average), which wins
 * one step ahead and loses to the last day repeated 24 to 48 steps ahead. Seasonal naive is the
 * boundary of the same family (ETS(A,N,A) with alpha 0 and gamma 1) that no one-step criterion picks.
 *
 * The calibration's backtests (three origins half a horizon apart, each scoring the whole horizon)
 * are a multi-step criterion the models already pay for. On a series with a season of
 * `NAIVE_BLEND_MIN_SEASON` steps or more (hourly data with its daily profile, and finer), forecast
 * at least one season ahead, whose oldest backtest origin leaves at least `NAIVE_BLEND_MIN_SHARE` of
 * the series before it (a history of about ten horizons or more), the forecast is the model and
 * seasonal naive weighted by the inverse of their mean absolute backtest errors (the same windows;
 * seasonal naive costs nothing).
 *
 * Where it was measured not to help it does not apply (bench/results/naive-blend.md): on M3 monthly
 * data (season 12) every weighting tried made the models worse, even where the series is long
 * enough (theta with horizon 6: sMAPE 11.69 -> 11.77 to 11.97), because there the models are
 * clearly better than seasonal naive and any weight on it is lost; on hourly data with horizon 6
 * (less than a season, where following the level matters most) auto-arima lost 8% of MASE on one of
 * two origin sets; on shorter series the refits see much less than the final fit and their errors
 * are biased against the model.
 */
export const NAIVE_BLEND_MIN_SEASON = 24;

export interface NaiveBlend {
  /** The model's weight; seasonal naive has 1 - weight. */
  weight: number;
  /** Mean absolute backtest error of the model and of seasonal naive, over the same steps. */
  modelMae: number;
  naiveMae: number;
  windows: number;
}

export const NAIVE_BLEND_MIN_SHARE = 0.8;

/**
 * Whether the blend applies: a season of NAIVE_BLEND_MIN_SEASON or more, a horizon of at least one
 * season, a series longer than it, and the oldest backtest origin at NAIVE_BLEND_MIN_SHARE of the
 * series or later.
 */
export function naiveBlendApplies(n: number, seasonLength: number, horizon: number, oldestOrigin: number | null): boolean {
  return (
    seasonLength >= NAIVE_BLEND_MIN_SEASON && horizon >= seasonLength && n > seasonLength && oldestOrigin !== null && oldestOrigin >= NAIVE_BLEND_MIN_SHARE * n
  );
}

/** Seasonal naive's forecast from each backtest origin, over the same steps. */
export function naiveBacktests(y: readonly number[], forecasts: readonly BacktestForecast[], seasonLength: number): BacktestForecast[] {
  return forecasts.map(({ origin, fc }) => ({ origin, fc: seasonalNaiveForecast(y.slice(0, origin), { horizon: fc.mean.length, seasonLength }) }));
}

/**
 * The model's weight against seasonal naive: inverse mean absolute backtest error, pooled over the
 * windows and the steps where both are finite. Null without such a step.
 */
export function naiveBlendWeight(y: readonly number[], model: readonly BacktestForecast[], naive: readonly BacktestForecast[]): NaiveBlend | null {
  let em = 0;
  let en = 0;
  let k = 0;
  model.forEach(({ origin, fc }, w) => {
    const sn = naive[w]!.fc.mean;
    fc.mean.forEach((f, t) => {
      const a = Math.abs(y[origin + t]! - f);
      const b = Math.abs(y[origin + t]! - sn[t]!);
      if (!Number.isFinite(a) || !Number.isFinite(b)) return;
      em += a;
      en += b;
      k++;
    });
  });
  if (k === 0) return null;
  const modelMae = em / k;
  const naiveMae = en / k;
  // A perfect backtest takes all the weight (both perfect: the model keeps it).
  const weight = modelMae === 0 ? 1 : naiveMae === 0 ? 0 : 1 / modelMae / (1 / modelMae + 1 / naiveMae);
  return { weight, modelMae, naiveMae, windows: model.length };
}

/**
 * The mixture of two forecasts with weights w and 1 - w: the weighted mean, and per side the
 * mixture's standard deviation sqrt(w v_a + (1 - w) v_b + w (1 - w) (mu_a - mu_b)^2).
 */
export function mixForecasts(a: GaussianForecast, b: GaussianForecast, w: number): GaussianForecast {
  const mean = a.mean.map((m, i) => w * m + (1 - w) * b.mean[i]!);
  const side = (sa: readonly number[], sb: readonly number[]): number[] =>
    mean.map((_, i) => {
      const d = a.mean[i]! - b.mean[i]!;
      const v = w * sa[i]! ** 2 + (1 - w) * sb[i]! ** 2 + w * (1 - w) * d * d;
      return Number.isFinite(v) ? Math.sqrt(v) : 0;
    });
  return { ...a, mean, sdLow: side(a.sdLow, b.sdLow), sdHigh: side(a.sdHigh, b.sdHigh) };
}
