import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { etsForecast } from '../../src/engine/models/ets.ts';
import { thetaForecast } from '../../src/engine/models/theta.ts';
import { mixForecasts, NAIVE_BLEND_MIN_SEASON, NAIVE_BLEND_MIN_SHARE, naiveBlendApplies, naiveBlendWeight } from '../../src/engine/models/naive-blend.ts';
import { BUILTIN_MODELS } from '../../src/engine/registry.ts';
import { calibrationOptions } from '../../src/engine/models/common.ts';
import { calibrationOrigins, factorFromWindows, windowsOf } from '../../src/engine/stats/calibrate.ts';
import type { GaussianForecast } from '../../src/engine/stats/distribution.ts';
import { gaussian, mulberry32 } from '../../src/engine/stats/prng.ts';
import { seasonalNaiveForecast } from '../../src/engine/stats/random-walk.ts';
import type { ForecastJob } from '../../src/engine/types.ts';

const env = { modelsDir: '/nonexistent', threads: 1 };
const close = (a: number, b: number, tol = 1e-9): void => assert.ok(Math.abs(a - b) <= tol * Math.max(1, Math.abs(b)), `${a} != ${b}`);
const model = (id: string) => BUILTIN_MODELS.find((m) => m.info.id === id)!;
const gauss = (mean: number[], sd: number[]): GaussianForecast => ({ mean, sdLow: sd, sdHigh: sd.slice(), info: {} });

/**
 * An hourly series whose daily profile changes from day to day (its amplitude follows a slow random
 * walk) on a level that wanders hour by hour: one-step likelihood fits ETS with alpha near 1 and a
 * frozen profile, while the last day repeated is the better forecast a day or two ahead.
 */
function hourly(n: number, seed: number): number[] {
  const u = mulberry32(seed);
  const z = gaussian(u);
  let amp = 10;
  let level = 100;
  const out: number[] = [];
  for (let t = 0; t < n; t++) {
    if (t % 24 === 0) amp = Math.max(2, amp + 2.5 * z());
    level += 0.6 * z();
    out.push(level + amp * Math.sin((2 * Math.PI * t) / 24) + 0.3 * z());
  }
  return out;
}

