import assert from 'node:assert/strict';
import { after, beforeEach, describe, it } from 'node:test';
import { releaseSessions } from '../../src/engine/onnx/session.ts';
import { EngineError, type ModelEnv } from '../../src/engine/types.ts';
import { DECILES, T0_LEVELS, catalogModel, close, installGraph, job, levelOffsets, tempModelsDir } from './onnx-helpers.ts';

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

describe('Toto-2.0-22m ONNX contract', () => {
  const model = catalogModel('sktime/toto2-22m-onnx');

  it('runs variates sharing a series id jointly and sorts crossing quantiles', async () => {
    // Crossing offsets: the graph emits level 0.2 above level 0.3, as an int8 graph may.
    const offsets = levelOffsets(DECILES);
    [offsets[1], offsets[2]] = [offsets[2] ?? 0, offsets[1] ?? 0];
    await installGraph(env, model, {
      contextLength: 2048,
      idInput: { name: 'series_ids' },
      horizon: 96,
      offsets,
      base: 'group_nanmean',
    });
    const out = await model.forecast(
      job({
        series: [
          [1, 3],
          [5, 7, Number.NaN],
          [100, 100],
        ],
        groupIds: [0, 0, 1],
        horizon: 96,
        quantileLevels: DECILES,
      }),
      env,
    );
    assert.equal(out.length, 3);
    assert.equal(out[0]?.mean.length, 96);
    assert.ok(close(out[0]?.mean[95], 4));
    assert.ok(close(out[1]?.mean[0], 4));
    assert.ok(close(out[2]?.mean[0], 100));
    const q = out[0]?.quantiles.map((row) => row[0] ?? NaN) ?? [];
    for (let k = 1; k < q.length; k++) assert.ok((q[k] ?? NaN) >= (q[k - 1] ?? NaN), `quantile ${k} crosses`);
    // sorted: the 0.2 row now holds the smaller of the two swapped offsets
    assert.ok(close(q[1], 4 - 3));
    assert.ok(close(q[2], 4 - 2));
  });

  it('refuses horizon 97 and levels below 0.1', async () => {
    await installGraph(env, model, {
      contextLength: 2048,
      idInput: { name: 'series_ids' },
      horizon: 96,
      offsets: levelOffsets(DECILES),
      base: 'nanmean',
    });
    await assert.rejects(async () => model.forecast(job({ series: [[1, 2]], horizon: 97 }), env), { kind: 'bad_input' });
    await assert.rejects(async () => model.forecast(job({ series: [[1, 2]], quantileLevels: [0.05] }), env), { kind: 'bad_input' });
  });

  it('reads the quantile levels from manifest.json when the repo has one', async () => {
    const manifestLevels = [0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95];
    await installGraph(
      env,
      model,
      { contextLength: 2048, idInput: { name: 'series_ids' }, horizon: 96, offsets: levelOffsets(manifestLevels), base: 'nanmean' },
      {
        schema_version: 1,
        artifact: { filename: 'toto2-22m-ctx2048-h96.onnx' },
        contract: {
          inputs: [
            { name: 'context', dtype: 'float32', shape: ['variates', 2048] },
            { name: 'series_ids', dtype: 'int64', shape: ['variates'] },
          ],
          output: { name: 'quantiles', dtype: 'float32', shape: ['variates', 96, 9], levels: manifestLevels },
        },
      },
    );
    // 0.05 is outside the catalog's deciles but inside the manifest's levels.
    const [f] = await model.forecast(job({ series: [[10, 10]], quantileLevels: [0.05, 0.95] }), env);
    assert.ok(close(f?.quantiles[0]?.[0], 10 - 4.5));
    assert.ok(close(f?.quantiles[1]?.[0], 10 + 4.5));
  });

  it('fails clearly when the manifest and the graph disagree', async () => {
    await installGraph(
      env,
      model,
      { contextLength: 2048, idInput: { name: 'series_ids' }, horizon: 96, offsets: levelOffsets(DECILES), base: 'nanmean' },
      {
        schema_version: 1,
        contract: {
          inputs: [{ name: 'context', dtype: 'float32', shape: ['variates', 2048] }],
          output: { name: 'quantiles', dtype: 'float32', shape: ['variates', 96, 5], levels: T0_LEVELS },
        },
      },
    );
    await assert.rejects(
      async () => model.forecast(job({ series: [[1, 2]] }), env),
      (e: unknown) => {
        return e instanceof EngineError && e.kind === 'failed' && /9 quantiles but 5 levels/.test(e.message);
      },
    );
  });
});

describe('t0-alpha ONNX contract', () => {
  const model = catalogModel('sktime/t0-alpha-onnx');

  it('uses a 512-point context with NaN padding and five levels', async () => {
    await installGraph(env, model, {
      contextLength: 512,
      horizon: 64,
      offsets: levelOffsets(T0_LEVELS),
      base: 'nanmean',
      meanWeight: 0, // no plain mean: a NaN in the window would poison it
      stepSlope: 1,
    });
    const long = [...Array<number>(100).fill(50), ...Array<number>(512).fill(2)];
    const out = await model.forecast(job({ series: [long, [1, Number.NaN, 3]], horizon: 64, quantileLevels: [0.1, 0.3, 0.9] }), env);
    assert.ok(close(out[0]?.mean[0], 2 + 1));
    assert.ok(close(out[0]?.mean[63], 2 + 64));
    assert.equal(out[0]?.info?.truncated_from, 612);
    assert.ok(close(out[1]?.mean[0], 2 + 1));
    // 0.3 lies between 0.25 (offset -2.5) and 0.5 (offset 0): linear gives -2
    assert.ok(close(out[1]?.quantiles[1]?.[0], 2 + 1 - 2));
  });

  it('ignores group ids (univariate graph) and refuses 0.05 and 0.95', async () => {
    await installGraph(env, model, { contextLength: 512, horizon: 64, offsets: levelOffsets(T0_LEVELS), base: 'nanmean' });
    const out = await model.forecast(
      job({
        series: [
          [2, 2],
          [4, 4],
        ],
        groupIds: [1, 1],
      }),
      env,
    );
    assert.ok(close(out[0]?.mean[0], 2));
    assert.ok(close(out[1]?.mean[0], 4));
    await assert.rejects(async () => model.forecast(job({ series: [[1, 2]], quantileLevels: [0.05] }), env), { kind: 'bad_input' });
    await assert.rejects(async () => model.forecast(job({ series: [[1, 2]], quantileLevels: [0.5, 0.95] }), env), { kind: 'bad_input' });
  });

  it('finds the context input by dtype when the graph names it differently', async () => {
    await installGraph(env, model, {
      contextName: 'past_values',
      contextLength: 512,
      horizon: 64,
      offsets: levelOffsets(T0_LEVELS),
      base: 'nanmean',
    });
    const [f] = await model.forecast(job({ series: [[3, 3]] }), env);
    assert.ok(close(f?.mean[0], 3));
  });

  it('takes the context length from the session, not the catalog', async () => {
    await installGraph(env, model, { contextLength: 4, horizon: 64, offsets: levelOffsets(T0_LEVELS), base: 'nanmean' });
    const [f] = await model.forecast(job({ series: [[100, 100, 1, 2, 3, 4]] }), env);
    assert.ok(close(f?.mean[0], 2.5));
    assert.equal(f?.info?.context_length, 4);
  });
});
