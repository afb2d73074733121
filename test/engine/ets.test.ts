import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { arimaForecast } from '../../src/engine/models/arima.ts';
import { comboForecast } from '../../src/engine/models/combo.ts';
import { ETS_WEIGHT_KEPT, etsForecast, keptMembers } from '../../src/engine/models/ets.ts';
import { mstlPeriods, mstlForecast } from '../../src/engine/models/mstl.ts';
import { BUILTIN_MODELS } from '../../src/engine/registry.ts';
import {
  calibrationFactor,
  calibrationOrigins,
  conformalQuantile,
  effectiveOrigins,
  factorFromWindows,
  ORIGIN_WIDENING,
  originWidening,
} from '../../src/engine/stats/calibrate.ts';
import { akaikeWeights, autoEts, type EtsFit, etsForms, etsModel, etsName, forecastEts } from '../../src/engine/stats/ets.ts';
import { nmmin } from '../../src/engine/stats/nmmin.ts';
import { gaussian, mulberry32 } from '../../src/engine/stats/prng.ts';

const close = (a: number, b: number, tol: number, what = ''): void => assert.ok(Math.abs(a - b) <= tol, `${what} ${a} != ${b} (tol ${tol})`);

/** R's datasets::AirPassengers, monthly 1949-1960. */
const AIR = [
  112, 118, 132, 129, 121, 135, 148, 148, 136, 119, 104, 118, 115, 126, 141, 135, 125, 149, 170, 170, 158, 133, 114, 140, 145, 150, 178, 163, 172, 178, 199,
  199, 184, 162, 146, 166, 171, 180, 193, 181, 183, 218, 230, 242, 209, 191, 172, 194, 196, 196, 236, 235, 229, 243, 264, 272, 237, 211, 180, 201, 204, 188,
  235, 227, 234, 264, 302, 293, 259, 229, 203, 229, 242, 233, 267, 269, 270, 315, 364, 347, 312, 274, 237, 278, 284, 277, 317, 313, 318, 374, 413, 405, 355,
  306, 271, 306, 315, 301, 356, 348, 355, 422, 465, 467, 404, 347, 305, 336, 340, 318, 362, 348, 363, 435, 491, 505, 404, 359, 310, 337, 360, 342, 406, 396,
  420, 472, 548, 559, 463, 407, 362, 405, 417, 391, 419, 461, 472, 535, 622, 606, 508, 461, 390, 432,
];

describe("R's Nelder-Mead (nmmin)", () => {
  it("reproduces R's optim(c(-1.2, 1), rosenbrock) example: par 1.000260 1.000506, value 8.825241e-08, 195 evaluations", () => {
    const fr = (x: Float64Array): number => 100 * (x[1]! - x[0]! * x[0]!) ** 2 + (1 - x[0]!) ** 2;
    const r = nmmin(fr, [-1.2, 1], { maxit: 500 });
    close(r.x[0]!, 1.00026, 1e-6, 'x1');
    close(r.x[1]!, 1.000506, 1e-6, 'x2');
    close(r.value, 8.825241e-8, 1e-12, 'value');
    assert.equal(r.fnCount, 195);
    assert.equal(r.fail, 0);
  });
});

