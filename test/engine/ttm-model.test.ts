import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { calibrate, conformalQuantile, widenedLevel } from '../../src/engine/conformal.ts';
import { mulberry32 } from '../../src/engine/stats/prng.ts';
import { ttmForward } from '../../src/engine/neural/ttm/forward.ts';
import { loadTtmRuntime, ttmR2, TTM_R2_ID } from '../../src/engine/neural/ttm/model.ts';
import { predict, prepareContexts, standardisedForward } from '../../src/engine/neural/ttm/predict.ts';
import { MODEL_IMPLS } from '../../src/engine/registry.ts';
import { EngineError } from '../../src/engine/types.ts';
import type { ForecastJob, SeriesForecast } from '../../src/engine/types.ts';
import { modelsDir, skipWithoutWeights } from './ttm-fixtures.ts';

const env = { modelsDir, threads: 1 };

function series(n: number, phase = 0): number[] {
  return Array.from({ length: n }, (_, t) => 20 + 5 * Math.sin((2 * Math.PI * (t + phase)) / 24) + 2 * Math.sin(t * 0.37 + phase));
}

function job(over: Partial<ForecastJob>): ForecastJob {
  return { model: TTM_R2_ID, series: [series(700)], horizon: 24, quantileLevels: [0.1, 0.5, 0.9], numSamples: 0, seasonLength: null, seed: 7, ...over };
}

async function run(j: ForecastJob): Promise<SeriesForecast[]> {
  return ttmR2.forecast(j, env);
}

async function rejects(j: ForecastJob, kind: string, pattern: RegExp): Promise<EngineError> {
  try {
    await run(j);
  } catch (err) {
    assert.ok(err instanceof EngineError, String(err));
    assert.equal(err.kind, kind);
    assert.match(err.message, pattern);
    return err;
  }
  assert.fail('expected an EngineError');
}

describe('TTM R2 model entry', () => {
  it('is in the registry with its catalog facts and pinned files', () => {
    const impl = MODEL_IMPLS.find((m) => m.info.id === TTM_R2_ID);
    assert.ok(impl);
    assert.equal(impl.info.provider, 'ibm-granite');
    assert.equal(impl.info.family, 'TinyTimeMixer');
    assert.equal(impl.info.license, 'Apache-2.0');
    assert.equal(impl.info.kind, 'neural');
    assert.equal(impl.info.minPoints, 36);
    assert.equal(impl.info.maxHorizon, 192);
    assert.equal(impl.info.quantileMethod, 'conformal');
    assert.equal(impl.files?.repo, TTM_R2_ID);
    assert.equal(impl.files?.revision, 'main');
    const st = impl.files?.files.find((f) => f.path === 'model.safetensors');
    assert.equal(st?.sha256, 'a706726a7eb01bbcb42994b7dcb3c06ea9557898dbae8d480eb04fe8ccb89710');
    assert.equal(st?.size, 3_240_592);
  });

  it('reports missing weights as unavailable, with the command that fetches them', async () => {
    const empty = mkdtempSync(path.join(tmpdir(), 'ttm-models-'));
    assert.throws(
      () => loadTtmRuntime(empty),
      (err: unknown) =>
        err instanceof EngineError && err.kind === 'unavailable' && /npm run models -- pull ibm-granite\/granite-timeseries-ttm-r2/.test(err.message),
    );
    rmSync(empty, { recursive: true, force: true });
  });

  it('refuses horizons over 192, series under 36 observed points and all-missing windows', async () => {
    await rejects(job({ horizon: 193 }), 'bad_input', /at most 192 steps/);
    const short = await rejects(job({ series: [series(600), series(35)] }), 'bad_input', /35 observed points.*min_points=36/);
    assert.equal(short.seriesIndex, 1);
    const sparse = series(100).map((v, t) => (t % 3 === 0 ? v : NaN)); // 34 observed of 100
    assert.equal((await rejects(job({ series: [sparse] }), 'bad_input', /34 observed points/)).seriesIndex, 0);
    const gap = [...series(300), ...new Array<number>(512).fill(NaN)];
    await rejects(job({ series: [gap] }), 'bad_input', /no observed value/);
  });
});

