import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { TTM_R2_ONNX_SPEC, ttmR2OnnxModel } from '../../src/engine/onnx/catalog.ts';
import { onnxModel } from '../../src/engine/onnx/driver.ts';
import { prepareContext } from '../../src/engine/onnx/prepare.ts';
import { releaseSessions } from '../../src/engine/onnx/session.ts';
import { forecastTtm, TTM_MAX_HORIZON, ttmForecasts, ttmR2 } from '../../src/engine/neural/ttm/model.ts';
import { prepareContexts } from '../../src/engine/neural/ttm/predict.ts';
import { TTM_CONTEXT, TTM_HORIZON } from '../../src/engine/neural/ttm/weights.ts';
import { EngineError, type ModelEnv } from '../../src/engine/types.ts';
import { close, installGraph, job, tempModelsDir } from './onnx-helpers.ts';

/**
 * A TinyTimeMixer r2 ONNX-contract graph served by the generic driver and the TypeScript TTM
 * (src/engine/neural/ttm/) must see the same model input for the same series and follow the
 * same limits. The network itself cannot be compared here (no TTM export exists and the real
 * weights are not converted to ONNX in the test run); what is compared is everything around it.
 */

const NaN_ = Number.NaN;
const ramp = (n: number, from = 0): number[] => Array.from({ length: n }, (_, t) => from + 0.5 * t + Math.sin(t / 7));

/** Series covering every pipeline path: long, exactly 512, short, gaps inside and at both ends. */
const CASES: [string, number[]][] = [
  ['longer than 512 (truncated to the newest 512)', ramp(900, 100)],
  ['exactly 512', ramp(512, -50)],
  ['short (padded)', ramp(40, 7)],
  ['gaps inside', ramp(600).map((v, t) => (t % 13 === 0 || (t > 300 && t < 340) ? NaN_ : v))],
  ['gaps at both ends of the window', ramp(700).map((v, t) => (t < 200 || t > 690 ? NaN_ : v))],
  ['short with gaps', [NaN_, 3, NaN_, 9, 4, NaN_]],
];