describe("ETS port of R forecast's ets", () => {
  it("AirPassengers: R's ETS(M,Ad,M) with its parameters and information criteria", () => {
    // R (forecast 8.x): ets(AirPassengers) -> ETS(M,Ad,M), alpha 0.7096, beta 0.0204, gamma 1e-04,
    // phi 0.98; AIC 1395.166, AICc 1400.638, BIC 1448.623.
    // R's units: the search as R runs it (the service fits in units of the mean absolute value).
    const found = autoEts(AIR, 12, 'r');
    assert.ok(found);
    const f = found.fit;
    assert.equal(etsName(f), 'ETS(M,Ad,M)');
    close(f.alpha, 0.7096, 5e-4, 'alpha');
    close(f.beta, 0.0204, 5e-4, 'beta');
    close(f.gamma, 1e-4, 5e-5, 'gamma');
    close(f.phi, 0.98, 5e-4, 'phi');
    close(f.aic, 1395.166, 0.01, 'AIC');
    close(f.aicc, 1400.638, 0.01, 'AICc');
    close(f.bic, 1448.623, 0.01, 'BIC');
    assert.equal(found.tried, 15, 'the 15 models R tries on positive seasonal data');
    const fc = forecastEts(f, 12);
    assert.equal(fc.mean.length, 12);
    // The seasonal peak (July/August) stays above the trough (November).
    assert.ok(fc.mean[6]! > fc.mean[10]! * 1.3);
    for (let h = 1; h < 12; h++) assert.ok(fc.variance[h]! > 0);
  });

  it('ETS(A,N,N) variances are sigma^2 (1 + (h - 1) alpha^2) (forecast.ets class 1)', () => {
    const z = gaussian(mulberry32(3));
    let level = 50;
    const y = Array.from({ length: 80 }, () => {
      level += 0.5 * z();
      return level + z();
    });
    const f = etsModel(y, 1, { error: 'A', trend: 'N', season: 'N', damped: false });
    assert.ok(f);
    const fc = forecastEts(f, 5);
    for (let h = 0; h < 5; h++) {
      close(fc.variance[h]!, f.sigma2 * (1 + h * f.alpha ** 2), 1e-9 * f.sigma2, `h=${h + 1}`);
      close(fc.mean[h]!, f.lastState[0]!, 1e-9, 'flat forecast');
    }
    assert.ok(f.alpha >= 1e-4 && f.alpha <= 0.9999);
  });

  it('finds the trend of a noisy line and the season of additive seasonal data', () => {
    const z = gaussian(mulberry32(5));
    const line = Array.from({ length: 40 }, (_, t) => 10 + 2 * t + 0.3 * z());
    const a = autoEts(line, 1)!.fit;
    assert.equal(a.trend, 'A');
    const fc = forecastEts(a, 3).mean;
    close(fc[0]!, 10 + 2 * 40, 1.5, 'next value on the line');
    const seasonal = Array.from({ length: 72 }, (_, t) => -5 + 0.1 * t + 4 * Math.sin((2 * Math.PI * t) / 12) + 0.2 * z());
    const s = autoEts(seasonal, 12)!.fit;
    assert.equal(s.season, 'A', 'data with negative values: additive season, no multiplicative error');
    assert.equal(s.error, 'A');
  });

  it('auto-ets combines the forms with Akaike weights from their AICc (Kolassa 2011), not only the best one', () => {
    // The first eight years of AirPassengers: two forms share the weight (0.51 and 0.47), a third has 2%.
    const air = AIR.slice(0, 96);
    const ctx = { horizon: 12, seasonLength: 12 };
    const f = etsForecast(air, ctx);
    const { fits, tried } = etsForms(air, 12);
    assert.equal(tried, 15);
    // Weights: exp(-ΔAICc / 2), normalised; the best form gives the forecast its name.
    const w = akaikeWeights(fits.map((x) => x.aicc));
    close(
      w.reduce((s, v) => s + v, 0),
      1,
      1e-12,
    );
    const best = fits.reduce((a, b) => (b.aicc < a.aicc ? b : a));
    assert.equal(f.info.model, etsName(best));
    assert.equal(f.info.model, etsName(autoEts(air, 12)!.fit));
    // The forms carrying 99% of the weight, largest first, renormalised.
    const ranked = fits.map((fit, i) => ({ fit, w: w[i]! })).sort((a, b) => b.w - a.w);
    const kept: typeof ranked = [];
    let carried = 0;
    for (const r of ranked) {
      kept.push(r);
      carried += r.w;
      if (carried >= 0.99) break;
    }
    assert.ok(kept.length >= 2 && kept[1]!.w > 0.3, `two forms share the weight: ${kept.map((k) => `${etsName(k.fit)} ${k.w}`)}`);
    const forms = f.info.forms as { model: string; weight: number }[];
    assert.deepEqual(
      forms.map((x) => x.model),
      kept.map((k) => etsName(k.fit)),
    );
    forms.forEach((x, k) => void close(x.weight, kept[k]!.w / carried, 1e-9, `weight of ${x.model}`));
    // Mean: the weighted mean of the forms' means; sd: the mixture's.
    const fcs = kept.map((k) => forecastEts(k.fit, 12));
    for (let h = 0; h < 12; h++) {
      const mu = forms.reduce((s, x, k) => s + x.weight * fcs[k]!.mean[h]!, 0);
      close(f.mean[h]!, mu, 1e-9, `mean ${h}`);
      const second = forms.reduce((s, x, k) => s + x.weight * (fcs[k]!.variance[h]! + fcs[k]!.mean[h]! ** 2), 0);
      close(f.sdLow[h]!, Math.sqrt(second - mu * mu), 1e-6, `sd ${h}`);
      // Not the best form's forecast alone (R's choice).
      assert.ok(Math.abs(f.mean[h]! - fcs[0]!.mean[h]!) > 1e-6);
    }
  });

  it('every form, additive and multiplicative errors and seasons, is put back in the units of the data', () => {
    // A fit to y·c is the fit to y with level, trend, additive season and additive errors times c,
    // sigma^2 of additive errors times c^2, and the same forecast times c (variance times c^2).
    const y = AIR.slice(0, 96);
    const c = 1 / 7;
    const specs = etsForms(y, 12).fits.map((f) => ({ error: f.error, trend: f.trend, season: f.season, damped: f.damped }));
    assert.ok(specs.some((s) => s.error === 'A') && specs.some((s) => s.season === 'A'), 'additive forms are among them');
    for (const spec of specs) {
      const a = etsModel(y, 12, spec)!;
      const b = etsModel(
        y.map((v) => v * c),
        12,
        spec,
      )!;
      const name = etsName(a);
      const rel = (x: number, want: number, what: string): void => close(x, want, 1e-9 * Math.max(1e-12, Math.abs(want)), `${name} ${what}`);
      rel(b.alpha, a.alpha, 'alpha');
      rel(b.sigma2, spec.error === 'A' ? a.sigma2 * c * c : a.sigma2, 'sigma2');
      a.lastState.forEach((v, i) => void rel(b.lastState[i]!, i < (spec.trend === 'N' ? 1 : 2) || spec.season === 'A' ? v * c : v, `state ${i}`));
      rel(b.residuals.at(-1)!, spec.error === 'A' ? a.residuals.at(-1)! * c : a.residuals.at(-1)!, 'last residual');
      rel(b.aicc, a.aicc + 2 * y.length * Math.log(c), 'AICc');
      const fa = forecastEts(a, 12);
      const fb = forecastEts(b, 12);
      for (let h = 0; h < 12; h++) {
        rel(fb.mean[h]!, fa.mean[h]! * c, `mean ${h}`);
        rel(fb.variance[h]!, fa.variance[h]! * c * c, `variance ${h}`);
      }
    }
  });

  it("fits do not depend on the data's units: the series times 1000 or divided by 7 gives the forecast times 1000 or divided by 7", () => {
    // R's Nelder-Mead steps every parameter by a tenth of the largest one, the initial level among
    // them; fitted in the data's own units ('r') the forecast of AirPassengers in thousands moves.
    const ctx = { horizon: 12, seasonLength: 12 };
    const base = etsForecast(AIR, ctx);
    for (const c of [1000, 1 / 7]) {
      const scaled = etsForecast(
        AIR.map((v) => v * c),
        ctx,
      );
      assert.equal(scaled.info.model, base.info.model);
      for (let h = 0; h < 12; h++) {
        close(scaled.mean[h]!, base.mean[h]! * c, 1e-12 * scaled.mean[h]!, `mean ${h} × ${c}`);
        close(scaled.sdLow[h]!, base.sdLow[h]! * c, 1e-12 * scaled.sdLow[h]!, `sd ${h} × ${c}`);
      }
      const fit = autoEts(AIR, 12)!.fit;
      const fitC = autoEts(
        AIR.map((v) => v * c),
        12,
      )!.fit;
      close(fitC.alpha, fit.alpha, 1e-9, 'alpha');
      close(fitC.lastState[0]!, fit.lastState[0]! * c, 1e-12 * fitC.lastState[0]!, 'level');
      // The likelihood of y·c is that of y shifted by 2n·log(c), for every form alike.
      close(fitC.aicc, fit.aicc + 2 * AIR.length * Math.log(c), 1e-9, 'AICc');
    }
    const rUnits = autoEts(
      AIR.map((v) => v * 1000),
      12,
      'r',
    )!.fit;
    const rFit = autoEts(AIR, 12, 'r')!.fit;
    assert.ok(Math.abs(rUnits.alpha - rFit.alpha) > 1e-3 || etsName(rUnits) !== etsName(rFit), "R's own search depends on the units");
  });

  it('keeps the forms carrying 99% of the Akaike weight, largest first, and renormalises them', () => {
    // AICc 0, 2, 10, 20: weights 0.7274, 0.2676, 0.0049, 0.00003; the first two carry 0.995.
    const fits = [10, 0, 20, 2].map((aicc) => ({ aicc }) as unknown as EtsFit);
    const kept = keptMembers(fits);
    assert.deepEqual(
      kept.map((m) => m.fit.aicc),
      [0, 2],
    );
    close(kept[0]!.weight, 1 / (1 + Math.exp(-1)), 1e-12, 'first');
    close(kept[0]!.weight + kept[1]!.weight, 1, 1e-12, 'sum');
    assert.ok(ETS_WEIGHT_KEPT === 0.99);
    assert.deepEqual(keptMembers([]), []);
  });
  it('the mixture sd stays a number on series near the top of the double range (E[mu^2] - mean^2 overflowed to NaN)', () => {
    const y = Array.from({ length: 40 }, (_, t) => 1e200 * (1 + 0.3 * Math.sin(t) + t / 50));
    const f = etsForecast(y, { horizon: 6, seasonLength: 4 });
    assert.ok((f.info.forms as unknown[]).length > 1, 'several forms are combined');
    for (const s of [...f.sdLow, ...f.sdHigh]) assert.ok(Number.isFinite(s) && s >= 0, `sd ${s}`);
    assert.ok(f.mean.every(Number.isFinite));
  });
  it('constant and tiny series do not fail', () => {
    const c = etsForecast([5, 5, 5, 5, 5, 5, 5, 5], { horizon: 3, seasonLength: 1 });
    assert.deepEqual(c.mean, [5, 5, 5]);
    const t = etsForecast([1, 2, 3, 4], { horizon: 2, seasonLength: 1 });
    assert.equal(t.mean.length, 2);
    assert.match(String(t.info.fallback), /naive/);
  });
});

