import type { GaussianForecast } from '../stats/distribution.ts';
import { autoCes, type CesFit, type CesSeasonality, cesFormsFor, forecastCes } from '../stats/ces.ts';
import { isConstant } from '../stats/unitroot.ts';
import { constantForecast, statisticalModel, type FitContext } from './common.ts';
import { naiveForecast } from './simple.ts';

/**
 * AutoCES (R smooth's auto.ces): complex exponential smoothing without a season and with its three
 * seasonal forms, fitted by maximum likelihood with backcast initial states (stats/ces.ts), the
 * lowest AICc kept. A constant series is forecast as that constant; too short for any form: naive.
 */
export function cesForecast(y: readonly number[], ctx: FitContext, forms?: readonly CesSeasonality[]): GaussianForecast {
  const n = y.length;
  if (isConstant(y)) return constantForecast(y, ctx.horizon);
  const m = ctx.seasonLength;
  const found = autoCes(y, m, forms ?? cesFormsFor(n, m));
  if (!found) {
    const fallback = naiveForecast(y, ctx);
    return { ...fallback, info: { fallback: 'naive: too short for CES' } };
  }
  return cesResult(found.best, ctx, found.tried.length);
}

function cesResult(fit: CesFit, ctx: FitContext, tried: number): GaussianForecast {
  const { mean, variance } = forecastCes(fit, ctx.horizon);
  const sd = variance.map((v) => (Number.isFinite(v) && v > 0 ? Math.sqrt(v) : 0));
  const r = (v: number): number => Number(v.toPrecision(6));
  return {
    mean,
    sdLow: sd,
    sdHigh: sd.slice(),
    fitted: fit.fitted,
    info: {
      model: `CES(${fit.form})`,
      a: { real: r(fit.B[0]!), imaginary: r(fit.B[1]!) },
      ...(fit.form === 'partial' ? { b: r(fit.B[2]!) } : {}),
      ...(fit.form === 'full' ? { b: { real: r(fit.B[2]!), imaginary: r(fit.B[3]!) } } : {}),
      sigma2: fit.sigma2,
      aicc: fit.aicc,
      modelsTried: tried,
    },
    // The backtests refit the chosen form (its parameters again, on the shorter series); a form the
    // shorter series is too short for falls back to the whole search there.
    refit: (train, steps) => {
      const at = { horizon: steps, seasonLength: ctx.seasonLength };
      const allowed = cesFormsFor(train.length, ctx.seasonLength);
      if (isConstant(train) || !allowed.includes(fit.form)) return cesForecast(train, at);
      return cesForecast(train, at, [fit.form]);
    },
  };
}

export const ces = statisticalModel(
  {
    id: 'ces',
    license: 'LGPL-2.1-only',
    name: 'AutoCES (complex exponential smoothing)',
    family: 'exponential smoothing',
    description:
      "Complex exponential smoothing (Svetunkov, Kourentzes & Ord 2022; R smooth's auto.ces, ported): a level and an information potential smoothed by one complex parameter, so no trend form has to be chosen; non-seasonal, simple, partial and full seasonal forms fitted with backcast initial states and the lowest AICc kept.",
    minPoints: 4,
    capabilities: ['seasonality', 'fitted_values'],
    quantileMethod: "analytic (Gaussian): the linear state space model's h-step variance sigma^2 (1 + sum psi_j^2), calibrated on backtests",
  },
  (y, ctx) => cesForecast(y, ctx),
  { naiveBlend: true },
);
