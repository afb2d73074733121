import type { GaussianForecast } from '../stats/distribution.ts';
import { akaikeWeights, type EtsFit, etsForms, etsModel, etsName, forecastEts } from '../stats/ets.ts';
import { isConstant } from '../stats/unitroot.ts';
import { constantForecast, statisticalModel, type FitContext } from './common.ts';
import { naiveForecast } from './simple.ts';

/**
 * Share of the Akaike weight the combination keeps: forms are taken by weight, largest first, until
 * they carry this much; the rest (each a small fraction of a percent) are dropped and the kept weights
 * renormalised. On all of M3 that keeps 4.5 forms of 12.5 on average, and the backtest refits of the
 * interval calibration refit only those.
 */
export const ETS_WEIGHT_KEPT = 0.99;

interface Member {
  fit: EtsFit;
  weight: number;
}

/**
 * AutoETS: every ETS form of R forecast's `ets` search (stats/ets.ts) fitted by maximum likelihood
 * and combined with Akaike weights from their AICc (Kolassa 2011), instead of R's choice of the one
 * form with the lowest AICc. The combination's mean is the weighted mean of the forms' means
 * (forecast.ets's analytic ones, classes 1 to 3); its variance is the mixture's. A constant series is
 * forecast as that constant; 6 points or fewer (where R switches to HoltWinters) or no fittable
 * model: the naive model answers and `info.fallback` says why.
 */
export function etsForecast(y: readonly number[], ctx: FitContext): GaussianForecast {
  const n = y.length;
  if (isConstant(y)) return constantForecast(y, ctx.horizon);
  const found = n > 6 ? etsForms(y, ctx.seasonLength) : null;
  const members = found ? keptMembers(found.fits) : [];
  if (!found || members.length === 0) return etsFallback(y, ctx);
  return etsResult(y, members, ctx, found.tried);
}

function etsFallback(y: readonly number[], ctx: FitContext): GaussianForecast {
  const fallback = naiveForecast(y, ctx);
  return { ...fallback, info: { fallback: y.length > 6 ? 'naive: no ETS model could be fitted' : 'naive: 6 points or fewer' } };
}

/** The forms with their Akaike weights, largest weight first (ties: lower AICc first). */
function byWeight(fits: readonly EtsFit[]): Member[] {
  const w = akaikeWeights(fits.map((f) => f.aicc));
  return fits.map((fit, i) => ({ fit, weight: w[i]! })).sort((a, b) => b.weight - a.weight || a.fit.aicc - b.fit.aicc);
}

/** The forms carrying ETS_WEIGHT_KEPT of the Akaike weight, largest first, weights renormalised. */
export function keptMembers(fits: readonly EtsFit[]): Member[] {
  if (fits.length === 0) return [];
  const kept: Member[] = [];
  let carried = 0;
  for (const m of byWeight(fits)) {
    kept.push(m);
    carried += m.weight;
    if (carried >= ETS_WEIGHT_KEPT) break;
  }
  return kept.map((m) => ({ fit: m.fit, weight: m.weight / carried }));
}

/** Forecast of the weighted forms, with `refit`: the same forms refitted to a shorter series and weighted again by their AICc there. */
function etsResult(y: readonly number[], members: readonly Member[], ctx: FitContext, tried: number): GaussianForecast {
  const h = ctx.horizon;
  const fcs = members.map((m) => forecastEts(m.fit, h));
  // A form whose mean is not finite everywhere (an explosive multiplicative fit) gives up its weight.
  const usable = members.map((_, k) => fcs[k]!.mean.every(Number.isFinite));
  const total = members.reduce((s, m, k) => (usable[k] ? s + m.weight : s), 0);
  if (total <= 0) return etsFallback(y, ctx);
  const weightOf = (k: number): number => (usable[k] ? members[k]!.weight / total : 0);
  const mean = new Array<number>(h).fill(0);
  members.forEach((_, k) => {
    for (let i = 0; i < h; i++) mean[i]! += weightOf(k) * fcs[k]!.mean[i]!;
  });
  // The mixture's variance, E[var] + var[mean] over the forms, summed about the mixture's mean (no
  // E[mu^2] - mean^2, which overflows to NaN on series of 1e155 and more). A form's variance that is
  // not finite counts 0, as the single form's did; a total that is not finite leaves the sd at 0.
  const sd = mean.map((mu, i) => {
    let v = 0;
    members.forEach((_, k) => {
      if (!usable[k]) return;
      const own = fcs[k]!.variance[i]!;
      v += weightOf(k) * ((Number.isFinite(own) && own > 0 ? own : 0) + (fcs[k]!.mean[i]! - mu) ** 2);
    });
    return Number.isFinite(v) ? Math.sqrt(v) : 0;
  });
  // One-step-ahead predictions, weighted alike: e = y − f (additive error), e = (y − f) / f (multiplicative).
  const fitted = new Array<number>(y.length).fill(0);
  members.forEach((m, k) => {
    if (!usable[k]) return;
    const w = weightOf(k);
    for (let t = 0; t < y.length; t++) {
      const e = m.fit.residuals[t]!;
      fitted[t]! += w * (m.fit.error === 'M' ? y[t]! / (1 + e) : y[t]! - e);
    }
  });
  const best = members[0]!.fit;
  return {
    mean,
    sdLow: sd,
    sdHigh: sd.slice(),
    fitted,
    info: {
      model: etsName(best),
      combination: 'Akaike weights (AICc)',
      forms: members.map((m, k) => ({ model: etsName(m.fit), weight: weightOf(k), aicc: m.fit.aicc })),
      alpha: best.alpha,
      ...(best.trend !== 'N' ? { beta: best.beta } : {}),
      ...(best.season !== 'N' ? { gamma: best.gamma } : {}),
      ...(best.damped ? { phi: best.phi } : {}),
      sigma2: best.sigma2,
      aicc: best.aicc,
      modelsTried: tried,
    },
    refit: (train, steps) => {
      // The kept forms on the shorter series, weighted by their AICc there; a form that cannot be
      // fitted there (multiplicative on data that turned non-positive, too short for the season) is
      // left out, and with none left, the full search.
      const at = { horizon: steps, seasonLength: ctx.seasonLength };
      if (train.length <= 6 || isConstant(train)) return etsForecast(train, at);
      const fits: EtsFit[] = [];
      for (const m of members) {
        const f = m.fit;
        if (f.error === 'M' && !train.every((v) => v > 0)) continue;
        if (f.season !== 'N' && train.length <= f.m) continue;
        let again: EtsFit | null = null;
        try {
          again = etsModel(train, f.m, f);
        } catch {
          again = null;
        }
        if (again && Number.isFinite(again.aicc)) fits.push(again);
      }
      return fits.length === 0 ? etsForecast(train, at) : etsResult(train, byWeight(fits), at, members.length);
    },
  };
}

export const autoEts = statisticalModel(
  {
    id: 'auto-ets',
    license: 'GPL-3.0-only',
    name: 'AutoETS',
    family: 'exponential smoothing',
    description:
      "Exponential smoothing state-space models (R forecast's ets, ported): every form with additive or multiplicative error and season, additive or damped trend, fitted and combined with Akaike weights (AICc).",
    minPoints: 4,
    capabilities: ['seasonality', 'fitted_values'],
    quantileMethod: "analytic: the mixture of the weighted forms' forecast.ets prediction variances (classes 1-3), Gaussian",
  },
  (y, ctx) => etsForecast(y, ctx),
  { naiveBlend: true },
);