describe('seasonal-naive blend (ADR 0029)', () => {
  it('weights the model and seasonal naive by the inverse of their mean absolute backtest errors', () => {
    const y = [0, 0, 0, 0, 10, 10, 10, 10];
    const own = [{ origin: 4, fc: gauss([9, 9, 9, 9], [1, 1, 1, 1]) }]; // MAE 1
    const naive = [{ origin: 4, fc: gauss([7, 7, 7, 7], [1, 1, 1, 1]) }]; // MAE 3
    const w = naiveBlendWeight(y, own, naive)!;
    close(w.modelMae, 1);
    close(w.naiveMae, 3);
    close(w.weight, 1 / 1 / (1 / 1 + 1 / 3)); // 0.75
    assert.equal(naiveBlendWeight(y, [{ origin: 4, fc: gauss([10, 10, 10, 10], [1, 1, 1, 1]) }], naive)!.weight, 1, 'a perfect backtest takes all the weight');
  });

  it('mixes means and standard deviations as a two-component mixture', () => {
    const m = mixForecasts(gauss([10, 20], [1, 2]), gauss([14, 20], [3, 2]), 0.75);
    close(m.mean[0]!, 11);
    close(m.sdLow[0]!, Math.sqrt(0.75 * 1 + 0.25 * 9 + 0.75 * 0.25 * 16));
    close(m.sdHigh[1]!, 2);
  });

  it('applies only to seasons of 24 or more, forecast a season ahead or more, whose oldest backtest origin leaves 80% of the series before it', () => {
    const opts = calibrationOptions(4, 24);
    const oldest = (n: number, h: number): number => Math.min(...calibrationOrigins(n, h, opts));
    assert.equal(NAIVE_BLEND_MIN_SHARE, 0.8);
    assert.equal(NAIVE_BLEND_MIN_SEASON, 24);
    assert.ok(naiveBlendApplies(1000, 24, 48, oldest(1000, 48)), '1,000 hourly points, horizon 48: oldest origin 904');
    assert.ok(naiveBlendApplies(1000, 24, 24, oldest(1000, 24)), 'horizon 24: one season');
    assert.ok(!naiveBlendApplies(1000, 24, 12, oldest(1000, 12)), 'horizon 12: less than a season');
    assert.ok(!naiveBlendApplies(400, 24, 48, oldest(400, 48)), '400 points: oldest origin 304 < 320');
    assert.ok(!naiveBlendApplies(1000, 1, 48, oldest(1000, 48)), 'non-seasonal');
    const m3 = calibrationOptions(4, 12);
    assert.ok(!naiveBlendApplies(126, 12, 18, Math.min(...calibrationOrigins(126, 18, m3))), 'the longest M3 monthly series');
    assert.ok(!naiveBlendApplies(144, 12, 12, Math.min(...calibrationOrigins(144, 12, m3))), 'AirPassengers, horizon 12: monthly is not blended');
    assert.ok(!naiveBlendApplies(2000, 7, 14, 1900), 'daily data with a weekly season: not measured, not blended');
    assert.ok(!naiveBlendApplies(10, 24, 48, null), 'no backtest');
  });

  it('blends auto-ets on a long hourly series and forecasts the next two days better than auto-ets alone', async () => {
    let blended = 0;
    let alone = 0;
    for (const seed of [1, 2, 3]) {
      const all = hourly(1048, seed);
      const y = all.slice(0, 1000);
      const actual = all.slice(1000);
      const job: ForecastJob = { model: 'auto-ets', series: [y], horizon: 48, quantileLevels: [0.1, 0.5, 0.9], numSamples: 0, seasonLength: 24, seed: 1 };
      const [fc] = await model('auto-ets').forecast(job, env);
      const info = fc!.info as { naiveBlend?: { weight: number } };
      assert.ok(info.naiveBlend, 'the blend applies');
      const w = info.naiveBlend.weight;
      assert.ok(w > 0 && w < 1);
      // The mean is exactly the weighted mean of auto-ets's own forecast and seasonal naive's.
      const own = etsForecast(y, { horizon: 48, seasonLength: 24 }).mean;
      const sn = seasonalNaiveForecast(y, { horizon: 48, seasonLength: 24 }).mean;
      for (let i = 0; i < 48; i++) close(fc!.mean[i]!, Math.max(0, w * own[i]! + (1 - w) * sn[i]!), 1e-6);
      blended += actual.reduce((s, a, i) => s + Math.abs(a - fc!.mean[i]!), 0);
      alone += actual.reduce((s, a, i) => s + Math.abs(a - own[i]!), 0);
    }
    assert.ok(blended < 0.9 * alone, `blended MAE ${blended / 144} vs auto-ets alone ${alone / 144}`);
  });

  it('takes the weight from the backtest refits and calibrates the blend, not the model alone', async () => {
    // Recomputed here from the parts: theta refitted at the calibration's origins, seasonal naive
    // from the same origins, inverse mean absolute errors, then the factor of the blended backtests.
    const y = hourly(1000, 4);
    const job: ForecastJob = { model: 'theta', series: [y], horizon: 48, quantileLevels: [0.1, 0.9], numSamples: 0, seasonLength: 24, seed: 1 };
    const [fc] = await model('theta').forecast(job, env);
    const info = fc!.info as { naiveBlend: { weight: number; modelMae: number; naiveMae: number }; calibration: { factor: number } };
    const origins = calibrationOrigins(1000, 48, calibrationOptions(4, 24));
    let em = 0;
    let en = 0;
    let k = 0;
    const own = origins.map((o) => ({ origin: o, fc: thetaForecast(y.slice(0, o), { horizon: 48, seasonLength: 24 }) }));
    const naive = origins.map((o) => ({ origin: o, fc: seasonalNaiveForecast(y.slice(0, o), { horizon: 48, seasonLength: 24 }) }));
    own.forEach((b, j) => {
      for (let t = 0; t < 48; t++) {
        em += Math.abs(y[b.origin + t]! - b.fc.mean[t]!);
        en += Math.abs(y[b.origin + t]! - naive[j]!.fc.mean[t]!);
        k++;
      }
    });
    close(info.naiveBlend.modelMae, em / k, 1e-5);
    close(info.naiveBlend.naiveMae, en / k, 1e-5);
    const w = k / em / (k / em + k / en);
    close(info.naiveBlend.weight, w, 1e-5);
    const blended = own.map((b, j) => ({ origin: b.origin, fc: mixForecasts(b.fc, naive[j]!.fc, w) }));
    const factor = factorFromWindows(windowsOf(y, blended), 48)!.factor;
    close(info.calibration.factor, factor, 1e-6);
    const alone = factorFromWindows(windowsOf(y, own), 48)!.factor;
    assert.ok(Math.abs(alone - factor) > 1e-3, 'the blend changes the factor, so this tells them apart');
  });

  it('gives the same mean with and without quantiles, and leaves short and non-seasonal series alone', async () => {
    const y = hourly(1000, 9);
    const base: ForecastJob = { model: 'theta', series: [y], horizon: 48, quantileLevels: [0.1, 0.9], numSamples: 0, seasonLength: 24, seed: 1 };
    const [withQ] = await model('theta').forecast(base, env);
    const [noQ] = await model('theta').forecast({ ...base, quantileLevels: [] }, env);
    assert.ok(withQ!.info?.naiveBlend);
    assert.deepEqual(noQ!.mean, withQ!.mean);
    const [short] = await model('theta').forecast({ ...base, series: [y.slice(0, 300)] }, env);
    assert.equal(short!.info?.naiveBlend, undefined, '300 points, horizon 48: backtests see too little of the series');
    const [flat] = await model('theta').forecast({ ...base, seasonLength: 1 }, env);
    const [near] = await model('theta').forecast({ ...base, horizon: 6 }, env);
    assert.equal(near!.info?.naiveBlend, undefined, 'horizon 6: less than a season ahead');
    assert.equal(flat!.info?.naiveBlend, undefined);
    const [sn] = await model('seasonal-naive').forecast(base, env);
    assert.equal(sn!.info?.naiveBlend, undefined, 'the baselines are not blended');
  });
});