describe('TTM R2 forecasts', { skip: skipWithoutWeights }, () => {
  it('returns mean, quantiles and samples of the requested shapes, quantiles monotone in the level', async () => {
    const levels = [0.05, 0.1, 0.5, 0.9, 0.95];
    const [a, b] = await run(job({ series: [series(700), series(900, 5)], horizon: 48, quantileLevels: levels, numSamples: 20 }));
    for (const f of [a!, b!]) {
      assert.equal(f.mean.length, 48);
      assert.equal(f.quantiles.length, levels.length);
      for (const row of f.quantiles) assert.equal(row.length, 48);
      for (let t = 0; t < 48; t++) {
        for (let q = 1; q < levels.length; q++) assert.ok(f.quantiles[q]![t]! >= f.quantiles[q - 1]![t]!);
      }
      assert.equal(f.samples?.length, 20);
      for (const s of f.samples!) assert.equal(s.length, 48);
      assert.ok(f.mean.every(Number.isFinite));
      assert.equal(f.info?.calibration, 'conformal');
      assert.ok((f.info?.backtestWindows as number) >= 4);
    }
    // The 90 % interval has positive width on a noisy series (no fixed spread: it comes from backtests).
    assert.ok(a!.quantiles[3]![10]! - a!.quantiles[1]![10]! > 0);
  });

  it('is deterministic for a seed, and the seed changes the samples', async () => {
    const one = await run(job({ numSamples: 5, seed: 1 }));
    const again = await run(job({ numSamples: 5, seed: 1 }));
    const other = await run(job({ numSamples: 5, seed: 2 }));
    assert.deepEqual(one, again);
    assert.notDeepEqual(one[0]!.samples, other[0]!.samples);
    assert.deepEqual(one[0]!.mean, other[0]!.mean);
  });

  it('fills missing values like the reference pipeline: observed mean in the window, masked from the scaler', async () => {
    const s = series(600);
    const holes = s.map((v, t) => (t % 37 === 0 || (t > 550 && t < 560) ? NaN : v));
    const [f] = await run(job({ series: [holes], horizon: 96 }));
    assert.ok(f!.mean.every(Number.isFinite));
    assert.equal(f!.info?.imputedPoints, holes.slice(-512).filter(Number.isNaN).length);
    // Same as running the network on the explicitly filled window with the mask.
    const window = holes.slice(-512);
    const observed = window.filter(Number.isFinite);
    const fill = observed.reduce((x, y) => x + y, 0) / observed.length;
    const prepared = prepareContexts([holes]);
    const hole = 111 - (600 - 512); // t = 111 is the first missing point inside the window
    assert.ok(Math.abs(prepared.values[hole]! - fill) < 1e-12);
    assert.equal(prepared.observed[hole], 0);
    assert.equal(prepared.observed[hole + 1], 1);
    const direct = standardisedForward(loadTtmRuntime(modelsDir), prepared).forecast;
    for (let t = 0; t < 96; t++) assert.ok(Math.abs(direct[t]! - f!.mean[t]!) < 1e-9);
    // and the network on the raw values agrees to float32 precision (the pre-scaling only removes the 1e-5 term's effect)
    const raw = ttmForward(loadTtmRuntime(modelsDir), prepared).forecast;
    for (let t = 0; t < 96; t++) assert.ok(Math.abs(raw[t]! - f!.mean[t]!) < 1e-3, `t=${t}: ${raw[t]} vs ${f!.mean[t]}`);
  });

  it('does not depend on the units: a series in millionths gets the same forecast in millionths', async () => {
    // The model's scaler adds 1e-5 to the variance; on raw values of small spread that term flattened the input.
    const s = series(600);
    const [f] = await run(job({ series: [s], quantileLevels: [] }));
    const [g] = await run(job({ series: [s.map((v) => v * 1e-6)], quantileLevels: [] }));
    for (let t = 0; t < 24; t++)
      assert.ok(Math.abs(g!.mean[t]! * 1e6 - f!.mean[t]!) < 1e-6 * Math.abs(f!.mean[t]!), `t=${t}: ${g!.mean[t]! * 1e6} vs ${f!.mean[t]}`);
  });

  it('rolls out horizons over 96: the first 96 steps equal the 96-step forecast', async () => {
    const [short] = await run(job({ horizon: 96 }));
    const [long] = await run(job({ horizon: 150 }));
    assert.equal(long!.mean.length, 150);
    assert.deepEqual(long!.mean.slice(0, 96), short!.mean);
    assert.equal(long!.info?.rolledOut, true);
  });

  it('runs multivariate targets channel by channel: a batch equals single calls', async () => {
    const a = series(640, 1);
    const b = series(800, 9).map((v) => v * 100);
    const [both0, both1] = await run(job({ series: [a, b] }));
    const [alone] = await run(job({ series: [b] }));
    assert.deepEqual(both1!.mean, alone!.mean);
    assert.deepEqual(both1!.quantiles, alone!.quantiles);
    assert.notDeepEqual(both0!.mean, alone!.mean);
  });
});

