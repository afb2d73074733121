import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { arimaForecast, autoArima } from '../../src/engine/models/arima.ts';
import { arima, arimaString, autoArima as fitAutoArima, forecastArima } from '../../src/engine/stats/arima.ts';
import { arCheck, arimaLike, getQ0, invpartrans, kalmanForecast, maInvert, makeArima, partrans, stationaryCov } from '../../src/engine/stats/arima-core.ts';
import { bfgs } from '../../src/engine/stats/bfgs.ts';
import { gaussian, mulberry32 } from '../../src/engine/stats/prng.ts';
import { kpssStat, ndiffs, nsdiffs } from '../../src/engine/stats/unitroot.ts';
import type { ForecastJob } from '../../src/engine/types.ts';

const close = (a: number, b: number, tol: number, what = ''): void => assert.ok(Math.abs(a - b) <= tol, `${what} ${a} != ${b} (tol ${tol})`);

/** R's datasets::AirPassengers (Box & Jenkins series G), monthly 1949-1960. */
const AIR = [
  112, 118, 132, 129, 121, 135, 148, 148, 136, 119, 104, 118, 115, 126, 141, 135, 125, 149, 170, 170, 158, 133, 114, 140, 145, 150, 178, 163, 172, 178, 199,
  199, 184, 162, 146, 166, 171, 180, 193, 181, 183, 218, 230, 242, 209, 191, 172, 194, 196, 196, 236, 235, 229, 243, 264, 272, 237, 211, 180, 201, 204, 188,
  235, 227, 234, 264, 302, 293, 259, 229, 203, 229, 242, 233, 267, 269, 270, 315, 364, 347, 312, 274, 237, 278, 284, 277, 317, 313, 318, 374, 413, 405, 355,
  306, 271, 306, 315, 301, 356, 348, 355, 422, 465, 467, 404, 347, 305, 336, 340, 318, 362, 348, 363, 435, 491, 505, 404, 359, 310, 337, 360, 342, 406, 396,
  420, 472, 548, 559, 463, 407, 362, 405, 417, 391, 419, 461, 472, 535, 622, 606, 508, 461, 390, 432,
];

function randomWalk(n: number, seed: number): number[] {
  const z = gaussian(mulberry32(seed));
  let v = 100;
  return Array.from({ length: n }, () => (v += z()));
}

