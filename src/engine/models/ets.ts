import type { GaussianForecast } from '../stats/distribution.ts';
import { autoEts as searchEts, type EtsFit, etsModel, etsName, forecastEts } from '../stats/ets.ts';
import { isConstant } from '../stats/unitroot.ts';
import { statisticalModel, type FitContext } from './common.ts';
import { naiveForecast } from './simple.ts';

/**
 * AutoETS: the port of R forecast's `ets` in stats/ets.ts (error, trend, damping and season
 * chosen by AICc among the 15 ETS models R's defaults allow; seasons up to 24 per cycle, as R).
 * Forecast means and variances are forecast.ets's analytic ones (classes 1 to 3).
 * A constant series is forecast as that constant; 6 points or fewer (where R switches to
 * HoltWinters) or no fittable model: the naive model answers and `info.fallback` says why.
 */
export function etsForecast(y: readonly number[], ctx: FitContext): GaussianForecast {
  const n = y.length;
  if (isConstant(y)) {
    const zero = new Array<number>(ctx.horizon).fill(0);
    return { mean: new Array<number>(ctx.horizon).fill(y[n - 1]!), sdLow: zero, sdHigh: zero.slice(), info: { model: 'constant' }, fitted: y.slice() };
  }
  const found = n > 6 ? searchEts(y, ctx.seasonLength) : null;
  if (!found) {
    const fallback = naiveForecast(y, ctx);
    return { ...fallback, info: { fallback: n > 6 ? 'naive: no ETS model could be fitted' : 'naive: 6 points or fewer' } };
  }
  return etsResult(y, found.fit, ctx, found.tried);
}

/** Forecast of a fitted ETS model, with `refit`: the same form (error, trend, damping, season) refitted to a shorter series. */
function etsResult(y: readonly number[], fit: EtsFit, ctx: FitContext, tried: number): GaussianForecast {
  const fc = forecastEts(fit, ctx.horizon);
  const sd = fc.variance.map((v) => (Number.isFinite(v) && v > 0 ? Math.sqrt(v) : 0));
  // The one-step-ahead predictions from the residuals: e = y − f (additive error), e = (y − f) / f (multiplicative).
  const fitted = y.map((v, t) => {
    const e = fit.residuals[t]!;
    return fit.error === 'M' ? v / (1 + e) : v - e;
  });
  return {
    mean: fc.mean,
    sdLow: sd,
    sdHigh: sd.slice(),
    fitted,
    info: {
      model: etsName(fit),
      alpha: fit.alpha,
      ...(fit.trend !== 'N' ? { beta: fit.beta } : {}),
      ...(fit.season !== 'N' ? { gamma: fit.gamma } : {}),
      ...(fit.damped ? { phi: fit.phi } : {}),
      sigma2: fit.sigma2,
      aicc: fit.aicc,
      modelsTried: tried,
    },
    refit: (train, h) => {
      // The chosen form on the shorter series; where it cannot be fitted there (a multiplicative
      // form on data that turned non-positive, too short for the season), the full search.
      const ok = train.length > 6 && !isConstant(train) && (fit.error === 'A' || train.every((v) => v > 0)) && (fit.season === 'N' || train.length > fit.m);
      const again = ok ? etsModel(train, fit.m, fit) : null;
      const at = { horizon: h, seasonLength: ctx.seasonLength };
      return again ? etsResult(train, again, at, 1) : etsForecast(train, at);
    },
  };
}

export const autoEts = statisticalModel(
  {
    id: 'auto-ets',
    name: 'AutoETS',
    family: 'exponential smoothing',
    description:
      "Exponential smoothing state-space models (R forecast's ets, ported): additive or multiplicative error and season, additive or damped trend, chosen by AICc.",
    minPoints: 4,
    capabilities: ['seasonality', 'fitted_values'],
    quantileMethod: "analytic: forecast.ets's prediction variances (classes 1-3, Gaussian)",
  },
  (y, ctx) => etsForecast(y, ctx),
);
