import assert from 'node:assert/strict';
import { after, beforeEach, describe, it } from 'node:test';
import { TTM_R2_ONNX_SPEC } from '../../src/engine/onnx/catalog.ts';
import { onnxModel } from '../../src/engine/onnx/driver.ts';
import { releaseSessions } from '../../src/engine/onnx/session.ts';
import { EngineError, type ModelEnv } from '../../src/engine/types.ts';
import { DECILES, catalogModel, close, installGraph, job, levelOffsets, tempModelsDir } from './onnx-helpers.ts';

let env: ModelEnv;
let cleanup: () => Promise<void> = async () => {};

beforeEach(async () => {
  await cleanup();
  ({ env, cleanup } = await tempModelsDir());
});
after(async () => {
  await releaseSessions();
  await cleanup();
});

describe('TinyCast ONNX contract', () => {
  const model = catalogModel('sktime/tinycast-onnx');

  it('rolls out long horizons by feeding the median back, block by block', async () => {
    // One 48-step block: quantiles[b, h, k] = last value + (h + 1) + offset(level k)
    await installGraph(env, model, { contextLength: 2048, horizon: 48, offsets: levelOffsets(DECILES), base: 'last', stepSlope: 1 });
    const out = await model.forecast(
      job({
        series: [
          [3, 4, 10],
          [0, 0, -5],
        ],
        horizon: 100,
        quantileLevels: [0.1, 0.9],
      }),
      env,
    );
    for (const [i, last] of [10, -5].entries()) {
      const f = out[i];
      assert.equal(f?.mean.length, 100);
      // with the median fed back the trajectory continues: step t is last + t + 1
      for (const t of [0, 47, 48, 95, 96, 99]) assert.ok(close(f?.mean[t], last + t + 1), `series ${i} step ${t}: ${f?.mean[t]}`);
      assert.ok(close(f?.quantiles[0]?.[99], last + 100 - 4));
      assert.equal(f?.info?.rollout_blocks, 3);
    }
  });

  it('pads with the first value and imputes gaps linearly (finite-only graph)', async () => {
    // out = last + mean(window): the mean shows what the padding and imputation put there.
    await installGraph(env, model, { contextLength: 2048, horizon: 48, offsets: levelOffsets(DECILES), base: 'last', meanWeight: 1 });
    const out = await model.forecast(
      job({
        series: [
          [5, Number.NaN, 7],
          [5, 6, Number.NaN],
        ],
        horizon: 1,
        quantileLevels: [],
      }),
      env,
    );
    const meanA = (2046 * 5 + 6 + 7) / 2048;
    assert.ok(close(out[0]?.mean[0], 7 + meanA), `${out[0]?.mean[0]}`);
    assert.equal(out[0]?.info?.imputed, 1);
    // a trailing gap takes the last observed value
    const meanB = (2046 * 5 + 6 + 6) / 2048;
    assert.ok(close(out[1]?.mean[0], 6 + meanB), `${out[1]?.mean[0]}`);
  });

  it('stops at its documented longest rollout', async () => {
    await installGraph(env, model, { contextLength: 2048, horizon: 48, offsets: levelOffsets(DECILES), base: 'last' });
    await assert.rejects(async () => model.forecast(job({ series: [[1, 2]], horizon: 721 }), env), { kind: 'bad_input' });
  });
});

