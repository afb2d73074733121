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
export const MAGNITUDE_MAX = 2 ** 20;
export const MAGNITUDE_MIN = 2 ** -20;

/** The values a model computes safely with: series whose largest |value| is outside are rescaled. */
export interface MagnitudeBand {
  min: number;
  max: number;
}
/**
 * Models computing in doubles (every built-in statistical model). Narrower than doubles allow: the
 * optimisers have absolute tolerances and step sizes, so a fit was not the same in every unit.
 * Before (band 2^±64), auto-arima chose a zero mean, and forecast 0, for a level series times 1e8
 * to 1e17 (largest values past about 1e9), combo with it; theta drifted by 0.5% past about 1e11
 * and by 20% under about 1e-13 (ADR 0038). Within 2^±20 (about 1e-6 to 1e6) every built-in
 * forecasts a series times any factor as the series times that factor; outside, the series is
 * brought into [0.5, 1), where it does. M3 (largest values 1,109 to 86,730) and ETT are inside.
 */
export const FLOAT64_BAND: MagnitudeBand = { min: MAGNITUDE_MIN, max: MAGNITUDE_MAX };
/**
 * Models computing in float32 (ONNX graphs): their scalers square the inputs, and float32 holds
 * squares only up to 2^128 (3.4e38) and down to 2^-126, so a sum of 1,000 squares overflowed from
 * about 1e17 and values under about 1e-19 squared to nothing (test/engine/magnitude.test.ts).
 * Inside 2^±32 the squares of a 16,384-point context stay normal with a margin of 2^50.
 */
export const FLOAT32_BAND: MagnitudeBand = { min: 2 ** -32, max: 2 ** 32 };

/** The largest absolute finite value (0 when none). */
function maxAbs(y: ArrayLike<number>): number {
  let max = 0;
  for (let i = 0; i < y.length; i++) {
    const v = Math.abs(y[i]!);
    if (Number.isFinite(v) && v > max) max = v;
  }
  return max;
}

/** The power of two for a largest |value| of `max` (see magnitudeScale). */
function scaleFor(max: number, band: MagnitudeBand): number {
  if (max === 0 || (max <= band.max && max >= band.min)) return 1;
  return 2 ** Math.min(Math.floor(Math.log2(max)) + 1, 1023);
}

/**
 * The power of two that brings the largest absolute finite value into [0.5, 1) when it is out of
 * the band ([1, 2) past 2^1023, the largest power of two a double holds); else 1.
 */
export function magnitudeScale(y: ArrayLike<number>, band: MagnitudeBand = FLOAT64_BAND): number {
  return scaleFor(maxAbs(y), band);
}

/**
 * One scale per series. Series forecast together (`groupIds`: a multivariate model relates them)
 * share their group's scale, the one of the group's largest value, so that their ratios are kept.
 */
export function jobScales(job: ForecastJob, band: MagnitudeBand = FLOAT64_BAND): number[] {
  const maxima = job.series.map((s) => maxAbs(s));
  const groups = job.groupIds;
  if (!groups || groups.length !== maxima.length) return maxima.map((m) => scaleFor(m, band));
  const groupMax = new Map<number, number>();
  groups.forEach((g, i) => void groupMax.set(g, Math.max(groupMax.get(g) ?? 0, maxima[i]!)));
  return groups.map((g) => scaleFor(groupMax.get(g)!, band));
}

const allFinite = (rows: readonly (readonly number[])[]): boolean => rows.every((row) => row.every((v) => Number.isFinite(v)));

/**
 * Runs a model on a job with every out-of-range series rescaled (see above), and checks that the
 * forecast's numbers (mean, quantiles, samples) are finite: a model that answers NaN or Infinity
 * for ordinary values failed ('failed'); for rescaled values the input is out of range ('bad_input').
 */
export async function runModel(impl: ModelImpl, job: ForecastJob, env: ModelEnv): Promise<SeriesForecast[]> {
  const scales = jobScales(job, impl.magnitude ?? FLOAT64_BAND);
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
