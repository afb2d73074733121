import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { quantileRows, samplePaths, sdFromInterval } from '../../src/engine/stats/distribution.ts';
import { qnorm } from '../../src/engine/stats/normal.ts';
import { nelderMead } from '../../src/engine/stats/optim.ts';
import { fillMissing } from '../../src/engine/stats/prepare.ts';
import { acf, deseasonalise, detectSeasonLength, detectSeasonLengths, isSeasonal, seasonalFigure } from '../../src/engine/stats/season.ts';
import { augurs } from '../../src/engine/stats/wasm.ts';
import { EngineError } from '../../src/engine/types.ts';

const close = (a: number, b: number, tol = 1e-9): void => assert.ok(Math.abs(a - b) <= tol, `${a} != ${b}`);

describe('normal quantiles', () => {
  it('matches published z values', () => {
    close(qnorm(0.975), 1.959963984540054, 1e-8);
    close(qnorm(0.9), 1.2815515655446004, 1e-8);
    close(qnorm(0.5), 0, 1e-12);
    close(qnorm(0.001), -3.090232306167813, 1e-7);
    assert.throws(() => qnorm(1));
  });
});

describe('missing values', () => {
  it('drops leading NaN, interpolates gaps, carries the last value forward', () => {
    assert.deepEqual(fillMissing([NaN, 1, NaN, 3, NaN], 1, 0), { y: [1, 2, 3, 3], missing: 2 });
    assert.deepEqual(fillMissing([0, NaN, NaN, 6], 1, 0).y, [0, 2, 4, 6]);
    assert.deepEqual(fillMissing([Infinity, 5, 6], 1, 0).y, [5, 6]);
  });
  it('rejects all-NaN and too-short series as bad input naming the series', () => {
    assert.throws(
      () => fillMissing([NaN, NaN], 1, 3),
      (e: unknown) => e instanceof EngineError && e.kind === 'bad_input' && e.seriesIndex === 3,
    );
    assert.throws(
      () => fillMissing([1, NaN, 2], 3, 1),
      (e: unknown) => e instanceof EngineError && e.kind === 'bad_input' && e.seriesIndex === 1,
    );
  });
});