describe('conformal calibration', () => {
  it('recovers the quantiles of known residuals', () => {
    const rand = mulberry32(3);
    const normal = () => Math.sqrt(-2 * Math.log(rand() + 1e-12)) * Math.cos(2 * Math.PI * rand());
    const h = 10;
    const backtests = Array.from({ length: 400 }, () => {
      const actual = Array.from({ length: h }, (_, t) => normal() * (1 + t / 10));
      return { forecast: new Array<number>(h).fill(0), actual };
    });
    const cal = calibrate(backtests, h, 1);
    assert.ok(Math.abs(cal.scale[0]! - 1) < 0.1, `scale[0] = ${cal.scale[0]}`);
    assert.ok(Math.abs(cal.scale[9]! - 1.9) < 0.2, `scale[9] = ${cal.scale[9]}`);
    assert.ok(Math.abs(conformalQuantile(cal.z, 0.9) - 1.2816) < 0.1);
    assert.ok(Math.abs(conformalQuantile(cal.z, 0.1) + 1.2816) < 0.1);
    for (let t = 1; t < h; t++) assert.ok(cal.scale[t]! >= cal.scale[t - 1]!);
  });

  it('uses conservative ranks and clamps to the observed residuals', () => {
    const z = Float64Array.from([-2, -1, 0, 1, 2]);
    assert.equal(conformalQuantile(z, 0.5), 0);
    assert.equal(conformalQuantile(z, 0.6), 1); // rank ⌈6·0.6⌉ = 4
    assert.equal(conformalQuantile(z, 0.7), 2); // rank ⌈6·0.7⌉ = 5
    assert.equal(conformalQuantile(z, 0.3), -2); // rank ⌊6·0.3⌋ = 1
    assert.equal(conformalQuantile(z, 0.99), 2); // clamped to the largest residual
    assert.equal(conformalQuantile(new Float64Array(0), 0.9), 0);
  });

  it("standardises each window by the other windows' scale, and widens the level for few windows", () => {
    // Errors 1 and 3 at both steps: leave-one-out gives z = 1/3 and 3/1 (in-sample, 1/√5 and 3/√5).
    const cal = calibrate(
      [
        { forecast: [0, 0], actual: [1, 1] },
        { forecast: [0, 0], actual: [3, 3] },
      ],
      2,
      1,
    );
    assert.deepEqual(Array.from(cal.z), [1 / 3, 1 / 3, 3, 3]);
    assert.ok(Math.abs(cal.scale[0]! - Math.sqrt(5)) < 1e-12);
    // One window keeps its own scale.
    assert.deepEqual(Array.from(calibrate([{ forecast: [0], actual: [2] }], 1, 1).z), [1]);
    assert.ok(Math.abs(widenedLevel(0.9, 8) - 0.925) < 1e-12);
    assert.ok(Math.abs(widenedLevel(0.1, 4) - 0.05) < 1e-12);
    assert.equal(widenedLevel(0.1, 2), 0);
    assert.equal(widenedLevel(0.5, 1), 0.5);
    assert.equal(widenedLevel(0.99, 1), 1);
  });
});

