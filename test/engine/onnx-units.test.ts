import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { backtestOrigins, TTM_BACKTESTS } from '../../src/engine/conformal.ts';
import { defaultBacktests } from '../../src/engine/onnx/driver.ts';
import { imputeLinear, prepareContext } from '../../src/engine/onnx/prepare.ts';
import { checkLevels, samplePaths, valueAtLevel } from '../../src/engine/onnx/quantiles.ts';
import { planBatches } from '../../src/engine/onnx/run.ts';
import { EngineError } from '../../src/engine/types.ts';

describe('ONNX driver pieces', () => {
  it('imputes like np.interp with edge fill', () => {
    const v = Float32Array.from([NaN, 1, NaN, NaN, 4, NaN]);
    assert.equal(imputeLinear(v), 4);
    assert.deepEqual(Array.from(v), [1, 1, 2, 3, 4, 4]);
    const none = Float32Array.from([NaN, NaN]);
    imputeLinear(none);
    assert.deepEqual(Array.from(none), [0, 0]);
  });

  it('pads and truncates per contract', () => {
    const nan = prepareContext([1, 2], 4, 'nan');
    assert.deepEqual(
      Array.from(nan.values).map((x) => (Number.isNaN(x) ? 'NaN' : x)),
      ['NaN', 'NaN', 1, 2],
    );
    assert.deepEqual(Array.from(prepareContext([Number.NaN, 2, 3], 5, 'impute_pad_first').values), [2, 2, 2, 2, 3]);
    assert.deepEqual(Array.from(prepareContext([Number.NaN, 2, 3, Number.NaN], 6, 'fill_mean').values), [2.5, 2.5, 2.5, 2, 3, 2.5]);
    const long = prepareContext([1, 2, 3, 4, 5, 6], 4, 'nan');
    assert.deepEqual(Array.from(long.values), [3, 4, 5, 6]);
    assert.equal(long.truncatedFrom, 6);
    assert.equal(long.padded, 0);
  });

  it('reads a quantile function at any level inside its range', () => {
    const levels = [0.1, 0.5, 0.9];
    const values = [0, 10, 30];
    assert.equal(valueAtLevel(levels, values, 0.1), 0);
    assert.ok(Math.abs(valueAtLevel(levels, values, 0.3) - 5) < 1e-12);
    assert.ok(Math.abs(valueAtLevel(levels, values, 0.7) - 20) < 1e-12);
    assert.equal(valueAtLevel(levels, values, 0.95), 30);
    assert.doesNotThrow(() => checkLevels(levels, [0.1, 0.9], 'm'));
    assert.throws(
      () => checkLevels(levels, [0.09], 'm'),
      (e: unknown) => e instanceof EngineError && e.kind === 'bad_input',
    );
  });

  it('samples the same paths for the same seed', () => {
    const a = samplePaths(
      () => [0.1, 0.9],
      () => [0, 1],
      3,
      5,
      9,
    );
    assert.deepEqual(
      a,
      samplePaths(
        () => [0.1, 0.9],
        () => [0, 1],
        3,
        5,
        9,
      ),
    );
    for (const p of a) assert.ok(p.every((v) => v >= 0 && v <= 1 && v === p[0]));
  });

  it('packs whole groups into batches', () => {
    const rows = [0, 1, 0, 2, 1, 3, 3, 3].map((group) => ({ context: new Float32Array(1), group }));
    const batches = planBatches(rows, 3);
    for (const b of batches) {
      const groups = new Set(b.map((i) => rows[i]?.group));
      for (const g of groups) assert.equal(b.filter((i) => rows[i]?.group === g).length, rows.filter((r) => r.group === g).length);
    }
    assert.deepEqual(batches.flat().sort(), [0, 1, 2, 3, 4, 5, 6, 7]);
    assert.ok(batches.every((b) => b.length <= 3));
  });

  it('chooses backtest origins inside the history, every ⌈h/2⌉ steps, skipping windows with nothing observed', () => {
    const plan = defaultBacktests({ horizon: 96, contextLength: 512 });
    const ones = (n: number) => Array.from({ length: n }, () => 1);
    assert.deepEqual(backtestOrigins(ones(400), 96, plan), [304, 256, 208, 160, 112]);
    assert.deepEqual(backtestOrigins(ones(250), 96, plan), [154, 106]);
    assert.deepEqual(backtestOrigins(ones(191), 96, plan), []);
    // The TTM plan: at most 8, each with 256 points of history.
    assert.deepEqual(backtestOrigins(ones(1000), 96, TTM_BACKTESTS), [904, 856, 808, 760, 712, 664, 616, 568]);
    assert.deepEqual(backtestOrigins(ones(512), 192, TTM_BACKTESTS), [320]);
    // A window whose 512 points before the origin are all missing is skipped.
    const nan = (n: number) => Array.from({ length: n }, () => Number.NaN);
    const gappy = [...nan(300), ...ones(10), ...nan(600), ...ones(100)];
    assert.deepEqual(backtestOrigins(gappy, 96, TTM_BACKTESTS), [914, 818, 770, 722, 674, 626, 578]);
  });
});
