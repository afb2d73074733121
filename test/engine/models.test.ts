import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { thetaForecast, fitThetaWith, thetaPointForecast } from '../../src/engine/models/theta.ts';
import { driftForecast, naiveForecast, seasonalNaiveForecast } from '../../src/engine/models/simple.ts';
import { BUILTIN_MODELS as MODEL_IMPLS } from '../../src/engine/registry.ts';
import { mulberry32 } from '../../src/engine/stats/prng.ts';
import { EngineError, type ForecastJob, type SeriesForecast } from '../../src/engine/types.ts';

const env = { modelsDir: '/nonexistent', threads: 1 };
const close = (a: number, b: number, tol = 1e-9): void => assert.ok(Math.abs(a - b) <= tol, `${a} != ${b}`);

/** 5 years of monthly data: trend, a season, seeded noise. */
const noise = mulberry32(99);
const monthly = Array.from({ length: 60 }, (_, t) => 200 + 1.5 * t + 25 * Math.sin((2 * Math.PI * t) / 12) + 10 * (noise() - 0.5));

function job(over: Partial<ForecastJob>): ForecastJob {
  return { model: '', series: [monthly], horizon: 12, quantileLevels: [0.05, 0.1, 0.5, 0.9, 0.95], numSamples: 0, seasonLength: 12, seed: 7, ...over };
}

function checkShape(fc: SeriesForecast, j: ForecastJob): void {
  assert.equal(fc.mean.length, j.horizon);
  assert.equal(fc.quantiles.length, j.quantileLevels.length);
  for (const row of fc.quantiles) assert.equal(row.length, j.horizon);
  for (let h = 0; h < j.horizon; h++) {
    assert.ok(Number.isFinite(fc.mean[h]));
    for (let r = 1; r < fc.quantiles.length; r++) assert.ok(fc.quantiles[r]![h]! >= fc.quantiles[r - 1]![h]!, 'quantiles monotone in the level');
  }
  if (j.numSamples > 0) {
    assert.equal(fc.samples?.length, j.numSamples);
    for (const p of fc.samples ?? []) assert.equal(p.length, j.horizon);
  } else {
    assert.equal(fc.samples, undefined);
  }
}

describe('every built-in model', () => {
  const ids = MODEL_IMPLS.map((m) => m.info.id);
  it('has the required ids, provider builtin, and is statistical', () => {
    for (const id of ['naive', 'seasonal-naive', 'auto-ets', 'auto-arima', 'theta', 'mstl']) assert.ok(ids.includes(id), id);
    for (const m of MODEL_IMPLS) {
      assert.equal(m.info.provider, 'builtin');
      assert.equal(m.files, undefined);
      assert.ok(m.info.quantileMethod.length > 0);
    }
  });

  for (const impl of MODEL_IMPLS) {
    describe(impl.info.id, () => {
      it('returns the right shapes, monotone quantiles and samples', async () => {
        const j = job({ model: impl.info.id, numSamples: 5, series: [monthly, monthly.map((v) => v * 2)] });
        const out = await impl.forecast(j, env);
        assert.equal(out.length, 2);
        for (const fc of out) checkShape(fc, j);
        assert.ok(out[0]!.quantiles[0]![0]! < out[0]!.quantiles[4]![0]!, 'a real spread');
      });
      it('is deterministic for the same job, and the seed changes the samples', async () => {
        const j = job({ model: impl.info.id, numSamples: 3 });
        const a = await impl.forecast(j, env);
        assert.deepEqual(a, await impl.forecast(j, env));
        const b = await impl.forecast({ ...j, seed: 8 }, env);
        assert.deepEqual(a[0]!.mean, b[0]!.mean);
        assert.notDeepEqual(a[0]!.samples, b[0]!.samples);
      });
      it('handles missing values (leading, interior, trailing)', async () => {
        const holes = monthly.map((v, t) => (t < 3 || t === 20 || t === 21 || t === 59 ? NaN : v));
        const j = job({ model: impl.info.id, series: [holes] });
        const [fc] = await impl.forecast(j, env);
        checkShape(fc!, j);
        assert.equal(fc!.info?.missingFilled, 3);
      });
      it('rejects an all-NaN or too-short series as bad input with its index', async () => {
        const j = job({ model: impl.info.id, series: [monthly, [NaN, NaN, NaN]] });
        await assert.rejects(
          async () => impl.forecast(j, env),
          (e: unknown) => e instanceof EngineError && e.kind === 'bad_input' && e.seriesIndex === 1,
        );
        const short = new Array<number>(impl.info.minPoints - 1).fill(1);
        await assert.rejects(
          async () => impl.forecast(job({ model: impl.info.id, series: [short] }), env),
          (e: unknown) => e instanceof EngineError && e.kind === 'bad_input',
        );
      });
      it('falls back gracefully on a series shorter than its season, and detects seasons', async () => {
        const j = job({ model: impl.info.id, series: [monthly.slice(0, Math.max(impl.info.minPoints, 7))], seasonLength: 12, horizon: 3 });
        checkShape((await impl.forecast(j, env))[0]!, j);
        const constant = job({ model: impl.info.id, series: [new Array<number>(30).fill(5)], seasonLength: null, horizon: 4 });
        const [flat] = await impl.forecast(constant, env);
        for (const v of flat!.mean) close(v, 5, 1e-6);
        const [detected] = await impl.forecast(job({ model: impl.info.id, seasonLength: null }), env);
        assert.equal(detected!.info?.seasonLength, 12);
        assert.equal(detected!.info?.seasonDetected, true);
      });
    });
  }
});