describe('TTM r2: ONNX contract and TypeScript TTM agree', () => {
  let env: ModelEnv;
  let cleanup: () => Promise<void> = async () => {};
  const model = ttmR2OnnxModel({ repo: 'test/ttm-r2-onnx' });
  // The same graph without the 512-point minimum, to feed short series straight to the graph
  // (both pipelines reach them through the calibration backtests).
  const anyLength = onnxModel({ info: { ...model.info, minPoints: 2 }, files: model.files ?? { repo: '', revision: '', files: [] }, spec: TTM_R2_ONNX_SPEC });

  before(async () => {
    ({ env, cleanup } = await tempModelsDir());
  });
  after(async () => {
    await releaseSessions();
    await cleanup();
  });

  it('on shapes and limits: 512 in, 96 out, rolled out to 192, min_points, conformal quantiles', () => {
    assert.equal(TTM_R2_ONNX_SPEC.contextLength, TTM_CONTEXT);
    assert.equal(TTM_R2_ONNX_SPEC.horizon, TTM_HORIZON);
    assert.equal(TTM_R2_ONNX_SPEC.levels, null, 'a point-forecast graph');
    assert.equal(TTM_R2_ONNX_SPEC.rollout, 'median', 'the forecast is fed back for longer horizons');
    assert.equal(model.info.maxHorizon, TTM_MAX_HORIZON);
    assert.equal(model.info.maxHorizon, ttmR2.info.maxHorizon);
    // By design the ONNX graph needs a full window (no mask input for padded points); the TypeScript TTM pads down to 36.
    assert.equal(model.info.minPoints, TTM_CONTEXT);
    assert.equal(ttmR2.info.minPoints, 36);
    assert.equal(model.info.quantileMethod, ttmR2.info.quantileMethod);
    assert.deepEqual(model.info.capabilities, ttmR2.info.capabilities);
    assert.equal(model.info.maxContextLength, ttmR2.info.maxContextLength);
  });

  for (const [name, series] of CASES) {
    it(`on the model input: ${name}`, () => {
      const ts = prepareContexts([series]);
      const onnx = prepareContext(series, TTM_R2_ONNX_SPEC.contextLength, TTM_R2_ONNX_SPEC.missing);
      assert.equal(onnx.values.length, ts.values.length);
      // The real points of the window (gaps filled with the observed mean on both) are identical;
      // the padding in front of a short series differs by design: the TypeScript TTM repeats the
      // oldest value (or season) and masks it from the scaler, the ONNX contract (no mask input)
      // fills the observed mean, which the in-graph scaler then counts.
      for (let t = onnx.padded; t < TTM_CONTEXT; t++) {
        // the ONNX input is float32, the TypeScript one float64
        assert.ok(close(onnx.values[t], ts.values[t] ?? NaN, 1e-6), `t=${t}: onnx ${onnx.values[t]} vs ts ${ts.values[t]}`);
      }
      const finite = series.slice(-TTM_CONTEXT).filter(Number.isFinite);
      const observedMean = finite.reduce((a, v) => a + v, 0) / finite.length;
      for (let t = 0; t < onnx.padded; t++) {
        assert.equal(ts.observed[t], 0, 'padded points are masked on the TypeScript side');
        assert.ok(close(ts.values[t], ts.values[onnx.padded] ?? NaN, 1e-12), 'the oldest value repeated (no season given)');
        assert.ok(close(onnx.values[t], observedMean, 1e-4), 'the observed mean on the ONNX side');
      }
      const unobserved = ts.observed.reduce((a, m) => a + (m ? 0 : 1), 0);
      assert.equal(onnx.padded + onnx.imputed, unobserved, 'the same points are filled in');
    });
  }

  it('through ONNX Runtime: the graph receives that input, and a rollout feeds the forecast back', async () => {
    // forecast[b, h] = last + mean(context) + (h + 1): every context value shows in the mean
    await installGraph(env, model, { contextLength: 512, horizon: 96, offsets: null, base: 'last', meanWeight: 1, stepSlope: 1 });
    const series = CASES.map(([, s]) => s);
    const out = await anyLength.forecast(job({ series, horizon: 96, quantileLevels: [] }), env);
    series.forEach((s, i) => {
      const row = prepareContext(s, TTM_CONTEXT, TTM_R2_ONNX_SPEC.missing).values;
      const mean = row.reduce((a, v) => a + v, 0) / TTM_CONTEXT;
      const last = row[TTM_CONTEXT - 1] ?? NaN;
      for (const h of [0, 95]) assert.ok(close(out[i]?.mean[h], last + mean + h + 1, 1e-5), `${CASES[i]?.[0]} h=${h}: ${out[i]?.mean[h]}`);
    });
    // 150 steps = 2 blocks, as the TypeScript TTM rolls out: block 2 starts from the last 416
    // points of the context followed by the 96 forecasts of block 1.
    const s = CASES[1]?.[1] ?? [];
    const [f] = await model.forecast(job({ series: [s], horizon: 150, quantileLevels: [] }), env);
    const ctx = Float64Array.from(s);
    const block1 = Array.from({ length: 96 }, (_, h) => (ctx[511] ?? 0) + ctx.reduce((a, v) => a + v, 0) / 512 + h + 1);
    const next = [...Array.from(ctx.subarray(96)), ...block1];
    const nextMean = next.reduce((a, v) => a + v, 0) / 512;
    assert.equal(f?.mean.length, 150);
    assert.ok(close(f?.mean[95], block1[95] ?? NaN, 1e-5));
    assert.ok(close(f?.mean[96], (block1[95] ?? NaN) + nextMean + 1, 1e-5), `${f?.mean[96]}`);
    assert.equal(f?.info?.rollout_blocks, 2);
    await assert.rejects(async () => model.forecast(job({ series: [s], horizon: TTM_MAX_HORIZON + 1, quantileLevels: [] }), env), {
      kind: 'bad_input',
    });
  });

  it('on min_points: the ONNX graph refuses fewer than 512 points, the TypeScript TTM fewer than 36', async () => {
    const isBadInput = (e: unknown): boolean => e instanceof EngineError && e.kind === 'bad_input' && e.seriesIndex === 1;
    await assert.rejects(async () => model.forecast(job({ series: [ramp(600), ramp(511)], quantileLevels: [] }), env), isBadInput);
    // the TypeScript TTM checks before it loads any weights
    assert.throws(() => forecastTtm(job({ series: [ramp(600), ramp(35)], quantileLevels: [] }), env), isBadInput);
  });

  it('on quantiles past one block: calibrated on rolled-out backtests', async () => {
    await installGraph(env, model, { contextLength: 512, horizon: 96, offsets: null, base: 'last', stepSlope: 1 });
    // a straight line is forecast exactly, also when rolled out: zero-width intervals at step 150
    const line = Array.from({ length: 1000 }, (_, t) => t);
    const [f] = await model.forecast(job({ series: [line], horizon: 150, quantileLevels: [0.1, 0.9], numSamples: 3 }), env);
    assert.ok(close(f?.quantiles[0]?.[149], 1000 + 149));
    assert.ok(close(f?.quantiles[1]?.[149], 1000 + 149));
    assert.equal(f?.samples?.length, 3);
    assert.match(String(f?.info?.quantile_method), /conformal/);
  });

  it('on quantiles and samples: the same point forecasts give the same intervals on both runtimes (one calibration)', async () => {
    // The graph: forecast[h] = last + mean(context) + (h + 1), rolled out by feeding the forecast back.
    await installGraph(env, model, { contextLength: 512, horizon: 96, offsets: null, base: 'last', meanWeight: 1, stepSlope: 1 });
    // The same function as the TypeScript TTM's predictor (on the ONNX contract's input).
    const graph = (contexts: ArrayLike<number>[], horizon: number): Float64Array[] =>
      contexts.map((c) => {
        let ctx = Array.from(prepareContext(Array.from(c), TTM_CONTEXT, TTM_R2_ONNX_SPEC.missing).values);
        const out: number[] = [];
        while (out.length < horizon) {
          const last = ctx[TTM_CONTEXT - 1] ?? NaN;
          const mean = ctx.reduce((a, v) => a + v, 0) / TTM_CONTEXT;
          const block = Array.from({ length: TTM_HORIZON }, (_, h) => last + mean + h + 1);
          out.push(...block);
          ctx = [...ctx.slice(TTM_HORIZON), ...block];
        }
        return Float64Array.from(out.slice(0, horizon));
      });
    // Noisy, with a level shift and a few gaps (not in the last window, where the runtimes' rollouts differ by design).
    const noisy = (n: number, gaps: boolean) =>
      Array.from({ length: n }, (_, t) => (gaps && t % 97 === 5 && t < n - 600 ? NaN_ : 50 + 0.02 * t + 8 * Math.sin(t / 5) + (((t * 7919) % 23) - 11)));
    for (const [series, horizon] of [
      [[noisy(1000, false), noisy(700, true)], 24],
      [[noisy(1200, false)], 150],
    ] as const) {
      const j = job({ series: series.map((s) => [...s]), horizon, quantileLevels: [0.05, 0.5, 0.9], numSamples: 4, seed: 11 });
      const onnx = await model.forecast(j, env);
      const ts = ttmForecasts(j, graph, 'stand-in');
      series.forEach((_, i) => {
        const o = onnx[i];
        const t = ts[i];
        assert.equal(t?.info?.backtestWindows, 8, 'eight backtests on both');
        assert.match(String(o?.info?.quantile_method), /conformal: signed errors of 8 in-context backtests/);
        for (let h = 0; h < horizon; h++) {
          assert.ok(close(o?.mean[h], t?.mean[h] ?? NaN, 1e-5), `mean h=${h}`);
          for (let q = 0; q < 3; q++) {
            const a = o?.quantiles[q]?.[h];
            const b = t?.quantiles[q]?.[h] ?? NaN;
            assert.ok(close(a, b, 1e-4), `series ${i} h=${h} level ${j.quantileLevels[q]}: onnx ${a} vs ts ${b}`);
          }
          for (let k = 0; k < 4; k++) assert.ok(close(o?.samples?.[k]?.[h], t?.samples?.[k]?.[h] ?? NaN, 1e-4), `sample ${k} h=${h}`);
        }
        // Not a degenerate case: the intervals have width.
        assert.ok((t?.quantiles[2]?.[0] ?? 0) - (t?.quantiles[0]?.[0] ?? 0) > 1);
      });
    }
  });
});
