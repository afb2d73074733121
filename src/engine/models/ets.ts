import { sdFromInterval, type GaussianForecast } from '../stats/distribution.ts';
import { deseasonalise } from '../stats/season.ts';
import { augurs } from '../stats/wasm.ts';
import { statisticalModel, type FitContext } from './common.ts';
import { naiveForecast } from './simple.ts';

/** Interval level asked of augurs; its bounds are turned back into standard deviations. */
const LEVEL = 0.95;

/**
 * AutoETS from @bsull/augurs (a port of statsforecast's AutoETS: error, trend and damping chosen
 * by AICc among the non-seasonal ETS models). augurs 0.10 has no seasonal ETS component, so a
 * season is handled the M4-benchmark way: classical decomposition (when R thetaf's ACF test finds
 * it), ETS on the adjusted series, the seasonal index put back on the forecast and its intervals.
 * Series too short for augurs (it needs a handful of points) fall back to the naive model.
 */
export function etsForecast(y: readonly number[], ctx: FitContext, spec = 'ZZZ'): GaussianForecast {
  const seasonal = deseasonalise(y, ctx.seasonLength);
  const n = y.length;
  const { AutoETS } = augurs().ets;
  const model = new AutoETS(1, spec);
  try {
    let f: ReturnType<typeof model.predict>;
    try {
      model.fit(Float64Array.from(seasonal.adjusted));
      f = model.predict(ctx.horizon, LEVEL);
    } catch (err) {
      const fallback = naiveForecast(y, ctx);
      return { ...fallback, info: { fallback: `naive: augurs AutoETS could not fit (${err instanceof Error ? err.message : String(err)})` } };
    }
    const lower = f.intervals?.lower ?? f.point;
    const upper = f.intervals?.upper ?? f.point;
    const { sdLow, sdHigh } = sdFromInterval(f.point, lower, upper, LEVEL);
    return {
      mean: f.point.map((v, h) => seasonal.reseasonalise(v, n + h)),
      sdLow: sdLow.map((sd, h) => seasonal.scaleSd(sd, n + h)),
      sdHigh: sdHigh.map((sd, h) => seasonal.scaleSd(sd, n + h)),
      info: { seasonalAdjustment: seasonal.type },
    };
  } finally {
    model.free();
  }
}

export const autoEts = statisticalModel(
  {
    id: 'auto-ets',
    name: 'AutoETS',
    family: 'exponential smoothing',
    description: 'Exponential smoothing with automatic choice of error, trend and damping (AICc), via @bsull/augurs; seasonality by classical decomposition.',
    minPoints: 4,
    capabilities: ['seasonality'],
    quantileMethod: "analytic: the ETS model's own prediction intervals (augurs), read as Gaussian sd per step, seasonal index applied",
  },
  (y, ctx) => etsForecast(y, ctx),
);