describe('TinyTimeMixer r2 ONNX contract (point forecast)', () => {
  const model = onnxModel({
    info: { ...catalogModel('sktime/tinycast-onnx').info, id: 'test/ttm-r2-onnx', maxHorizon: 96, minPoints: 2 },
    files: { repo: 'test/ttm-r2-onnx', revision: 'main', files: [{ path: TTM_R2_ONNX_SPEC.file, sha256: null }] },
    spec: TTM_R2_ONNX_SPEC,
  });

  it('left-pads with the observed mean, as the TypeScript TTM does with short series', async () => {
    await installGraph(env, model, { contextLength: 512, horizon: 96, offsets: null, base: 'last', meanWeight: 1 });
    const [f] = await model.forecast(job({ series: [[...Array<number>(5).fill(3), ...Array<number>(5).fill(5)]], horizon: 96, quantileLevels: [] }), env);
    assert.equal(f?.mean.length, 96);
    // the window's mean is the observed mean (4), not pulled towards 0 by the padding
    assert.ok(close(f?.mean[0], 5 + 4), `${f?.mean[0]}`);
    assert.deepEqual(f?.quantiles, []);
    assert.equal(f?.info?.padded, 502);
  });

  it('fills gaps with the observed mean too (the graph needs finite values)', async () => {
    await installGraph(env, model, { contextLength: 512, horizon: 96, offsets: null, base: 'last', meanWeight: 1 });
    const [f] = await model.forecast(job({ series: [[Number.NaN, 2, Number.NaN, 4, 10, Number.NaN]], quantileLevels: [] }), env);
    // last value = the fill (16 / 3), window mean = the observed mean (16 / 3)
    assert.ok(close(f?.mean[0], 32 / 3), `${f?.mean[0]}`);
    assert.equal(f?.info?.imputed, 3);
  });

  it('calibrates quantiles on in-context backtests', async () => {
    await installGraph(env, model, { contextLength: 512, horizon: 96, offsets: null, base: 'last', stepSlope: 1 });
    // A straight line: the graph (last + h + 1) is exact, so every interval has zero width.
    const line = Array.from({ length: 700 }, (_, t) => t);
    const [exact] = await model.forecast(job({ series: [line], horizon: 96, quantileLevels: [0.1, 0.9] }), env);
    assert.ok(close(exact?.quantiles[0]?.[50], 700 + 50));
    assert.ok(close(exact?.quantiles[1]?.[50], 700 + 50));
    // Flat noise around 0: the graph drifts upwards, so its errors are negative and grow with h.
    const noisy = Array.from({ length: 700 }, (_, t) => ((t * 7919) % 13) - 6);
    const [f] = await model.forecast(job({ series: [noisy], horizon: 96, quantileLevels: [0.1, 0.5, 0.9], numSamples: 20 }), env);
    for (let h = 0; h < 96; h++) {
      const [q1, q5, q9] = [f?.quantiles[0]?.[h] ?? NaN, f?.quantiles[1]?.[h] ?? NaN, f?.quantiles[2]?.[h] ?? NaN];
      assert.ok(q1 <= q5 && q5 <= q9, `step ${h} not monotone`);
      // past step 20 the drift (h + 1) exceeds the noise's range (12), so every error is negative
      if (h >= 20) assert.ok(q9 < (f?.mean[h] ?? NaN), `step ${h}: the errors say the point forecast is too high`);
    }
    assert.ok((f?.quantiles[2]?.[0] ?? 0) - (f?.quantiles[0]?.[0] ?? 0) > 0, 'a non-degenerate interval');
    assert.equal(f?.samples?.length, 20);
    assert.match(String(f?.info?.quantile_method), /conformal: signed errors of \d+ in-context backtests/);
  });

  it('refuses quantiles for series too short to backtest, but gives the point forecast', async () => {
    await installGraph(env, model, { contextLength: 512, horizon: 96, offsets: null, base: 'last' });
    const short = Array.from({ length: 200 }, (_, t) => t);
    await assert.rejects(
      // 96 steps: two backtests every 48 steps, each with 96 points of history, need 96 + 96 + 48 = 240.
      async () => model.forecast(job({ series: [short], horizon: 96 }), env),
      (e: unknown) => {
        return e instanceof EngineError && e.kind === 'bad_input' && /at least 240 points/.test(e.message);
      },
    );
    // 4 steps need only 96 + 4 + 2 points: the same series is long enough.
    const [q] = await model.forecast(job({ series: [short] }), env);
    assert.equal(q?.quantiles.length, 3);
    const [f] = await model.forecast(job({ series: [short], quantileLevels: [] }), env);
    assert.ok(close(f?.mean[0], 199));
    await assert.rejects(async () => model.forecast(job({ series: [short], horizon: 97, quantileLevels: [] }), env), { kind: 'bad_input' });
  });
});
