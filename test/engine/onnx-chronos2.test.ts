import assert from 'node:assert/strict';
import { after, beforeEach, describe, it } from 'node:test';
import { releaseSessions } from '../../src/engine/onnx/session.ts';
import { EngineError, type ModelEnv, type SeriesForecast } from '../../src/engine/types.ts';
import { CHRONOS2_LEVELS, catalogModel, close, installGraph, job, levelOffsets, tempModelsDir } from './onnx-helpers.ts';

// Test graph: quantiles[b, h, k] = mean over b's group of nanmean(row) + 0.1 (h + 1) + off(level k)
const OFF = levelOffsets(CHRONOS2_LEVELS, 10, 40);
const off = (l: number): number => 10 * (l - 0.5) + 40 * (l - 0.5) ** 3;
const expected = (base: number, h: number, l: number): number => base + 0.1 * (h + 1) + off(l);

const model = catalogModel('sktime/chronos2-onnx');
let env: ModelEnv;
let cleanup: () => Promise<void> = async () => {};

async function run(over: Parameters<typeof job>[0]): Promise<SeriesForecast[]> {
  return model.forecast(job(over), env);
}

describe('Chronos-2 ONNX contract', () => {
  beforeEach(async () => {
    await cleanup();
    ({ env, cleanup } = await tempModelsDir());
    await installGraph(env, model, {
      contextLength: 2048,
      idInput: { name: 'group_ids' },
      horizon: 64,
      offsets: OFF,
      base: 'group_nanmean',
      stepSlope: 0.1,
    });
  });
  after(async () => {
    await releaseSessions();
    await cleanup();
  });

  it('declares the pinned files and its capabilities', () => {
    assert.equal(model.files?.repo, 'sktime/chronos2-onnx');
    assert.deepEqual(
      model.files?.files.map((f) => f.path),
      ['chronos2-ctx2048-h64.onnx', 'manifest.json', 'LICENSE'],
    );
    assert.equal(model.info.maxHorizon, 64);
    assert.ok(model.info.capabilities.includes('multivariate_joint'));
    const int8 = catalogModel('sktime/chronos2-onnx-int8');
    assert.equal(int8.files?.files[0]?.sha256?.length, 64);
  });

  it('left-pads short series with NaN, so only the observed points count', async () => {
    const [f] = await run({ series: [[1, 2, 3]], quantileLevels: [0.1, 0.5, 0.9] });
    assert.ok(f);
    assert.equal(f.mean.length, 4);
    for (let h = 0; h < 4; h++) {
      assert.ok(close(f.mean[h], expected(2, h, 0.5)), `mean[${h}] = ${f.mean[h]}`);
      assert.ok(close(f.quantiles[0]?.[h], expected(2, h, 0.1)));
      assert.ok(close(f.quantiles[2]?.[h], expected(2, h, 0.9)));
    }
    assert.equal(f.info?.padded, 2045);
  });

  it('passes missing values through as NaN', async () => {
    const [f] = await run({ series: [[1, Number.NaN, 3, Number.NaN]] });
    assert.ok(close(f?.mean[0], expected(2, 0, 0.5)));
  });

  it('truncates long series to the newest 2048 points', async () => {
    const series = [...Array<number>(952).fill(1000), ...Array<number>(2048).fill(5)];
    const [f] = await run({ series: [series] });
    assert.ok(close(f?.mean[0], expected(5, 0, 0.5)));
    assert.equal(f?.info?.truncated_from, 3000);
  });

  it('interpolates linearly between the graph levels', async () => {
    const [f] = await run({ series: [[4, 4]], quantileLevels: [0.12, 0.33, 0.97] });
    const lin = (q: number, a: number, b: number): number => off(a) + ((off(b) - off(a)) * (q - a)) / (b - a);
    assert.ok(close(f?.quantiles[0]?.[0], 4 + 0.1 + lin(0.12, 0.1, 0.15)));
    assert.ok(close(f?.quantiles[1]?.[0], 4 + 0.1 + lin(0.33, 0.3, 0.35)));
    assert.ok(close(f?.quantiles[2]?.[0], 4 + 0.1 + lin(0.97, 0.95, 0.99)));
    // The cubic offsets make plain "level 0.33 ≈ level 0.35" wrong by a visible margin.
    assert.ok(!close(f?.quantiles[1]?.[0], 4 + 0.1 + off(0.35)));
  });

  it('refuses levels outside 0.01..0.99 as bad input', async () => {
    await assert.rejects(run({ series: [[1, 2]], quantileLevels: [0.005, 0.5] }), (e: unknown) => {
      return e instanceof EngineError && e.kind === 'bad_input' && /0\.005/.test(e.message);
    });
    await assert.rejects(run({ series: [[1, 2]], quantileLevels: [0.995] }), { kind: 'bad_input' });
  });

  it('refuses horizons past the graph (no rollout for Chronos-2)', async () => {
    await assert.rejects(run({ series: [[1, 2]], horizon: 65 }), { kind: 'bad_input' });
    const [f] = await run({ series: [[1, 2]], horizon: 64 });
    assert.equal(f?.mean.length, 64);
  });

  it('forecasts rows sharing a group id jointly, distinct ids independently', async () => {
    const series = [
      [2, 2],
      [4, 4],
      [10, 10],
    ];
    const independent = await run({ series });
    assert.deepEqual(
      independent.map((f) => Math.round((f.mean[0] ?? 0) * 1000) / 1000),
      [2, 4, 10].map((b) => Math.round(expected(b, 0, 0.5) * 1000) / 1000),
    );
    const joint = await run({ series, groupIds: [7, 7, 3] });
    assert.ok(close(joint[0]?.mean[0], expected(3, 0, 0.5)));
    assert.ok(close(joint[1]?.mean[0], expected(3, 0, 0.5)));
    assert.ok(close(joint[2]?.mean[0], expected(10, 0, 0.5)));
    assert.equal(joint[2]?.info?.group, 3);
  });

  it('never splits a group across batches, and keeps the job order', async () => {
    // 45 series in groups of 3 (batches of at most 16 rows), the groups interleaved in the
    // job, plus one group of 20 that is larger than a batch.
    const series: number[][] = [];
    const groupIds: number[] = [];
    for (let i = 0; i < 45; i++) {
      series.push([i, i]);
      groupIds.push(i % 15);
    }
    for (let i = 0; i < 20; i++) {
      series.push([100 + i, 100 + i]);
      groupIds.push(99);
    }
    const out = await run({ series, groupIds, horizon: 1, quantileLevels: [] });
    assert.equal(out.length, 65);
    for (let i = 0; i < 45; i++) {
      const g = i % 15;
      const groupMean = (g + (g + 15) + (g + 30)) / 3;
      assert.ok(close(out[i]?.mean[0], expected(groupMean, 0, 0.5)), `series ${i}: ${out[i]?.mean[0]}`);
    }
    for (let i = 45; i < 65; i++) assert.ok(close(out[i]?.mean[0], expected(109.5, 0, 0.5)));
  });

  it('rejects a groupIds array of the wrong length and series without observations', async () => {
    await assert.rejects(
      run({
        series: [
          [1, 1],
          [2, 2],
        ],
        groupIds: [0],
      }),
      { kind: 'bad_input' },
    );
    await assert.rejects(
      run({
        series: [
          [1, 2],
          [Number.NaN, 3, Number.NaN],
        ],
      }),
      (e: unknown) => {
        return e instanceof EngineError && e.kind === 'bad_input' && e.seriesIndex === 1;
      },
    );
  });

  it('draws reproducible samples from the quantiles', async () => {
    const a = await run({ series: [[1, 2, 3]], numSamples: 50, seed: 42 });
    const b = await run({ series: [[1, 2, 3]], numSamples: 50, seed: 42 });
    const c = await run({ series: [[1, 2, 3]], numSamples: 50, seed: 43 });
    const samples = a[0]?.samples ?? [];
    assert.equal(samples.length, 50);
    assert.equal(samples[0]?.length, 4);
    assert.deepEqual(samples, b[0]?.samples);
    assert.notDeepEqual(samples, c[0]?.samples);
    const lo = expected(2, 0, 0.01);
    const hi = expected(2, 0, 0.99);
    for (const path of samples) assert.ok((path[0] ?? NaN) >= lo - 1e-4 && (path[0] ?? NaN) <= hi + 1e-4);
    // about half the draws sit below the median
    const below = samples.filter((p) => (p[0] ?? 0) < expected(2, 0, 0.5)).length;
    assert.ok(below > 10 && below < 40, `below median: ${below}`);
  });
});

describe('Chronos-2 ONNX availability', () => {
  it('reports a missing graph as unavailable, with the pull command', async () => {
    const tmp = await tempModelsDir();
    try {
      await assert.rejects(
        async () => model.forecast(job({ series: [[1, 2]] }), tmp.env),
        (e: unknown) => {
          return e instanceof EngineError && e.kind === 'unavailable' && e.message.includes('npm run models -- pull sktime/chronos2-onnx');
        },
      );
    } finally {
      await tmp.cleanup();
    }
  });
});
