import type { GaussianForecast } from '../stats/distribution.ts';
import { arimaForecast } from './arima.ts';
import { statisticalModel, type FitContext } from './common.ts';
import { etsForecast } from './ets.ts';
import { thetaForecast } from './theta.ts';

/** combo's members, in the order it averages them (the ensemble reuses their forecasts: src/ensemble/service.ts). */
export const COMBO_MEMBERS = ['auto-ets', 'auto-arima', 'theta'] as const;
const MEMBER_FITTERS: readonly ((y: readonly number[], ctx: FitContext) => GaussianForecast)[] = [
  etsForecast,
  arimaForecast,
  (y, ctx) => thetaForecast(y, ctx),
];

/**
 * Equal-weight combination of AutoETS, AutoARIMA and Theta: combining a few good methods is
 * the most reliable gain of the M competitions (M3's and M4's best simple entries are
 * combinations; R's ETS+ARIMA mean scores 12.78 on M3 where either alone scores 13.07/13.60).
 * Intervals: the mean of the members' standard deviations, which is the sd of their average if
 * their errors were perfectly correlated: an upper bound, so the interval is never too narrow
 * for that reason.
 */
export function comboForecast(y: readonly number[], ctx: FitContext): GaussianForecast {
  return average(
    MEMBER_FITTERS.map((fit) => fit(y, ctx)),
    ctx,
  );
}

/** The members' mean; `refit` refits each member's chosen model (theta, which has no search, in full). */
function average(members: GaussianForecast[], ctx: FitContext): GaussianForecast {
  const avg = (pick: (f: GaussianForecast) => number[]): number[] =>
    pick(members[0]!).map((_, h) => members.reduce((s, f) => s + pick(f)[h]!, 0) / members.length);
  return {
    mean: avg((f) => f.mean),
    sdLow: avg((f) => f.sdLow),
    sdHigh: avg((f) => f.sdHigh),
    info: { members: [...COMBO_MEMBERS], memberInfo: members.map((m) => m.info) },
    refit: (train, h) => {
      const at = { horizon: h, seasonLength: ctx.seasonLength };
      return average(
        members.map((m, k) => (m.refit ? m.refit(train, h) : MEMBER_FITTERS[k]!(train, at))),
        at,
      );
    },
    // A member that searches again on short series (auto-arima) does so inside combo too.
    ...(members.some((m) => m.research)
      ? {
          research: (train: number[], h: number) => {
            const at = { horizon: h, seasonLength: ctx.seasonLength };
            return average(
              members.map((m, k) => (m.research ? m.research(train, h) : m.refit ? m.refit(train, h) : MEMBER_FITTERS[k]!(train, at))),
              at,
            );
          },
        }
      : {}),
  };
}

export const combo = statisticalModel(
  {
    id: 'combo',
    license: 'GPL-3.0-only',
    name: 'ETS + ARIMA + Theta combination',
    family: 'combination',
    description: 'Mean of the AutoETS, AutoARIMA and Theta forecasts: slower than each, usually more accurate than any.',
    minPoints: 4,
    capabilities: ['seasonality'],
    quantileMethod: "analytic (Gaussian): members' forecast means averaged, sd = mean of the members' sd (conservative)",
  },
  comboForecast,
  { naiveBlend: true },
);
