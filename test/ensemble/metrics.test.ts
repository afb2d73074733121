import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { inverseScoreWeights } from '../../src/ensemble/blend.ts';
import { mase, maseScale, smape, weightedQuantileLoss } from '../../src/ensemble/metrics.ts';
import { backtestWindows, heldOutLength, seasonalNaive, selectMembers, shrunkWeights } from '../../src/ensemble/service.ts';

describe('ensemble metrics', () => {
  test('sMAPE: hand-computed values; 0/0 counts as 0; NaN actuals skipped', () => {
    // 200·|100−110|/(210) = 9.5238…, 200·|50−40|/90 = 22.222…
    assert.ok(Math.abs(smape([100, 50], [110, 40]) - ((200 * 10) / 210 + (200 * 10) / 90) / 2) < 1e-12);
    assert.equal(smape([0, 0], [0, 0]), 0);
    assert.equal(smape([Number.NaN, 10], [5, 10]), 0);
    assert.equal(smape([5, 5], [-5, -5]), 200);
  });

  test('MASE: scale is the in-sample mean absolute seasonal difference, with fallbacks', () => {
    const train = [1, 2, 3, 4, 5, 6, 7, 8];
    assert.equal(maseScale(train, 1), 1);
    assert.equal(maseScale(train, 4), 4);
    assert.equal(maseScale([3, 3, 3, 3], 1), 1); // flat series: scale 1, not a division by zero
    assert.equal(maseScale([1, 2, 1, 2, 1, 2], 2), 1); // seasonal diff 0 → falls back to lag 1
    assert.equal(mase([10, 12], [11, 11], train, 1), 1);
    assert.equal(mase([10, 12], [11, 11], train, 4), 0.25);
  });

  test('weighted quantile loss: pinball by hand; a perfect median has only the tails', () => {
    // y = 10; q0.5 = 10 → 0; q0.1 = 8 → 0.1·2 = 0.2; q0.9 = 13 → 0.1·3 = 0.3. 2·0.5 / (3·10)
    const wql = weightedQuantileLoss([10], [0.1, 0.5, 0.9], [[8], [10], [13]]);
    assert.ok(Math.abs(wql - (2 * 0.5) / 30) < 1e-12);
    assert.equal(weightedQuantileLoss([10], [0.5], [[10]]), 0);
  });

  test('sMAPE, MASE and WQL of values near the largest double (or the smallest) are those of the same values near 1', () => {
    const actual = [10, -12, 14, Number.NaN, 9];
    const forecast = [11, 12, 13, -8, 9];
    const train = [3, 9, -7, 12, 5, 8];
    const levels = [0.1, 0.5, 0.9];
    const quantiles = [forecast.map((f) => f - 3), forecast, forecast.map((f) => f + 3)];
    const all = (s: number) => {
      const x = (xs: number[]) => xs.map((v) => v * s);
      return [
        smape(x(actual), x(forecast)),
        mase(x(actual), x(forecast), x(train), 2),
        weightedQuantileLoss(x(actual), levels, quantiles.map(x)),
        maseScale(x(train), 1) / s,
      ];
    };
    const ref = all(1);
    // 2^1019 and 2^-1000 are exact scalings; 1e307 and 1e-300 are not.
    for (const s of [2 ** 1019, 2 ** -1000, 1e307, 1e-300]) {
      const got = all(s);
      for (const [k, x] of got.entries()) assert.ok(Math.abs(x - ref[k]!) <= 1e-9 * ref[k]!, `metric ${k} at ${s}: ${x} vs ${ref[k]}`);
    }
  });

  test('inverse-score weights sum to 1 and favour lower scores; zero scores take everything', () => {
    const w = inverseScoreWeights([1, 2, 4]);
    assert.ok(Math.abs(w.reduce((a, b) => a + b, 0) - 1) < 1e-12);
    assert.ok(Math.abs((w[0] as number) - 4 / 7) < 1e-12);
    assert.deepEqual(inverseScoreWeights([0, 3, 0]), [0.5, 0, 0.5]);
    assert.deepEqual(inverseScoreWeights([Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY]), [0.5, 0.5]);
    assert.deepEqual(inverseScoreWeights([2, Number.POSITIVE_INFINITY]), [1, 0]);
  });

  test('held-out length: the prediction length, or half the shortest series', () => {
    assert.equal(heldOutLength(6, 100), 6);
    assert.equal(heldOutLength(18, 20), 10);
    assert.equal(heldOutLength(6, 1), 0);
    assert.equal(heldOutLength(6, 2), 1);
  });

  test('backtest windows: up to 3, each leaving half the shortest series before it', () => {
    assert.equal(backtestWindows(18, 126), 3);
    assert.equal(backtestWindows(6, 20), 1);
    assert.equal(backtestWindows(3, 10), 1);
    assert.equal(backtestWindows(10, 20), 1);
    assert.equal(backtestWindows(4, 60), 3);
    assert.equal(backtestWindows(4, 60, 1), 1);
  });

  test('shrunk weights: halfway between inverse-score and equal, summing to 1', () => {
    const w = shrunkWeights([1, 2, 4]);
    assert.ok(Math.abs(w.reduce((a, b) => a + b, 0) - 1) < 1e-12);
    assert.ok(Math.abs((w[0] as number) - (0.5 * 4) / 7 - 0.5 / 3) < 1e-12);
    assert.ok((w[0] as number) > (w[1] as number) && (w[1] as number) > (w[2] as number));
    assert.ok((w[2] as number) >= 0.5 / 3, 'every member keeps at least half an equal share');
  });

  test('members: within 25% of the yardstick, else the best alone; then the top_n (ADR 0035)', () => {
    const ranked = [1, 2, 3, 10];
    const pick = (yardstick: number, topN: number, margin?: number) => selectMembers(ranked, (s) => s, yardstick, topN, margin);
    // Yardstick 4: up to 5 is kept; 10 is not.
    assert.deepEqual(pick(4, 3), { members: [1, 2, 3], eligible: [1, 2, 3] });
    assert.deepEqual(pick(4, 2).members, [1, 2]);
    // Yardstick 2: up to 2.5 (the margin lets 2 in, not 3).
    assert.deepEqual(pick(2, 3), { members: [1, 2], eligible: [1, 2] });
    // Yardstick 2.5: 3 is 20% worse, within the margin.
    assert.deepEqual(pick(2.5, 3).members, [1, 2, 3]);
    // Every candidate more than 25% worse: the best one alone answers.
    assert.deepEqual(pick(0.5, 3), { members: [1], eligible: [] });
    // No finite yardstick (seasonal naive unscored): no candidate is left out.
    assert.deepEqual(pick(Number.NaN, 10).members, ranked);
    // Another margin: 1 is the strict yardstick (equal scores still pass).
    assert.deepEqual(pick(2, 3, 1).members, [1, 2]);
    assert.deepEqual(pick(1.9, 3, 1).members, [1]);
  });

  test('seasonal naive yardstick repeats the last season, or the last value', () => {
    assert.deepEqual(seasonalNaive([1, 2, 3, 4, 5, 6], 5, 3), [4, 5, 6, 4, 5]);
    assert.deepEqual(seasonalNaive([1, 2, 3], 2, 1), [3, 3]);
    assert.deepEqual(seasonalNaive([1, 2], 2, 12), [2, 2]);
  });
});