describe('interval calibration on backtests', () => {
  const z = gaussian(mulberry32(11));
  let v = 100;
  const walk = Array.from({ length: 120 }, () => (v += z()));
  it('origins step back by half a horizon and keep the minimum training length', () => {
    assert.deepEqual(calibrationOrigins(100, 10, { windows: 3, minTrain: 8 }), [90, 85, 80]);
    assert.deepEqual(calibrationOrigins(20, 10, { windows: 3, minTrain: 8 }), [10, 8]);
    assert.deepEqual(calibrationOrigins(8, 10, { windows: 3, minTrain: 8 }), []);
  });
  it('a series too short for a whole-horizon window after two seasons backtests from n - H on fewer points', () => {
    // Quarterly, 16 points, horizon 8: two seasons and two points (10) would leave a window of 6 steps.
    assert.deepEqual(calibrationOrigins(16, 8, { windows: 3, minTrain: 10 }), [10]);
    assert.deepEqual(calibrationOrigins(16, 8, { windows: 3, minTrain: 10, minTrainNewest: 8 }), [8]);
    // Long enough for the seasonal minimum: the usual origins; too short even for 8 points: as before.
    assert.deepEqual(calibrationOrigins(40, 8, { windows: 3, minTrain: 10, minTrainNewest: 8 }), [32, 28, 24]);
    assert.deepEqual(calibrationOrigins(14, 8, { windows: 3, minTrain: 10, minTrainNewest: 8 }), [10]);
  });
  it('the conformal quantile covers a new exchangeable value with probability close to p, whatever the count', () => {
    assert.equal(conformalQuantile([1, 2, 3, 4, 5, 6, 7, 8, 9], 0.8), 8);
    assert.equal(conformalQuantile([1, 2, 3, 4], 0.8), 4);
    close(conformalQuantile([1, 2, 3, 4, 5], 0.8), 4.8, 1e-12, 'interpolated');
    const draw = gaussian(mulberry32(5));
    for (const n of [6, 18, 54]) {
      let inside = 0;
      const trials = 20_000;
      for (let t = 0; t < trials; t++) {
        const z = Array.from({ length: n }, () => Math.abs(draw())).sort((a, b) => a - b);
        if (Math.abs(draw()) <= conformalQuantile(z, 0.8)) inside++;
      }
      // Between the coverage of the order statistics either side of rank 0.8 (n + 1), k / (n + 1);
      // the type-7 quantile at 0.85 used before covered 75% for n = 6 and 84% for n = 54.
      const r = 0.8 * (n + 1);
      const cover = inside / trials;
      assert.ok(cover >= Math.floor(r) / (n + 1) - 0.01 && cover <= Math.ceil(r) / (n + 1) + 0.01, `n = ${n}: ${cover}`);
      close(cover, 0.8, 0.025, `n = ${n}`);
    }
  });
  it('counts backtest origins by the share of the horizon their windows have in common', () => {
    assert.equal(effectiveOrigins([90], 10), 1);
    // auto-arima's refit and search at the same origin: one origin.
    assert.equal(effectiveOrigins([90, 90], 10), 1);
    // Three origins half a horizon apart (the usual plan): 9 / (3 + 4 x 0.5).
    close(effectiveOrigins([90, 85, 80], 10), 1.8, 1e-12, 'half a horizon');
    // Windows sharing no step count one each.
    assert.equal(effectiveOrigins([90, 80], 10), 2);
    // A yearly series of 15 points, horizon 6: origins 9 and 8 (the minimum) are nearly one window.
    close(effectiveOrigins([9, 8], 6), 4 / (2 + 2 * (5 / 6)), 1e-12, 'one step apart');
    assert.equal(effectiveOrigins([], 6), 0);
  });
  it('widens the factor most for one effective origin, less as origins are added, never narrows it', () => {
    const w = [1, 1.09, 1.33, 1.8, 2, 3].map(originWidening);
    close(w[0]!, 1 + ORIGIN_WIDENING, 1e-12, 'one origin');
    for (let k = 1; k < w.length; k++) assert.ok(w[k]! < w[k - 1]! && w[k]! > 1, `widening ${w.join(', ')}`);
  });
  it('backtests from one origin, or from origins one step apart, are widened alike (ADR 0026 widened only the first)', () => {
    const z = [0.2, 0.5, 0.9, 1.3, 1.8, 2.4];
    const one = factorFromWindows([{ origin: 8, z }], 6)!;
    const pooledTwice = factorFromWindows(
      [
        { origin: 8, z },
        { origin: 8, z },
      ],
      6,
    )!;
    const adjacent = factorFromWindows(
      [
        { origin: 9, z },
        { origin: 8, z },
      ],
      6,
    )!;
    const apart = factorFromWindows(
      [
        { origin: 14, z },
        { origin: 8, z },
      ],
      6,
    )!;
    close(one.rawFactor, conformalQuantile(z, 0.8) / 1.2815515655446004, 1e-12, 'raw');
    close(one.factor, one.rawFactor * (1 + ORIGIN_WIDENING), 1e-12, 'one origin');
    assert.equal(one.origins, 1);
    close(pooledTwice.factor, pooledTwice.rawFactor * (1 + ORIGIN_WIDENING), 1e-12, 'two windows, one origin');
    assert.equal(adjacent.origins, 2);
    // Under ADR 0026 two distinct origins were not widened at all, however close.
    assert.ok(adjacent.factor > adjacent.rawFactor * (1 + 0.8 * ORIGIN_WIDENING), `adjacent ${adjacent.factor / adjacent.rawFactor}`);
    close(apart.factor, apart.rawFactor * (1 + ORIGIN_WIDENING / 4), 1e-12, 'two independent origins');
  });
  it('widens intervals that are too narrow and narrows intervals that are too wide', () => {
    const withSd = (sd: number) => (train: number[], h: number) => ({
      mean: new Array<number>(h).fill(train[train.length - 1]!),
      sdLow: Array.from({ length: h }, (_, k) => sd * Math.sqrt(k + 1)),
      sdHigh: Array.from({ length: h }, (_, k) => sd * Math.sqrt(k + 1)),
      info: {},
    });
    const narrow = calibrationFactor(walk, 12, withSd(0.1), { windows: 3, minTrain: 8 })!;
    const wide = calibrationFactor(walk, 12, withSd(20), { windows: 3, minTrain: 8 })!;
    assert.ok(narrow.factor > 2, `narrow ${narrow.factor}`);
    assert.ok(wide.factor < 0.3, `wide ${wide.factor}`);
    assert.equal(narrow.windows, 3);
    // The factor is the |z| quantile ratio itself, clamped to [1/5, 5].
    assert.ok(Math.abs(narrow.factor - Math.min(5, narrow.rawFactor)) < 1e-12);
    const tooNarrow = calibrationFactor(walk, 12, withSd(0.001), { windows: 3, minTrain: 8 })!;
    assert.equal(tooNarrow.factor, 5);
    assert.ok(tooNarrow.rawFactor > 5);
  });
  it('backtest refits reuse the chosen specification: the same ETS form and ARIMA orders, no new search', () => {
    const ctx = { horizon: 12, seasonLength: 12 };
    // The first eight years of AirPassengers keep three forms (ETS(M,Ad,M), ETS(M,A,M), ETS(M,N,M)).
    const air = AIR.slice(0, 96);
    const train = air.slice(0, 84);
    const ets = etsForecast(air, ctx);
    const etsAgain = ets.refit!(train, 12);
    // The kept forms are refitted, no other form.
    const forms = (ets.info.forms as { model: string }[]).map((f) => f.model);
    assert.ok(forms.length >= 2, forms.join());
    assert.equal(etsAgain.info.modelsTried, forms.length);
    assert.deepEqual((etsAgain.info.forms as { model: string }[]).map((f) => f.model).sort(), [...forms].sort());
    // The same forms fitted directly and weighted by their AICc there give the same forecast.
    const spec = (name: string) => {
      const [error, trend, season] = name.slice(4, -1).split(',') as [string, string, string];
      return { error: error as 'A' | 'M', trend: trend[0] as 'N' | 'A', damped: trend.endsWith('d'), season: season as 'N' | 'A' | 'M' };
    };
    const direct = forms.map((name) => etsModel(train, 12, spec(name))!);
    const w = akaikeWeights(direct.map((f) => f.aicc));
    const means = direct.map((f) => forecastEts(f, 12).mean);
    etsAgain.mean.forEach((v, h) => {
      close(
        v,
        means.reduce((s, m, k) => s + w[k]! * m[h]!, 0),
        1e-9 * v,
        `step ${h}`,
      );
    });
    const arima = arimaForecast(AIR, ctx);
    const arimaAgain = arima.refit!(train, 12);
    assert.equal(arimaAgain.info.model, arima.info.model);
    assert.equal(arimaAgain.mean.length, 12);
    // combo refits each member's choice and averages them.
    const combo = comboForecast(AIR, ctx).refit!(train, 12);
    assert.equal(combo.mean.length, 12);
    assert.ok(combo.mean.every((v) => Number.isFinite(v) && v > 100));
  });
  it('auto-arima on a short series searches again at each calibration origin and calibrates on those backtests', async () => {
    const ctx = { horizon: 12, seasonLength: 12 };
    const arima = arimaForecast(AIR, ctx);
    // AIR has 144 points: auto.arima's exact search, cheap enough to repeat.
    const again = arima.research!(AIR.slice(0, 120), 12);
    assert.ok((again.info.modelsTried as number) > 1, 'the search ran again');
    // combo passes its ARIMA member's search on.
    assert.ok(comboForecast(AIR, ctx).research);
    // Past 150 points (auto.arima's approximate search) only the chosen orders are refitted.
    const long = Array.from({ length: 160 }, (_, t) => AIR[t % 144]! + t);
    assert.equal(arimaForecast(long, ctx).research, undefined);
    const impl = BUILTIN_MODELS.find((m) => m.info.id === 'auto-arima')!;
    const job = { model: 'auto-arima', series: [AIR], horizon: 12, quantileLevels: [0.1, 0.9], numSamples: 0, seasonLength: 12, seed: 1 };
    const [fc] = await impl.forecast(job, { modelsDir: '/nonexistent', threads: 1 });
    // The factor comes from the three origins searching again alone (ADR 0036; until then pooled
    // with the three refits of the chosen orders: 6 windows).
    const cal = fc!.info!.calibration as { windows: number; backtests: string };
    assert.equal(cal.windows, 3);
    assert.equal(cal.backtests, 'search-again');
    const [longFc] = await impl.forecast({ ...job, series: [long] }, { modelsDir: '/nonexistent', threads: 1 });
    assert.equal((longFc!.info!.calibration as { backtests: string }).backtests, 'refit');
  });
  it('every statistical model reports its calibration in info', async () => {
    const impl = BUILTIN_MODELS.find((m) => m.info.id === 'naive')!;
    const [fc] = await impl.forecast(
      { model: 'naive', series: [walk], horizon: 6, quantileLevels: [0.1, 0.9], numSamples: 0, seasonLength: 1, seed: 1 },
      { modelsDir: '/nonexistent', threads: 1 },
    );
    const cal = fc!.info?.calibration as { factor: number; windows: number };
    assert.equal(cal.windows, 3);
    assert.ok(cal.factor > 0);
  });
  it('a short quarterly series is calibrated on one window over the whole horizon, widened', async () => {
    const impl = BUILTIN_MODELS.find((m) => m.info.id === 'naive')!;
    const [fc] = await impl.forecast(
      { model: 'naive', series: [walk.slice(0, 16)], horizon: 8, quantileLevels: [0.1, 0.9], numSamples: 0, seasonLength: 4, seed: 1 },
      { modelsDir: '/nonexistent', threads: 1 },
    );
    const cal = fc!.info?.calibration as { factor: number; rawFactor: number; windows: number; origins: number; errors: number };
    assert.equal(cal.windows, 1);
    assert.equal(cal.origins, 1);
    // All 8 steps scored (a window after two seasons and two points would have scored 6).
    assert.equal(cal.errors, 8);
    close(cal.factor, Math.min(5, Math.max(0.2, cal.rawFactor * originWidening(1))), 1e-12, 'widened');
  });
  it('a yearly series of 15 points (origins 9 and 8, horizon 6) is widened as nearly one origin', async () => {
    const impl = BUILTIN_MODELS.find((m) => m.info.id === 'naive')!;
    const [fc] = await impl.forecast(
      { model: 'naive', series: [walk.slice(0, 15)], horizon: 6, quantileLevels: [0.1, 0.9], numSamples: 0, seasonLength: 1, seed: 1 },
      { modelsDir: '/nonexistent', threads: 1 },
    );
    const cal = fc!.info?.calibration as { factor: number; rawFactor: number; origins: number; effectiveOrigins: number };
    assert.equal(cal.origins, 2);
    close(cal.effectiveOrigins, 1.09, 0.005, 'effective origins');
    close(cal.factor, Math.min(5, Math.max(0.2, cal.rawFactor * originWidening(effectiveOrigins([9, 8], 6)))), 1e-12, 'widened');
    assert.ok(cal.factor > cal.rawFactor);
  });
  it('a job without quantiles or samples skips the calibration: same mean, no backtest refits', async () => {
    const impl = BUILTIN_MODELS.find((m) => m.info.id === 'auto-ets')!;
    const job = { model: 'auto-ets', series: [walk], horizon: 6, numSamples: 0, seasonLength: 1, seed: 1 };
    const [withQ] = await impl.forecast({ ...job, quantileLevels: [0.5] }, { modelsDir: '/nonexistent', threads: 1 });
    const [meanOnly] = await impl.forecast({ ...job, quantileLevels: [] }, { modelsDir: '/nonexistent', threads: 1 });
    assert.deepEqual(meanOnly!.mean, withQ!.mean);
    assert.equal(meanOnly!.info?.calibration, undefined);
    assert.equal((withQ!.info!.calibration as { windows: number }).windows, 3);
  });
});

