import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FLOAT32_BAND, jobScales, MAGNITUDE_MAX, MAGNITUDE_MIN, magnitudeScale, runModel } from '../../src/engine/magnitude.ts';
import { releaseSessions } from '../../src/engine/onnx/session.ts';
import { ttmR2 } from '../../src/engine/neural/ttm/model.ts';
import { BUILTIN_MODELS } from '../../src/engine/registry.ts';
import { EngineError, type ForecastJob, type ModelImpl } from '../../src/engine/types.ts';
import { CHRONOS2_LEVELS, catalogModel, installGraph, tempModelsDir } from './onnx-helpers.ts';
import { modelsDir, skipWithoutWeights } from './ttm-fixtures.ts';

const env = { modelsDir: '/nonexistent', threads: 1 };
const monthly = Array.from({ length: 48 }, (_, t) => 10 + 3 * Math.sin((2 * Math.PI * t) / 12) + (t % 5) + 0.1 * t);
const job = (model: string, y: number[], extra: Partial<ForecastJob> = {}): ForecastJob => ({
  model,
  series: [y],
  horizon: 12,
  quantileLevels: [0.1, 0.5, 0.9],
  numSamples: 3,
  seasonLength: 12,
  seed: 7,
  ...extra,
});
const relClose = (a: number, b: number, tol: number, what: string): void => assert.ok(Math.abs(a - b) <= tol * Math.abs(b), `${what}: ${a} vs ${b}`);

