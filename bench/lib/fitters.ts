import type { FitContext } from '../../src/engine/models/common.ts';
import { arimaForecast } from '../../src/engine/models/arima.ts';
import { cesForecast } from '../../src/engine/models/ces.ts';
import { comboForecast } from '../../src/engine/models/combo.ts';
import { etsForecast } from '../../src/engine/models/ets.ts';
import { mstlForecast } from '../../src/engine/models/mstl.ts';
import { driftForecast, naiveForecast, seasonalNaiveForecast } from '../../src/engine/models/simple.ts';
import { thetaForecast } from '../../src/engine/models/theta.ts';
import type { GaussianForecast } from '../../src/engine/stats/distribution.ts';

/** The statistical models' uncalibrated fits by catalog id, for the in-process calibration studies. */
export const FITTERS: Record<string, (y: readonly number[], ctx: FitContext) => GaussianForecast> = {
  naive: naiveForecast,
  'seasonal-naive': seasonalNaiveForecast,
  drift: driftForecast,
  'auto-ets': etsForecast,
  'auto-arima': arimaForecast,
  theta: (y, ctx) => thetaForecast(y, ctx),
  mstl: mstlForecast,
  ces: (y, ctx) => cesForecast(y, ctx),
  combo: comboForecast,
};