describe('auto.arima port: R reference values', () => {
  it('AirPassengers: ARIMA(2,1,1)(0,1,0)[12] with R coefficients, likelihood, AICc and forecast', () => {
    // R (forecast 8.x): auto.arima(AirPassengers) prints ar1 0.5960, ar2 0.2143, ma1 -0.9819,
    // sigma^2 132.3, log likelihood -504.92, AIC 1017.85, AICc 1018.17, BIC 1029.35
    // (Hyndman & Athanasopoulos, FPP; statsforecast's docs show the same model), and
    // forecast(., h = 1) gives 445.6349 for January 1961.
    const res = fitAutoArima(AIR, { seasonalPeriod: 12 });
    const { fit } = res;
    assert.equal(arimaString(fit), 'ARIMA(2,1,1)(0,1,0)[12]');
    close(fit.coef[0]!, 0.596, 6e-4, 'ar1');
    close(fit.coef[1]!, 0.2143, 6e-4, 'ar2');
    close(fit.coef[2]!, -0.9819, 6e-4, 'ma1');
    close(fit.sigma2, 132.3, 0.06, 'sigma2');
    close(fit.loglik, -504.92, 0.006, 'loglik');
    close(fit.aic, 1017.85, 0.006, 'aic');
    close(fit.aicc, 1018.17, 0.006, 'aicc');
    close(fit.bic, 1029.35, 0.006, 'bic');
    const fc = forecastArima(res, 3);
    close(fc.mean[0]!, 445.6349, 0.001, 'forecast h=1');
    // R's 80% interval for January 1961 is [430.8903, 460.3795]: se_1 = 14.7446 / qnorm(0.9)
    // (slightly above sqrt(sigma2): the diffuse prior leaves a trace in the filtered state).
    close(fc.se[0]!, (460.3795 - 445.6349) / 1.2815515655446004, 1e-3, 'se h=1');
    assert.ok(fc.se[1]! > fc.se[0]! && fc.se[2]! > fc.se[1]!);
  });

  it('exact AR(1) likelihood equals the hand-computed formula', () => {
    const phi = 0.6;
    const y = randomWalk(40, 3).map((v, i, a) => (i === 0 ? 0.3 : v - a[i - 1]!));
    const mod = makeArima(Float64Array.of(phi), new Float64Array(0), new Float64Array(0));
    const res = arimaLike(y, mod, false);
    // With sigma^2 = 1: the first prediction error variance is 1 / (1 - phi^2), the others 1.
    let ssq = (1 - phi * phi) * y[0]! ** 2;
    for (let t = 1; t < y.length; t++) ssq += (y[t]! - phi * y[t - 1]!) ** 2;
    close(res.ssq, ssq, 1e-9, 'ssq');
    close(res.sumlog, -Math.log(1 - phi * phi), 1e-12, 'sumlog');
    assert.equal(res.nu, y.length);
    // The full log-likelihood at the MLE of sigma^2 (R's concentrated form) from arima():
    const fit = arima(y, { p: 1, q: 0, P: 0, Q: 0, m: 1, d: 0, D: 0 }, 'none', 'ML', [phi], false);
    const n = y.length;
    const s2 = ssq / n;
    const ll = -0.5 * (n * Math.log(2 * Math.PI * s2) + n - Math.log(1 - phi * phi));
    close(fit.loglik, ll, 1e-8, 'loglik');
  });

  it('Kalman forecast of an AR(1): phi^h decay and variance sum of phi^(2j)', () => {
    const mod = makeArima(Float64Array.of(0.5), new Float64Array(0), new Float64Array(0));
    arimaLike([1, 2], mod, false);
    const { pred, variance } = kalmanForecast(3, mod);
    close(pred[0]!, 1, 1e-12);
    close(pred[2]!, 0.25, 1e-12);
    close(variance[0]!, 1, 1e-12);
    close(variance[1]!, 1.25, 1e-12);
    close(variance[2]!, 1.3125, 1e-12);
  });
});

describe('transforms and helpers', () => {
  it('partrans maps any real vector into the stationary region and invpartrans undoes it', () => {
    const u = mulberry32(5);
    for (let k = 0; k < 50; k++) {
      const p = 1 + (k % 4);
      const raw = Array.from({ length: p }, () => 6 * (u() - 0.5));
      const phi = new Array<number>(p);
      partrans(raw, 0, p, phi);
      assert.ok(arCheck(phi), `stationary ${phi}`);
      const back = new Array<number>(p);
      invpartrans(phi, 0, p, back);
      for (let i = 0; i < p; i++) close(back[i]!, raw[i]!, 1e-8);
    }
    assert.equal(arCheck([1.01]), false);
    assert.equal(arCheck([0.5, 0.6]), false);
  });

  it("the fast stationary covariance equals Gardner et al.'s getQ0", () => {
    const cases: [number[], number[]][] = [
      [[0.5], [0.3, 0]],
      [
        [0.5, -0.2],
        [0.4, 0.1, 0.05],
      ],
      [[], [0.4, 0.3]],
      [
        [0.3, 0, 0, 0.2, -0.06],
        [0.5, 0, 0, 0],
      ],
    ];
    for (const [phi, theta] of cases) {
      const r = Math.max(phi.length, theta.length + 1);
      const a = getQ0(phi, theta);
      const b = stationaryCov(phi, theta, r);
      for (let i = 0; i < r * r; i++) close(b[i]!, a[i]!, 1e-12);
    }
  });

  it('maInvert reflects roots inside the unit circle', () => {
    assert.deepEqual(maInvert([2]), [0.5]);
    const inv = maInvert([2.5, 1]); // 1 + 2.5z + z^2 = (1 + 2z)(1 + 0.5z) -> (1 + 0.5z)(1 + 0.5z)
    close(inv[0]!, 1, 1e-9);
    close(inv[1]!, 0.25, 1e-9);
    assert.deepEqual(maInvert([0.3]), [0.3]);
  });

  it('BFGS (R vmmin) minimises the Rosenbrock function', () => {
    const f = (x: number[]): number => 100 * (x[1]! - x[0]! ** 2) ** 2 + (1 - x[0]!) ** 2;
    const res = bfgs(f, [-1.2, 1], { maxit: 500 });
    close(res.x[0]!, 1, 1e-3);
    close(res.x[1]!, 1, 2e-3);
  });

  it('KPSS and ndiffs: a random walk needs one difference, white noise none', () => {
    const z = gaussian(mulberry32(11));
    const white = Array.from({ length: 200 }, () => z());
    assert.equal(ndiffs(white), 0);
    assert.equal(ndiffs(randomWalk(200, 12)), 1);
    assert.ok(kpssStat(randomWalk(200, 12), 5) > 0.463);
  });

  it('nsdiffs: a strong season is differenced, noise is not', () => {
    const z = gaussian(mulberry32(21));
    const seasonal = Array.from({ length: 96 }, (_, t) => 50 * Math.sin((2 * Math.PI * t) / 12) + z());
    assert.equal(nsdiffs(seasonal, 12), 1);
    assert.equal(
      nsdiffs(
        Array.from({ length: 96 }, () => z()),
        12,
      ),
      0,
    );
    assert.equal(nsdiffs(AIR, 12), 1);
  });
});

