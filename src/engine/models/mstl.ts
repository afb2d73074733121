import { sdFromInterval, type GaussianForecast } from '../stats/distribution.ts';
import { detectSeasonLengths } from '../stats/season.ts';
import { augurs } from '../stats/wasm.ts';
import { statisticalModel, type FitContext } from './common.ts';
import { etsForecast } from './ets.ts';

const LEVEL = 0.95;

/**
 * MSTL (Bandara, Hyndman & Bergmeir 2021) from @bsull/augurs: STL repeatedly peels off one
 * seasonal component per period, AutoETS forecasts the deseasonalised rest and the last season of
 * each component is repeated. Periods: the job's season length plus any other period the
 * detector finds; only periods with at least two full cycles in the data are used. With none
 * left it is plain AutoETS.
 */
export function mstlForecast(y: readonly number[], ctx: FitContext): GaussianForecast {
  const n = y.length;
  const periods = new Set<number>();
  if (ctx.seasonLength > 1) periods.add(ctx.seasonLength);
  for (const p of detectSeasonLengths(y)) periods.add(p);
  const usable = [...periods].filter((p) => p > 1 && n >= 2 * p + 1).sort((a, b) => a - b);
  if (usable.length === 0) {
    const fc = etsForecast(y, { ...ctx, seasonLength: 1 });
    return { ...fc, info: { ...fc.info, periods: [], fallback: 'auto-ets: no season with two full cycles' } };
  }
  const { MSTL } = augurs().mstl;
  const model = MSTL.ets(Uint32Array.from(usable));
  try {
    let f: ReturnType<typeof model.predict>;
    try {
      model.fit(Float64Array.from(y));
      f = model.predict(ctx.horizon, LEVEL);
    } catch (err) {
      const fc = etsForecast(y, { ...ctx, seasonLength: 1 });
      return { ...fc, info: { ...fc.info, fallback: `auto-ets: MSTL could not fit (${err instanceof Error ? err.message : String(err)})` } };
    }
    const { sdLow, sdHigh } = sdFromInterval(f.point, f.intervals?.lower ?? f.point, f.intervals?.upper ?? f.point, LEVEL);
    return { mean: f.point, sdLow, sdHigh, info: { periods: usable } };
  } finally {
    model.free();
  }
}

export const mstl = statisticalModel(
  {
    id: 'mstl',
    name: 'MSTL',
    family: 'decomposition',
    description:
      'Multiple seasonal-trend decomposition by LOESS with an AutoETS trend forecast, via @bsull/augurs; for data with several seasons (hourly: day and week).',
    minPoints: 4,
    capabilities: ['seasonality', 'multiple_seasonalities'],
    quantileMethod: "analytic: the AutoETS trend model's prediction intervals (augurs), seasonal components taken as known",
  },
  mstlForecast,
);