describe('series of extreme magnitude (src/engine/magnitude.ts)', () => {
  it('rescales only out-of-range series, by a power of two that brings the largest value into [0.5, 1) (or [1, 2) past 2^1023)', () => {
    assert.equal(magnitudeScale([1, -2, 3e5]), 1);
    assert.equal(magnitudeScale([1, -2, 3e9]), 2 ** 32);
    assert.equal(magnitudeScale([0, 0, Number.NaN]), 1);
    assert.equal(magnitudeScale([MAGNITUDE_MAX, MAGNITUDE_MIN]), 1);
    for (const y of [[1e300, -3e299], [2 * MAGNITUDE_MAX], [-1e-300, 0, 5e-301], [Number.NaN, 1e30], [Number.MAX_VALUE]]) {
      const s = magnitudeScale(y);
      assert.ok(Number.isInteger(Math.log2(s)), `${s} is a power of two`);
      const top = Math.max(...y.filter(Number.isFinite).map(Math.abs)) / s;
      assert.ok(top >= 0.5 && top < (s === 2 ** 1023 ? 2 : 1), `${y}: ${top}`);
    }
  });

  // 1e9 and 1e-9: inside doubles' range, where auto-arima forecast 0 (a zero mean) and theta drifted before ADR 0038.
  for (const factor of [1e300, 1e200, 1e-300, 1e9, 1e13, 1e-9, 1e-14]) {
    it(`every built-in model forecasts a series times ${factor} as the series times ${factor}`, async () => {
      const big = monthly.map((v) => v * factor);
      for (const m of BUILTIN_MODELS) {
        const plain = (await runModel(m, job(m.info.id, monthly), env))[0]!;
        const scaled = (await runModel(m, job(m.info.id, big), env))[0]!;
        assert.equal(typeof scaled.info?.scaledBy, 'number', m.info.id);
        // Scaling by a power of two is exact; the factor's own rounding and auto-arima's optimiser
        // tolerance (1e-8) remain.
        plain.mean.forEach((v, h) => void relClose(scaled.mean[h]!, v * factor, 1e-6, `${m.info.id} mean ${h}`));
        plain.quantiles.forEach((row, q) => {
          row.forEach((v, h) => void relClose(scaled.quantiles[q]![h]!, v * factor, 1e-6, `${m.info.id} q${q} ${h}`));
        });
        assert.ok(scaled.samples?.flat().every(Number.isFinite), m.info.id);
      }
    });
  }

  it('a level series with one spike, times 1e10 or 1e-20: auto-arima, combo and theta forecast it as at 1 (auto-arima forecast 0 before ADR 0038)', async () => {
    const spike = Array.from({ length: 40 }, (_, i) => (i === 35 ? 80 : 10 + (i % 3)));
    for (const m of BUILTIN_MODELS.filter((x) => ['auto-arima', 'combo', 'theta'].includes(x.info.id))) {
      const plain = (await runModel(m, job(m.info.id, spike, { seasonLength: null }), env))[0]!;
      for (const factor of [1e10, 1e-20]) {
        const scaled = (
          await runModel(
            m,
            job(
              m.info.id,
              spike.map((v) => v * factor),
              { seasonLength: null },
            ),
            env,
          )
        )[0]!;
        plain.mean.forEach((v, h) => void relClose(scaled.mean[h]!, v * factor, 1e-6, `${m.info.id} ×${factor} mean ${h}`));
      }
    }
  });

  it('one value near 1e300 among ordinary ones: every model still answers finite numbers or says which series is out of range', async () => {
    const spiked = monthly.map((v, t) => (t === 40 ? 1e300 : v));
    for (const m of BUILTIN_MODELS) {
      try {
        const out = (await runModel(m, job(m.info.id, spiked), env))[0]!;
        assert.ok([...out.mean, ...out.quantiles.flat()].every(Number.isFinite), m.info.id);
      } catch (err) {
        assert.ok(err instanceof EngineError && err.kind === 'bad_input' && err.seriesIndex === 0, `${m.info.id}: ${err}`);
      }
    }
  });

  it('a forecast that cannot be multiplied back (values near the largest double) is bad input naming the series, for every model', async () => {
    const extreme = monthly.map((_, t) => (t % 5 < 2 ? 1.7e308 : -1.7e308));
    for (const m of BUILTIN_MODELS) {
      await assert.rejects(
        runModel(m, { ...job(m.info.id, monthly), series: [monthly, extreme] }, env),
        (err: unknown) => err instanceof EngineError && err.kind === 'bad_input' && err.seriesIndex === 1 && /largest representable/.test(err.message),
        m.info.id,
      );
    }
  });

  it('a model answering NaN for ordinary values failed; the same for rescaled values is the input', async () => {
    const broken: ModelImpl = {
      info: { ...BUILTIN_MODELS[0]!.info, id: 'broken' },
      forecast: (j) => j.series.map(() => ({ mean: new Array(j.horizon).fill(Number.NaN), quantiles: [] })),
    };
    await assert.rejects(runModel(broken, job('broken', monthly), env), (err: unknown) => err instanceof EngineError && err.kind === 'failed');
    await assert.rejects(
      runModel(
        broken,
        job(
          'broken',
          monthly.map((v) => v * 1e300),
        ),
        env,
      ),
      (err: unknown) => err instanceof EngineError && err.kind === 'bad_input',
    );
  });

  it('TinyTimeMixer: a series times 1e-300 and times 1e300 is forecast as the series times the factor', { skip: skipWithoutWeights }, async () => {
    const hourly = Array.from({ length: 600 }, (_, t) => 10 + 3 * Math.sin((2 * Math.PI * t) / 24) + (t % 5));
    const ttmJob = (y: number[]): ForecastJob => ({ ...job(ttmR2.info.id, y), horizon: 24, seasonLength: 24, numSamples: 0 });
    const ttmEnv = { modelsDir, threads: 1 };
    const plain = (await runModel(ttmR2, ttmJob(hourly), ttmEnv))[0]!;
    for (const factor of [1e-300, 1e300]) {
      const scaled = (await runModel(ttmR2, ttmJob(hourly.map((v) => v * factor)), ttmEnv))[0]!;
      plain.mean.forEach((v, h) => void relClose(scaled.mean[h]!, v * factor, 1e-6, `ttm ×${factor} mean ${h}`));
    }
    // A window whose spread is tiny next to the series' largest value (an old spike sets the scale)
    // is still standardised by its own spread, not flattened.
    const spikedEarly = hourly.map((v, t) => (t === 5 ? 1e300 : v));
    const spiked = (await runModel(ttmR2, { ...ttmJob(spikedEarly), quantileLevels: [] }, ttmEnv))[0]!;
    plain.mean.forEach((v, h) => void relClose(spiked.mean[h]!, v, 1e-6, `ttm with an old spike, mean ${h}`));
  });

  it('float32 graphs: a scaler that squares its inputs does not overflow from 5e18 (the float32 band)', async () => {
    // A Chronos-2-contract graph whose every quantile is the root mean square of the context, squared
    // in float32 as the exports' scalers do: 20 values of 1e19 square past float32's 3.4e38.
    const model = catalogModel('sktime/chronos2-onnx');
    const { env: onnxEnv, cleanup } = await tempModelsDir();
    try {
      await installGraph(onnxEnv, model, {
        contextLength: 2048,
        idInput: { name: 'group_ids' },
        horizon: 64,
        offsets: CHRONOS2_LEVELS.map(() => 0),
        base: 'rms',
      });
      const j = (series: number[][], groupIds?: number[]): ForecastJob => ({
        ...job(model.info.id, series[0]!, { seasonLength: null, numSamples: 0, horizon: 4 }),
        series,
        ...(groupIds ? { groupIds } : {}),
      });
      const flat = (v: number): number[] => new Array<number>(20).fill(v);
      // Without the band (the doubles' one, as before) the graph answers Infinity for values inside
      // the doubles' band (2^64 is 1.8e19): a model failure, a 502, caused by the input alone.
      const unbanded: ModelImpl = { ...model, magnitude: { min: 2 ** -64, max: 2 ** 64 } };
      for (const v of [5e18, 1e19]) {
        await assert.rejects(runModel(unbanded, j([flat(v)]), onnxEnv), (err: unknown) => err instanceof EngineError && err.kind === 'failed');
      }
      // With it: rescaled by a power of two, forecast, multiplied back.
      for (const v of [1e19, 5e18, 5e9, 3e-11, 1e-25]) {
        const out = (await runModel(model, j([flat(v)]), onnxEnv))[0]!;
        assert.equal(typeof out.info?.scaledBy, 'number', String(v));
        out.mean.forEach((m, h) => void relClose(m, v, 1e-6, `rms of ${v}, step ${h}`));
      }
      // Ordinary values are not touched.
      const plain = (await runModel(model, j([flat(1234.5)]), onnxEnv))[0]!;
      assert.equal(plain.info?.scaledBy, undefined);
      relClose(plain.mean[0]!, 1234.5, 1e-6, 'plain');
      // Series forecast together share their group's scale, so a multivariate model sees their ratios.
      assert.deepEqual(jobScales(j([flat(1e19), flat(1), flat(3)], [0, 0, 1]), FLOAT32_BAND), [2 ** 64, 2 ** 64, 1]);
      assert.deepEqual(jobScales(j([flat(1e19), flat(1)]), FLOAT32_BAND), [2 ** 64, 1]);
      const grouped = await runModel(model, j([flat(1e19), flat(1e10)], [0, 0]), onnxEnv);
      assert.deepEqual(
        grouped.map((f) => f.info?.scaledBy),
        [2 ** 64, 2 ** 64],
      );
      relClose(grouped[1]!.mean[0]!, 1e10, 1e-6, 'grouped series keeps its value');
    } finally {
      await releaseSessions();
      await cleanup();
    }
  });
});
