import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { readSafetensors } from '../../src/engine/neural/safetensors.ts';
import { createJsRuntime, ttmForward } from '../../src/engine/neural/ttm/forward.ts';
import type { TtmRuntime } from '../../src/engine/neural/ttm/forward.ts';
import { erf } from '../../src/engine/neural/ttm/kernels.ts';
import { createWasmRuntime } from '../../src/engine/neural/ttm/wasm.ts';
import { loadTtmWeights } from '../../src/engine/neural/ttm/weights.ts';
import type { TtmWeights } from '../../src/engine/neural/ttm/weights.ts';
import { column, readVector, skipWithoutWeights, weightsPath } from './ttm-fixtures.ts';

let weights: TtmWeights | undefined;
function loadWeights(): TtmWeights {
  weights ??= loadTtmWeights(readSafetensors(new Uint8Array(readFileSync(weightsPath))));
  return weights;
}

function runtimes(): TtmRuntime[] {
  const w = loadWeights();
  const wasm = createWasmRuntime(w, 4);
  assert.ok(wasm, 'WebAssembly SIMD is available on Node 24');
  return [createJsRuntime(w, 4), wasm];
}

function contextsOf(v: { context: number[][] }): Float64Array {
  const values = new Float64Array(7 * 512);
  for (let c = 0; c < 7; c++) values.set(column(v.context, c), c * 512);
  return values;
}

describe('erf (GELU)', () => {
  it('matches known values to 1e-9', () => {
    const known: [number, number][] = [
      [0, 0],
      [0.1, 0.1124629160182849],
      [0.5, 0.5204998778130465],
      [1, 0.8427007929497149],
      [2, 0.9953222650189527],
      [3, 0.9999779095030014],
      [-1.5, -0.9661051464753108],
      [7, 1],
    ];
    for (const [x, want] of known) assert.ok(Math.abs(erf(x) - want) < 1e-9, `erf(${x}) = ${erf(x)}, want ${want}`);
  });
});

describe('TTM R2 forward pass', { skip: skipWithoutWeights }, () => {
  it('has the 805,280 parameters of the checkpoint', () => {
    assert.equal(loadWeights().parameterCount, 805_280);
  });

  for (const dataset of ['ETTh1', 'ETTh2'] as const) {
    it(`matches the ${dataset} reference vector to 1e-5 (JS and WebAssembly runtimes)`, () => {
      const v = readVector(dataset);
      for (const rt of runtimes()) {
        const { forecast } = ttmForward(rt, { values: contextsOf(v), count: 7 });
        let worst = 0;
        for (let c = 0; c < 7; c++) {
          for (let t = 0; t < 96; t++) worst = Math.max(worst, Math.abs(forecast[c * 96 + t]! - v.prediction[t]![c]!));
        }
        assert.ok(worst < 1e-5, `${rt.kind}: worst absolute difference ${worst}`);
      }
    });
  }

  it('gives the same forecasts in a batch as one by one, across chunk boundaries', () => {
    const v = readVector('ETTh1');
    const values = contextsOf(v);
    for (const rt of runtimes()) {
      const batch = ttmForward(rt, { values, count: 7 }).forecast; // chunk 4: 4 + 3
      for (let c = 0; c < 7; c++) {
        const one = ttmForward(rt, { values: values.subarray(c * 512, (c + 1) * 512), count: 1 }).forecast;
        for (let t = 0; t < 96; t++) assert.ok(Math.abs(one[t]! - batch[c * 96 + t]!) < 1e-9, `${rt.kind} channel ${c} step ${t}`);
      }
    }
  });

  it('is equivariant to shifting and scaling the input (the scaler is inside the model)', () => {
    const v = readVector('ETTh2');
    const values = contextsOf(v);
    const moved = values.map((x) => 1000 + 50 * x);
    for (const rt of runtimes()) {
      const a = ttmForward(rt, { values, count: 7 }).forecast;
      const b = ttmForward(rt, { values: moved, count: 7 }).forecast;
      for (let i = 0; i < a.length; i++) assert.ok(Math.abs(1000 + 50 * a[i]! - b[i]!) < 1e-3, `${rt.kind} index ${i}`);
    }
  });

  it('uses the observed mask only in the scaler', () => {
    const v = readVector('ETTh1');
    const values = contextsOf(v).subarray(0, 512);
    const observed = new Uint8Array(512).fill(1);
    for (let t = 0; t < 100; t++) observed[t] = 0;
    const rt = runtimes()[0]!;
    const masked = ttmForward(rt, { values, observed, count: 1 });
    let sum = 0;
    for (let t = 100; t < 512; t++) sum += values[t]!;
    assert.ok(Math.abs(masked.loc[0]! - sum / 412) < 1e-9, 'loc is the mean of the observed points');
    const plain = ttmForward(rt, { values, count: 1 });
    assert.notEqual(masked.forecast[0], plain.forecast[0]);
  });

  it('rejects inputs of the wrong size', () => {
    const rt = runtimes()[0]!;
    assert.throws(() => ttmForward(rt, { values: new Float64Array(511), count: 1 }), /expected 1×512/);
  });
});