describe('autocorrelation and seasonality', () => {
  it('computes R-style acf by hand', () => {
    // y = 1,2,3,4: mean 2.5, c0 = 5, c1 = (-0.5*-1.5)+(0.5*-0.5)+(1.5*0.5) = 1.25 -> 0.25
    close(acf([1, 2, 3, 4], 1)[0]!, 0.25);
  });
  it('finds a clear season and not a missing one', () => {
    const seasonal = Array.from({ length: 60 }, (_, t) => 100 + 20 * Math.sin((2 * Math.PI * t) / 12) + (t % 5));
    assert.equal(isSeasonal(seasonal, 12), true);
    assert.equal(
      isSeasonal(
        Array.from({ length: 60 }, (_, t) => t),
        12,
      ),
      false,
    );
    assert.equal(isSeasonal(seasonal.slice(0, 24), 12), false, 'needs more than two seasons');
    const weekly = Array.from({ length: 140 }, (_, t) => 50 + [5, 9, 1, 0, 3, 12, 7][t % 7]! + 0.1 * t);
    assert.equal(detectSeasonLength(weekly), 7);
    assert.equal(detectSeasonLength([1, 2, 3]), 1);
  });
  it('short series: skipping the periodogram when it cannot add a period changes no answer', () => {
    // The detector as it was before the skip: the periodogram's periods always join the candidates.
    const reference = (y: number[]): number[] => {
      const n = y.length;
      if (n < 8) return [];
      const diff = y.slice(1).map((v, i) => v - y[i]!);
      const maxLag = Math.min(Math.floor((n - 1) / 2) - 1, 400);
      if (maxLag < 2) return [];
      const r = acf(diff, maxLag);
      const candidates = new Set<number>();
      for (let k = 2; k < maxLag; k++) if (r[k - 1]! > 0 && r[k - 1]! >= r[k - 2]! && r[k - 1]! >= r[k]!) candidates.add(k);
      for (const p of augurs().seasons.seasonalities(Float64Array.from(y), null)) candidates.add(p);
      const passing = [...candidates].filter((m) => m >= 2 && m <= maxLag && isSeasonal(diff, m));
      const strength = (m: number): number => r[m - 1]!;
      return passing.filter((m) => !passing.some((k) => k < m && m % k === 0 && strength(k) >= 0.8 * strength(m))).sort((a, b) => strength(b) - strength(a));
    };
    // Seeded: seasonal, trending, noisy and constant series of 8 to 40 points.
    let s = 7;
    const rand = (): number => {
      s = (s * 1_103_515_245 + 12_345) % 2_147_483_648;
      return s / 2_147_483_648;
    };
    let seasonalFound = 0;
    for (let c = 0; c < 600; c++) {
      const n = 8 + (c % 33);
      const period = 2 + (c % 7);
      const amp = [0, 1, 5, 20][c % 4]!;
      const y = Array.from({ length: n }, (_, t) => 50 + amp * Math.sin((2 * Math.PI * t) / period) + (c % 3) * t + 3 * rand());
      const got = detectSeasonLengths(y);
      assert.deepEqual(got, reference(y), `series ${c}: ${JSON.stringify(y)}`);
      if (got.length > 0) seasonalFound++;
    }
    assert.ok(seasonalFound > 50, `the cases include seasonal ones (${seasonalFound})`);
  });
  it('builds the classical seasonal figure (R decompose) and reseasonalises', () => {
    // Pure multiplicative pattern around a flat level: the figure is the pattern over its mean.
    const pattern = [0.5, 1, 1.5, 1];
    const y = Array.from({ length: 20 }, (_, t) => 10 * pattern[t % 4]!);
    const fig = seasonalFigure(y, 4, 'multiplicative');
    for (const [i, v] of fig.entries()) close(v, pattern[i]!, 1e-12);
    const d = deseasonalise(y, 4);
    assert.equal(d.type, 'multiplicative');
    for (const v of d.adjusted) close(v, 10, 1e-9);
    close(d.reseasonalise(10, 21), 10 * pattern[1]!, 1e-9);
  });
});

describe('distributions', () => {
  const fc = { mean: [10, 11], sdLow: [1, 2], sdHigh: [1, 2], info: {} };
  it('turns a Gaussian into monotone quantile rows', () => {
    const rows = quantileRows(fc, [0.1, 0.5, 0.9]);
    close(rows[0]![0]!, 10 - 1.2815515655446004, 1e-8);
    close(rows[1]![1]!, 11);
    close(rows[2]![1]!, 11 + 2 * 1.2815515655446004, 1e-8);
    for (let h = 0; h < 2; h++) assert.ok(rows[0]![h]! <= rows[1]![h]! && rows[1]![h]! <= rows[2]![h]!);
  });
  it('recovers sd from a central interval', () => {
    const z = qnorm(0.975);
    const { sdLow, sdHigh } = sdFromInterval([5], [5 - 2 * z], [5 + 3 * z], 0.95);
    close(sdLow[0]!, 2);
    close(sdHigh[0]!, 3);
  });
  it('draws reproducible paths whose spread matches the sd', () => {
    const a = samplePaths(fc, 4000, 42);
    assert.deepEqual(a, samplePaths(fc, 4000, 42));
    assert.notDeepEqual(a[0], samplePaths(fc, 1, 43)[0]);
    const last = a.map((p) => p[1]!);
    const mean = last.reduce((s, v) => s + v, 0) / last.length;
    const sd = Math.sqrt(last.reduce((s, v) => s + (v - mean) ** 2, 0) / last.length);
    assert.ok(Math.abs(mean - 11) < 0.15 && Math.abs(sd - 2) < 0.15, `mean ${mean} sd ${sd}`);
  });
});

describe('nelder-mead', () => {
  it('finds the minimum of the Rosenbrock function', () => {
    const r = nelderMead((x) => 100 * (x[1]! - x[0]! ** 2) ** 2 + (1 - x[0]!) ** 2, [-1.2, 1], { maxIter: 2000, tol: 1e-12 });
    close(r.x[0]!, 1, 1e-3);
    close(r.x[1]!, 1, 1e-3);
  });
});