describe('TTM R2 short series (padded)', { skip: skipWithoutWeights }, () => {
  const monthly = (n: number): number[] => Array.from({ length: n }, (_, t) => 100 + 0.8 * t + 15 * Math.sin((2 * Math.PI * t) / 12) + 3 * Math.cos(t * 1.7));

  it('pads a 60-point series with its oldest season, masked from the scaler, and says so', async () => {
    const s = monthly(60);
    const [f] = await run(job({ series: [s], horizon: 18, seasonLength: 12 }));
    assert.equal(f!.mean.length, 18);
    assert.ok(f!.mean.every(Number.isFinite));
    assert.equal(f!.info?.contextUsed, 60);
    assert.equal(f!.info?.padded, 452);
    assert.equal(f!.info?.padding, 'oldest_season');
    assert.equal(f!.info?.paddingSeasonLength, 12);
    assert.match(String(f!.info?.warning), /60 of 512 points are real/);
    assert.ok((f!.info?.backtestWindows as number) >= 2);
    // The network's input, built by hand: position t < 452 holds s[(t - 452) mod 12], unobserved.
    const values = new Float64Array(512);
    const observed = new Uint8Array(512);
    for (let t = 0; t < 512; t++) {
      if (t >= 452) {
        values[t] = s[t - 452]!;
        observed[t] = 1;
      } else {
        values[t] = s[(((t - 452) % 12) + 12) % 12]!;
      }
    }
    const direct = ttmForward(loadTtmRuntime(modelsDir), { values, observed, count: 1 }).forecast;
    for (let t = 0; t < 18; t++) assert.ok(Math.abs(direct[t]! - f!.mean[t]!) < 1e-3, `t=${t}: ${direct[t]} vs ${f!.mean[t]}`);
    // The mask matters: the same values counted by the scaler give another forecast.
    const unmasked = ttmForward(loadTtmRuntime(modelsDir), { values, count: 1 }).forecast;
    assert.ok(Math.abs(unmasked[0]! - f!.mean[0]!) > 0.1, `${unmasked[0]} vs ${f!.mean[0]}`);
  });

  it('without a season (none given, none found) repeats the oldest value; detects one when not given', async () => {
    const flat = Array.from({ length: 40 }, (_, t) => 10 + ((t * 7919) % 13) / 10);
    const [f] = await run(job({ series: [flat], horizon: 6, seasonLength: 1 }));
    assert.equal(f!.info?.padding, 'oldest_value');
    const prepared = prepareContexts([flat], [1]);
    for (let t = 0; t < 472; t++) assert.equal(prepared.values[t], flat[0]);
    const clean = Array.from({ length: 72 }, (_, t) => 100 + 0.5 * t + 15 * Math.sin((2 * Math.PI * t) / 12));
    const [g] = await run(job({ series: [clean], horizon: 12, seasonLength: null }));
    assert.equal(g!.info?.padding, 'oldest_season');
    assert.equal(g!.info?.paddingSeasonLength, 12);
  });

  it('refuses quantiles when a short series leaves no backtest window, and says how many points they need', async () => {
    const e = await rejects(job({ series: [monthly(40)], horizon: 36, seasonLength: 12 }), 'bad_input', /at least 44 points for 36 steps; the series has 40/);
    assert.equal(e.seriesIndex, 0);
    const [f] = await run(job({ series: [monthly(40)], horizon: 36, seasonLength: 12, quantileLevels: [] }));
    assert.equal(f!.mean.length, 36);
  });

  it('rolls a short series out past 96 steps by padding the context plus the forecast again', async () => {
    const s = monthly(50);
    const [f] = await run(job({ series: [s], horizon: 120, seasonLength: 12, quantileLevels: [] }));
    const [first] = await run(job({ series: [s], horizon: 96, seasonLength: 12, quantileLevels: [] }));
    assert.deepEqual(f!.mean.slice(0, 96), first!.mean);
    const next = predict(loadTtmRuntime(modelsDir), [[...s, ...first!.mean]], 24, [12])[0]!;
    for (let t = 0; t < 24; t++) assert.ok(Math.abs(next[t]! - f!.mean[96 + t]!) < 1e-9);
  });
});

describe('TTM R2 predict', { skip: skipWithoutWeights }, () => {
  it('gives the same forecasts when a large batch is sliced', () => {
    const rt = loadTtmRuntime(modelsDir);
    const many = Array.from({ length: 1030 }, (_, i) => series(512, i % 17));
    const all = predict(rt, many, 8);
    const tail = predict(rt, many.slice(1024), 8);
    assert.equal(all.length, 1030);
    assert.deepEqual(all.slice(1024), tail);
  });
});
