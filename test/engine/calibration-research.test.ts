import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { calibrationOptions, statisticalModel } from '../../src/engine/models/common.ts';
import { backtestWindows, factorFromWindows } from '../../src/engine/stats/calibrate.ts';
import type { GaussianForecast } from '../../src/engine/stats/distribution.ts';
import { gaussian, mulberry32 } from '../../src/engine/stats/prng.ts';
import { naiveForecast } from '../../src/engine/stats/random-walk.ts';

// ADR 0036: where a model gives `research` (its whole search again at each origin), the calibration
// factor comes from those backtests alone; where every one of them fails, from the refits.
const normal = gaussian(mulberry32(7));
const walk: number[] = [];
for (let t = 0, v = 100; t < 60; t++) {
  v += normal();
  walk.push(v);
}
const H = 6;
const MIN_POINTS = 2;
const opts = calibrationOptions(MIN_POINTS, 1);
/** Naive with intervals half as wide: its backtest |z| are twice naive's, so its factor differs. */
const narrow = (train: number[], h: number): GaussianForecast => {
  const f = naiveForecast(train, { horizon: h, seasonLength: 1 });
  return { ...f, sdLow: f.sdLow.map((s) => s / 2), sdHigh: f.sdHigh.map((s) => s / 2) };
};
const toy = (research: (train: number[], h: number) => GaussianForecast) =>
  statisticalModel(
    { id: 'toy', license: 'MIT', name: 'toy', family: 'random walk', description: 'test', minPoints: MIN_POINTS, capabilities: [], quantileMethod: 'analytic' },
    (y, ctx) => ({ ...naiveForecast(y, ctx), research }),
  );
const calibrationOf = async (research: (train: number[], h: number) => GaussianForecast) => {
  const job = { model: 'toy', series: [walk], horizon: H, quantileLevels: [0.1, 0.9], numSamples: 0, seasonLength: 1, seed: 1 };
  const [fc] = await toy(research).forecast(job, { modelsDir: '/nonexistent', threads: 1 });
  return fc!.info!.calibration as { factor: number; windows: number; backtests: string };
};

describe('calibration on search-again backtests (ADR 0036)', () => {
  const refitFactor = factorFromWindows(
    backtestWindows(walk, H, (t, h) => naiveForecast(t, { horizon: h, seasonLength: 1 }), opts),
    H,
  )!.factor;
  const researchFactor = factorFromWindows(backtestWindows(walk, H, narrow, opts), H)!.factor;

  it('takes the factor from the search-again backtests alone, not pooled with the refits', async () => {
    assert.notEqual(researchFactor, refitFactor);
    const cal = await calibrationOf(narrow);
    assert.equal(cal.backtests, 'search-again');
    assert.equal(cal.windows, 3);
    assert.equal(cal.factor, researchFactor);
  });

  it('falls back to the refits when every search-again backtest fails', async () => {
    const cal = await calibrationOf(() => {
      throw new Error('search failed');
    });
    assert.equal(cal.backtests, 'refit');
    assert.equal(cal.windows, 3);
    assert.equal(cal.factor, refitFactor);
  });
});