describe('non-negative data, MSTL periods', () => {
  it('a falling non-negative series is never forecast below zero (mean, quantiles, samples)', async () => {
    const y = Array.from({ length: 30 }, (_, t) => Math.max(0, 30 - t));
    const impl = BUILTIN_MODELS.find((m) => m.info.id === 'drift')!;
    const [fc] = await impl.forecast(
      { model: 'drift', series: [y], horizon: 10, quantileLevels: [0.1, 0.5, 0.9], numSamples: 4, seasonLength: 1, seed: 1 },
      { modelsDir: '/nonexistent', threads: 1 },
    );
    for (const v of [...fc!.mean, ...fc!.quantiles.flat(), ...(fc!.samples ?? []).flat()]) assert.ok(v >= 0);
    // The same series shifted below zero is not floored.
    const [neg] = await impl.forecast(
      { model: 'drift', series: [y.map((v) => v - 5)], horizon: 10, quantileLevels: [0.5], numSamples: 0, seasonLength: 1, seed: 1 },
      { modelsDir: '/nonexistent', threads: 1 },
    );
    assert.ok(neg!.mean[9]! < 0);
  });
  it('MSTL keeps the season length and its detected multiples only', () => {
    const z = gaussian(mulberry32(2));
    const hourly = Array.from({ length: 24 * 30 }, (_, t) => 50 + 10 * Math.sin((2 * Math.PI * t) / 24) + 6 * (Math.floor(t / 24) % 7 < 5 ? 1 : -1) + z());
    const periods = mstlPeriods(hourly, 24);
    assert.equal(periods[0], 24);
    for (const p of periods) assert.equal(p % 24, 0);
    const fc = mstlForecast(hourly, { horizon: 48, seasonLength: 24 });
    const last = hourly.slice(-24);
    const mae = fc.mean.slice(0, 24).reduce((s, v, h) => s + Math.abs(v - last[h]!), 0) / 24;
    assert.ok(mae < 10, `forecast follows the daily cycle (${mae})`);
  });
  it('MSTL decomposes only seasons that pass the seasonal test (ADR 0034)', () => {
    const z = gaussian(mulberry32(5));
    // Noise around a level given a weekly season it does not have: no STL component, plain ETS.
    // (A random walk passes thetaf's test, its autocorrelation being high at every lag.)
    const noise = Array.from({ length: 400 }, () => 100 + z());
    const flat = mstlForecast(noise, { horizon: 14, seasonLength: 7 });
    assert.deepEqual(flat.info.periods, []);
    assert.deepEqual(flat.info.periodsRejected, [7]);
    assert.match(String(flat.info.fallback), /no season passes the seasonal test/);
    const week = Array.from({ length: 400 }, (_, t) => 100 + [5, 9, 1, 0, 3, 12, 7][t % 7]! + 0.3 * z());
    const seasonal = mstlForecast(week, { horizon: 14, seasonLength: 7 });
    assert.deepEqual(seasonal.info.periods, [7]);
    assert.equal(seasonal.info.periodsRejected, undefined);
  });
});