describe('random-walk family: hand-computed values', () => {
  const y = [1, 2, 4, 7];
  it('naive: last value, sd = sigma sqrt(h) with sigma = rms of differences', () => {
    const fc = naiveForecast(y, { horizon: 2, seasonLength: 1 });
    const sigma = Math.sqrt((1 + 4 + 9) / 3);
    assert.deepEqual(fc.mean, [7, 7]);
    close(fc.sdHigh[0]!, sigma);
    close(fc.sdHigh[1]!, sigma * Math.SQRT2);
  });
  it('drift: slope (7-1)/3 = 2, sigma from detrended differences with n-2 degrees of freedom', () => {
    const fc = driftForecast(y, { horizon: 2, seasonLength: 1 });
    assert.deepEqual(fc.mean, [9, 11]);
    const sigma = Math.sqrt(((1 - 2) ** 2 + 0 + (3 - 2) ** 2) / 2);
    close(fc.sdLow[0]!, sigma * Math.sqrt(1 * (1 + 1 / 3)));
    close(fc.sdLow[1]!, sigma * Math.sqrt(2 * (1 + 2 / 3)));
  });
  it('seasonal naive: repeats the last season, sd grows per full season', () => {
    const fc = seasonalNaiveForecast([1, 2, 3, 2, 3, 4], { horizon: 4, seasonLength: 3 });
    assert.deepEqual(fc.mean, [2, 3, 4, 2]);
    close(fc.sdHigh[0]!, 1);
    close(fc.sdHigh[3]!, Math.SQRT2);
  });
});

describe('theta: hand-computed recursion', () => {
  it('STM with alpha 0.5, theta 2, level0 1 on y = 1, 3, 2', () => {
    const y = [1, 3, 2];
    // OLS on t = 1..3: slope B = 0.5, intercept A = 2 - 2 * 0.5 = 1.
    const A = 1;
    const B = 0.5;
    const a = 0.5;
    const w = 1 - 1 / 2;
    let level = a * 1 + (1 - a) * 1; // l_0 = 1
    const mu0 = 1 + w * (A + B);
    const fit = fitThetaWith(y, 'STM', 1, a, 2);
    close(y[0]! - fit.errors[0]!, mu0);
    const mu1 = level + w * (A * (1 - a) ** 1 + (B * (1 - (1 - a) ** 2)) / a);
    close(y[1]! - fit.errors[1]!, mu1);
    level = a * 3 + (1 - a) * level;
    const mu2 = level + w * (A * (1 - a) ** 2 + (B * (1 - (1 - a) ** 3)) / a);
    close(y[2]! - fit.errors[2]!, mu2);
    level = a * 2 + (1 - a) * level;
    const f1 = level + w * (A * (1 - a) ** 3 + (B * (1 - (1 - a) ** 4)) / a);
    close(thetaPointForecast(fit, 3, 1)[0]!, f1);
  });
  it('continues a straight line with the slope halved (the classical theta result)', () => {
    const line = Array.from({ length: 40 }, (_, t) => 10 + 2 * t);
    const fc = thetaForecast(line, { horizon: 3, seasonLength: 1 }, ['STM']);
    // With alpha near 1 the level sits on the last value and the drift is B/2 per step (+ B/2 / alpha).
    assert.ok(fc.mean[1]! - fc.mean[0]! > 0.9 && fc.mean[1]! - fc.mean[0]! < 1.1, `step ${fc.mean[1]! - fc.mean[0]!}`);
  });
});