describe('auto-arima model', () => {
  const base: ForecastJob = {
    model: 'auto-arima',
    series: [AIR],
    horizon: 12,
    quantileLevels: [0.1, 0.5, 0.9],
    numSamples: 0,
    seasonLength: 12,
    seed: 1,
  };
  const env = { modelsDir: '', threads: 1 };

  it("returns R's model and forecast with monotone quantiles centred on the mean", async () => {
    const [fc] = await autoArima.forecast(base, env);
    assert.ok(fc);
    assert.equal(fc.info?.model, 'ARIMA(2,1,1)(0,1,0)[12]');
    assert.equal(fc.mean.length, 12);
    close(fc.mean[0]!, 445.6349, 0.001);
    for (let h = 0; h < 12; h++) {
      assert.ok(fc.quantiles[0]![h]! < fc.quantiles[1]![h]! && fc.quantiles[1]![h]! < fc.quantiles[2]![h]!);
      close(fc.quantiles[1]![h]!, fc.mean[h]!, 1e-9);
    }
    // R: forecast(auto.arima(AirPassengers), h = 1, level = 80) gives [430.8903, 460.3795]: the
    // fitter's own (analytic) interval, before the model's backtest calibration rescales it.
    const raw = arimaForecast(AIR, { horizon: 1, seasonLength: 12 });
    close(raw.mean[0]! - 1.2815515655446004 * raw.sdLow[0]!, 430.8903, 2e-3);
    close(raw.mean[0]! + 1.2815515655446004 * raw.sdHigh[0]!, 460.3795, 2e-3);
    const cal = fc.info?.['calibration'] as { factor: number };
    close(fc.quantiles[2]![0]! - fc.mean[0]!, cal.factor * (460.3795 - 445.6349), 3e-3);
  });

  it('seeded samples are reproducible; short, constant and gappy series do not crash', async () => {
    const short = [3, 5, 4, 6, 5];
    const constant = new Array<number>(30).fill(7);
    const gappy = AIR.slice(0, 60).map((v, i) => (i % 7 === 3 ? NaN : v));
    const job: ForecastJob = { ...base, series: [short, constant, gappy, randomWalk(80, 4)], numSamples: 5, horizon: 6 };
    const a = await autoArima.forecast(job, env);
    const b = await autoArima.forecast(job, env);
    assert.deepEqual(
      a.map((f) => f.samples),
      b.map((f) => f.samples),
    );
    for (const fc of a) {
      assert.equal(fc.mean.length, 6);
      assert.equal(fc.samples?.length, 5);
      for (const v of fc.mean) assert.ok(Number.isFinite(v));
    }
    assert.deepEqual(a[1]!.mean, new Array<number>(6).fill(7));
  });
});
