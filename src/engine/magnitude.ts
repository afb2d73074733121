import { EngineError, type ForecastJob, type ModelEnv, type ModelImpl, type SeriesForecast } from './types.ts';

/**
 * Series of extreme magnitude. Every model reaches the numbers of a job through `runModel`, which
 * divides a series whose largest absolute value is past MAGNITUDE_MAX (or, non-zero, under
 * MAGNITUDE_MIN) by a power of two, runs the model, and multiplies the forecast back.
 *
 * Why: the models' arithmetic has a range. Sums of squares overflow from about 1e154 (theta failed
 * near 1e200 and took combo with it; the random walks' intervals became infinite), TinyTimeMixer's
 * standardisation overflowed on values near 1e300 and underflowed near 1e-300 (it then forecast
 * 6.5e-5 for a series of 1e-299), and float32 graphs cannot hold values past 3.4e38. Dividing by a
 * power of two is exact and every model here is scale-equivariant (statistical models exactly,
 * the networks by their own scalers), so the forecast multiplied back is the one the model gives
 * in its range. Series within [MAGNITUDE_MIN, MAGNITUDE_MAX] are not touched.
 *
 * A forecast that cannot be multiplied back (its values or interval past about 1.8e308) is the
 * input's fault: a 422 naming the series, not a model failure.
 */
export const MAGNITUDE_MAX = 2 ** 64;
export const MAGNITUDE_MIN = 2 ** -64;

/**
 * The power of two that brings the largest absolute finite value into [0.5, 1) when it is out of
 * range ([1, 2) past 2^1023, the largest power of two a double holds); else 1.
 */
export function magnitudeScale(y: ArrayLike<number>): number {
  let max = 0;
  for (let i = 0; i < y.length; i++) {
    const v = Math.abs(y[i]!);
    if (Number.isFinite(v) && v > max) max = v;
  }
  if (max === 0 || (max <= MAGNITUDE_MAX && max >= MAGNITUDE_MIN)) return 1;
  return 2 ** Math.min(Math.floor(Math.log2(max)) + 1, 1023);
}

const allFinite = (rows: readonly (readonly number[])[]): boolean => rows.every((row) => row.every((v) => Number.isFinite(v)));

/**
 * Runs a model on a job with every out-of-range series rescaled (see above), and checks that the
 * forecast's numbers (mean, quantiles, samples) are finite: a model that answers NaN or Infinity
 * for ordinary values failed ('failed'); for rescaled values the input is out of range ('bad_input').
 */
export async function runModel(impl: ModelImpl, job: ForecastJob, env: ModelEnv): Promise<SeriesForecast[]> {
  const scales = job.series.map((s) => magnitudeScale(s));
  const scaled = scales.some((s) => s !== 1);
  const run = scaled ? { ...job, series: job.series.map((s, i) => (scales[i] === 1 ? s : s.map((v) => v / scales[i]!))) } : job;
  const forecasts = await impl.forecast(run, env);
  return forecasts.map((fc, i) => {
    const scale = scales[i] ?? 1;
    const out = scale === 1 ? fc : unscale(fc, scale);
    if (!(allFinite([out.mean]) && allFinite(out.quantiles) && allFinite(out.samples ?? []))) {
      if (scale === 1) throw new EngineError('failed', `${impl.info.id} produced values that are not finite numbers for series ${i}`, i);
      throw new EngineError(
        'bad_input',
        `series ${i}: ${impl.info.id}'s forecast of these values, or its interval, is past the largest representable number (about 1.8e308); divide the series by a power of ten (e.g. 1e300) and multiply the forecast back`,
        i,
      );
    }
    return out;
  });
}

function unscale(fc: SeriesForecast, scale: number): SeriesForecast {
  const times = (row: readonly number[]): number[] => row.map((v) => v * scale);
  const out: SeriesForecast = {
    ...fc,
    mean: times(fc.mean),
    quantiles: fc.quantiles.map(times),
    info: { ...fc.info, scaledBy: scale },
  };
  if (fc.samples) out.samples = fc.samples.map(times);
  if (fc.fitted) out.fitted = times(fc.fitted);
  return out;
}
