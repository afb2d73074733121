import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { cesForecast } from '../../src/engine/models/ces.ts';
import { autoCes, type CesSeasonality, cesFormsFor, cesWith, fitCes, forecastCes, spectralRadius } from '../../src/engine/stats/ces.ts';

interface RefCase {
  series: string;
  m: number;
  h: number;
  seasonality: CesSeasonality;
  B: number[];
  negLogLik: number;
  aicc: number;
  fitted: number[];
  forecast: number[];
  autoAicc?: Record<string, number>;
}
/** R smooth's ces()/auto.ces() on three series (provenance in the file's `source`). */
const REF = JSON.parse(readFileSync(new URL('./fixtures/ces-reference.json', import.meta.url), 'utf8')) as {
  series: Record<string, number[]>;
  cases: Record<string, RefCase>;
};
const train = (c: RefCase): number[] => {
  const y = REF.series[c.series]!;
  return y.slice(0, y.length - c.h);
};
const maxRel = (a: readonly number[], b: readonly number[]): number => Math.max(...a.map((v, i) => Math.abs(v - b[i]!) / Math.abs(b[i]!)));

describe("CES port of R smooth's ces / auto.ces", () => {
  for (const [name, c] of Object.entries(REF.cases).filter(([n]) => !n.startsWith('auto'))) {
    it(`${name}: at R's parameters the backcast fit, likelihood, AICc and forecast are R's`, () => {
      const fit = cesWith(train(c), c.seasonality, c.m, c.B);
      assert.ok(Math.abs(fit.negLogLik - c.negLogLik) < 1e-8, `-logL ${fit.negLogLik} vs R ${c.negLogLik}`);
      assert.ok(Math.abs(fit.aicc - c.aicc) < 1e-7, `AICc ${fit.aicc} vs R ${c.aicc}`);
      assert.ok(maxRel(fit.fitted, c.fitted) < 1e-10, `fitted off by ${maxRel(fit.fitted, c.fitted)}`);
      const fc = forecastCes(fit, c.h).mean;
      assert.ok(maxRel(fc, c.forecast) < 1e-10, `forecast off by ${maxRel(fc, c.forecast)}`);
    });
    it(`${name}: the optimiser reaches R's likelihood or a better one`, () => {
      const fit = fitCes(train(c), c.seasonality, c.m);
      assert.ok(fit.negLogLik <= c.negLogLik + 1e-3, `-logL ${fit.negLogLik} vs R ${c.negLogLik}`);
      for (const block of [fit.B.slice(0, 2)]) assert.ok(block.every(Number.isFinite));
    });
  }

  it('auto.ces picks the form R picks (full on AirPassengers, partial on the quarterly series), by AICc', () => {
    for (const name of ['auto_airpassengers', 'auto_quarterly']) {
      const c = REF.cases[name]!;
      const found = autoCes(train(c), c.m);
      assert.ok(found);
      assert.equal(found.best.form, c.seasonality, name);
      assert.equal(found.tried.length, 4);
      // Every other form's AICc is above the chosen one's, as in R.
      for (const f of found.tried) assert.ok(f.aicc >= found.best.aicc);
      assert.ok(found.best.aicc <= c.aicc + 1e-2, `${name}: AICc ${found.best.aicc} vs R ${c.aicc}`);
    }
  });

  it('forms allowed by the sample size as auto.ces allows them; none without a season', () => {
    assert.deepEqual(cesFormsFor(40, 1), ['none']);
    assert.deepEqual(cesFormsFor(3, 1), []);
    assert.deepEqual(cesFormsFor(18, 12), ['none']);
    assert.deepEqual(cesFormsFor(19, 12), ['none', 'partial']);
    assert.deepEqual(cesFormsFor(28, 12), ['none', 'simple', 'partial']);
    assert.deepEqual(cesFormsFor(32, 12), ['none', 'simple', 'partial', 'full']);
  });

  it('the admissibility bound: eigenvalues of F - g w inside the unit circle (2x2 complex and real cases)', () => {
    // [[0, -1], [1, 0]] has eigenvalues ±i: modulus 1.
    assert.equal(
      spectralRadius([
        [0, -1],
        [1, 0],
      ]),
      1,
    );
    assert.equal(
      spectralRadius([
        [2, 0],
        [0, 0.5],
      ]),
      2,
    );
    assert.equal(spectralRadius([[-0.3]]), 0.3);
    // Every fitted model is admissible.
    const c = REF.cases.full_airpassengers!;
    const fit = fitCes(train(c), 'full', 12);
    const D = (a0: number, a1: number): number[][] => [
      [1 - (a0 - a1), a1 - 1],
      [1 - (a0 + a1), 1 - a0],
    ];
    assert.ok(spectralRadius(D(fit.B[0]!, fit.B[1]!)) <= 1);
    assert.ok(spectralRadius(D(fit.B[2]!, fit.B[3]!)) <= 1);
  });

  it('the h-step variance grows from sigma2 by the squared impulse responses; the model is linear in the data', () => {
    const c = REF.cases.none_nonseasonal!;
    const y = train(c);
    const fit = cesWith(y, 'none', 1, c.B);
    const { variance } = forecastCes(fit, 4);
    assert.ok(Math.abs(variance[0]! - fit.sigma2) < 1e-12 * fit.sigma2);
    // psi_1 = w' g = a0 - a1 for the non-seasonal form.
    const psi1 = c.B[0]! - c.B[1]!;
    assert.ok(Math.abs(variance[1]! - fit.sigma2 * (1 + psi1 ** 2)) < 1e-9 * fit.sigma2);
    for (let h = 1; h < 4; h++) assert.ok(variance[h]! >= variance[h - 1]!);
    // Backcast initial states and scale-free parameters: c * y is fitted as c times the fit of y.
    const scaled = cesWith(
      y.map((v) => v * 1000),
      'none',
      1,
      c.B,
    );
    assert.ok(
      maxRel(
        forecastCes(scaled, 4).mean,
        forecastCes(fit, 4).mean.map((v) => v * 1000),
      ) < 1e-12,
    );
  });

  it('the model: a constant series is that constant; too short for any form, naive; otherwise CES(form) in info', () => {
    const flat = cesForecast([5, 5, 5, 5, 5], { horizon: 3, seasonLength: 1 });
    assert.deepEqual(flat.mean, [5, 5, 5]);
    const short = cesForecast([1, 2, 3], { horizon: 2, seasonLength: 1 });
    assert.match(String(short.info.fallback), /naive/);
    assert.deepEqual(short.mean, [3, 3]);
    const c = REF.cases.auto_airpassengers!;
    const fc = cesForecast(train(c), { horizon: c.h, seasonLength: 12 });
    assert.equal(fc.info.model, 'CES(full)');
    assert.equal(fc.mean.length, c.h);
    // The mean is R's auto.ces forecast up to the optimiser's last digits.
    assert.ok(maxRel(fc.mean, c.forecast) < 1e-3, `off by ${maxRel(fc.mean, c.forecast)}`);
    assert.ok(fc.sdLow.every((s, h) => s > 0 && (h === 0 || s >= fc.sdLow[h - 1]!)));
  });
});
