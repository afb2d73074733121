import type { GaussianForecast } from '../stats/distribution.ts';
import { detectSeasonLengths, isSeasonal } from '../stats/season.ts';
import { stl } from '../stats/unitroot.ts';
import { statisticalModel, type FitContext } from './common.ts';
import { etsForecast } from './ets.ts';

/**
 * MSTL (Bandara, Hyndman & Bergmeir 2021) as R forecast's `mstl` + `forecast.mstl` (stlf):
 * each period's seasonal component is taken out in turn by STL (the port of R's `stl` in
 * stats/unitroot.ts; s.window 7 + 4i for the i-th period, shortest first; two passes), the
 * seasonally adjusted series is forecast by the non-seasonal ETS port (auto-ets: AICc among
 * simple, Holt and damped Holt with additive or multiplicative errors, so a long series' local
 * trend is damped rather than run on for hundreds of steps) and each seasonal component is
 * continued by repeating its last cycle. Periods: see `mstlPeriods`; each needs at least two full cycles
 * in the data (R keeps periods below n/2) and, unlike R's mstl, must pass thetaf's seasonal test
 * (`isSeasonal`, ADR 0034).
 * With none it is non-seasonal auto-ets. Intervals: the ETS model's, seasons taken as known.
 */
/**
 * The base period (the job's season length, else the strongest detected one) and at most two
 * detected multiples of it (168 = 7 x 24 for hourly data): the detector also reports near-periods
 * (23, 25), harmonics (12, 8) and long spurious peaks, and an STL component per such period fits
 * noise that is then repeated into the forecast (on ETT hourly data that doubled the error).
 */
export function mstlPeriods(y: readonly number[], seasonLength: number): number[] {
  const detected = detectSeasonLengths(y);
  const base = seasonLength > 1 ? seasonLength : detected[0];
  if (base === undefined || base <= 1) return [];
  const multiples = detected.filter((p) => p > base && p % base === 0).slice(0, 2);
  return [base, ...multiples].sort((a, b) => a - b);
}

export function mstlForecast(y: readonly number[], ctx: FitContext): GaussianForecast {
  const n = y.length;
  const long = mstlPeriods(y, ctx.seasonLength).filter((p) => n >= 2 * p + 1);
  // thetaf's seasonal test (ADR 0034): STL fits a seasonal component to any period it is given,
  // and one fitted to a season the data do not have is noise repeated into the forecast.
  const usable = long.filter((p) => isSeasonal(y, p));
  const rejected = long.filter((p) => !usable.includes(p));
  if (usable.length === 0) {
    const fc = etsForecast(y, { ...ctx, seasonLength: 1 });
    const fallback =
      long.length === 0 ? 'auto-ets: no season with two full cycles' : `auto-ets: no season passes the seasonal test (${rejected.join(', ')} tested)`;
    return { ...fc, info: { ...fc.info, periods: [], ...(rejected.length > 0 ? { periodsRejected: rejected } : {}), fallback } };
  }
  const seas = usable.map(() => new Array<number>(n).fill(0));
  let deseas = y.slice();
  for (let pass = 0; pass < 2; pass++) {
    usable.forEach((p, i) => {
      deseas = deseas.map((v, t) => v + seas[i]![t]!);
      const fit = stl(deseas, p, 7 + 4 * (i + 1));
      seas[i] = fit.seasonal;
      deseas = deseas.map((v, t) => v - fit.seasonal[t]!);
    });
  }
  const trendFc = etsForecast(deseas, { horizon: ctx.horizon, seasonLength: 1 });
  const mean = trendFc.mean.map((v, h) => {
    let s = v;
    usable.forEach((p, i) => {
      s += seas[i]![n - p + (h % p)]!;
    });
    return s;
  });
  return {
    mean,
    sdLow: trendFc.sdLow,
    sdHigh: trendFc.sdHigh,
    info: { periods: usable, ...(rejected.length > 0 ? { periodsRejected: rejected } : {}), trendModel: trendFc.info.model ?? trendFc.info.fallback },
  };
}

export const mstl = statisticalModel(
  {
    id: 'mstl',
    license: 'GPL-3.0-only',
    name: 'MSTL',
    family: 'decomposition',
    description:
      'Multiple seasonal-trend decomposition by LOESS (R forecast mstl/stlf) with a damped-or-not ETS forecast of the adjusted series; for data with several seasons (hourly: day and week).',
    minPoints: 4,
    capabilities: ['seasonality', 'multiple_seasonalities'],
    quantileMethod: "analytic: the ETS model's prediction intervals for the adjusted series, seasonal components taken as known; calibrated on backtests",
  },
  mstlForecast,
  { naiveBlend: true },
);
