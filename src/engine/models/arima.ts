import type { GaussianForecast } from '../stats/distribution.ts';
import { arimaString, autoArima as fitAutoArima, forecastArima, myarima } from '../stats/arima.ts';
import { statisticalModel, type FitContext } from './common.ts';
import { driftForecast } from './simple.ts';

/**
 * AutoARIMA: a TypeScript port of R forecast's auto.arima (Hyndman & Khandakar 2008) with R's
 * stats::arima underneath (src/engine/stats/arima.ts): d by repeated KPSS tests, D by the STL
 * seasonal strength (> 0.64), stepwise search over (p, q, P, Q) and the constant by AICc, each
 * candidate fitted by CSS then exact Gaussian maximum likelihood (Kalman filter). Forecasts and
 * their standard errors come from Kalman prediction of the fitted state-space model.
 * If no model can be fitted (every candidate fails, which R reports as "No suitable ARIMA
 * model found"), the random walk with drift answers and `info.fallback` says so.
 */
/**
 * Longest series whose calibration also repeats auto.arima's order search at the backtest origins
 * (`research` below): auto.arima's own bound for its exact search (R: `approximation = n > 150 ||
 * frequency > 12`). Longer ones refit the chosen orders only (ADR 0021: on 1,000 hourly points
 * each search cost about 5 s of CPU).
 */
export const SEARCH_REFIT_MAX_POINTS = 150;

export function arimaForecast(y: readonly number[], ctx: FitContext): GaussianForecast {
  let result: ReturnType<typeof fitAutoArima>;
  try {
    result = fitAutoArima(y, { seasonalPeriod: ctx.seasonLength });
  } catch (err) {
    const fc = driftForecast(y, ctx);
    return { ...fc, info: { ...fc.info, fallback: `drift: ${err instanceof Error ? err.message : String(err)}` } };
  }
  const { mean, se } = forecastArima(result, ctx.horizon);
  if (mean.some((v) => !Number.isFinite(v)) || se.some((v) => !Number.isFinite(v))) {
    const fc = driftForecast(y, ctx);
    return { ...fc, info: { ...fc.info, fallback: 'drift: the fitted ARIMA gave a non-finite forecast' } };
  }
  const { fit } = result;
  // R's fitted.Arima: x − residuals; the first d + D·m steps only initialise the differences (no prediction).
  const burn = fit.arma.d + fit.arma.D * fit.arma.m;
  const fitted =
    result.constantSeries || fit.residuals.length !== y.length
      ? y.slice()
      : y.map((v, t) => (t < burn || !Number.isFinite(fit.residuals[t]!) ? Number.NaN : v - fit.residuals[t]!));
  const narma = fit.arma.p + fit.arma.q + fit.arma.P + fit.arma.Q;
  return {
    mean,
    sdLow: se,
    sdHigh: se.slice(),
    fitted,
    info: {
      model: arimaString(fit),
      order: [fit.arma.p, fit.arma.d, fit.arma.q],
      seasonalOrder: [fit.arma.P, fit.arma.D, fit.arma.Q, fit.arma.m],
      coef: fit.coef.slice(0, narma),
      ...(fit.regressor === 'none' ? {} : { [fit.regressor === 'drift' ? 'drift' : 'intercept']: fit.coef[narma] }),
      sigma2: fit.sigma2,
      loglik: fit.loglik,
      aicc: fit.aicc,
      modelsTried: result.modelsTried,
    },
    // Short series: the search again at each calibration origin, whose backtests alone set the
    // calibration factor (`research`, models/common.ts, ADR 0036). The orders were chosen on the full series,
    // backtest windows included, so refitting them alone leaves out the uncertainty of choosing
    // them (Chatfield 1996): on M3 the 80% intervals then covered 70-76% of yearly and quarterly
    // outcomes (docs/models-statistical.md). Only where auto.arima searches exactly, which is cheap.
    ...(y.length <= SEARCH_REFIT_MAX_POINTS && ctx.seasonLength <= 12 && !result.constantSeries
      ? { research: (train: number[], h: number) => arimaForecast(train, { horizon: h, seasonLength: ctx.seasonLength }) }
      : {}),
    refit: (train, h) => {
      // The chosen orders and constant refitted by CSS-ML (myarima as auto.arima's final fit, no
      // Hessian check); where they cannot be fitted to the shorter series, the full search.
      if (result.constantSeries) return arimaForecast(train, { horizon: h, seasonLength: ctx.seasonLength });
      const again = myarima(train, fit.arma, fit.regressor !== 'none', 'aicc', false, 0, false);
      if (!again || !Number.isFinite(again.sigma2)) return arimaForecast(train, { horizon: h, seasonLength: ctx.seasonLength });
      const f = forecastArima({ fit: again, x: train, constantSeries: false, modelsTried: 1 }, h);
      if (f.mean.some((v) => !Number.isFinite(v)) || f.se.some((v) => !Number.isFinite(v)))
        return arimaForecast(train, { horizon: h, seasonLength: ctx.seasonLength });
      return { mean: f.mean, sdLow: f.se, sdHigh: f.se.slice(), info: { model: arimaString(again) } };
    },
  };
}

export const autoArima = statisticalModel(
  {
    id: 'auto-arima',
    license: 'GPL-3.0-only',
    name: 'AutoARIMA',
    family: 'ARIMA',
    description:
      "Seasonal ARIMA with automatic order selection: a TypeScript port of R forecast's auto.arima (KPSS and seasonal-strength differencing, stepwise AICc search, CSS-ML fitting by the Kalman filter).",
    minPoints: 4,
    capabilities: ['seasonality', 'fitted_values'],
    quantileMethod: "analytic: Gaussian with the fitted ARIMA's Kalman h-step forecast variances (R's predict.Arima)",
  },
  arimaForecast,
  { naiveBlend: true },
);
