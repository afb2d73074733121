import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { planImpute } from '../../src/analytics/impute.ts';
import { ImputeRequest } from '../../src/analytics/impute-schemas.ts';
import { CrossValidationRequest } from '../../src/analytics/schemas.ts';
import { planCrossValidation } from '../../src/analytics/cross-validation.ts';
import { createEngine } from '../../src/engine/engine.ts';
import { seriesWorkMs } from '../../src/engine/work.ts';
import { EnsembleForecastRequest } from '../../src/ensemble/schemas.ts';
import { planEnsemble } from '../../src/ensemble/service.ts';
import { AppError } from '../../src/shared/errors.ts';
import { booksOf } from '../billing/helpers.ts';
import { call, createTestApp, DB_KIND, registerUser, type TestApp, type TestUser } from '../helpers/app.ts';

/** A series with a season of `period` steps, a trend and noise (seeded): the costliest kind for the season searches. */
function seasonal(n: number, period: number): number[] {
  let s = 12345;
  const rnd = () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return s / 2147483648;
  };
  return Array.from({ length: n }, (_, t) => 100 + 10 * Math.sin((2 * Math.PI * t) / period) + 0.01 * t + (rnd() - 0.5) * 3);
}

const AIRLINE = [
  112, 118, 132, 129, 121, 135, 148, 148, 136, 119, 104, 118, 115, 126, 141, 135, 125, 149, 170, 170, 158, 133, 114, 140, 145, 150, 178, 163, 172, 178, 199,
  199, 184, 162, 146, 166, 171, 180, 193, 181, 183, 218, 230, 242, 209, 191, 172, 194, 196, 196, 236, 235, 229, 243, 264, 272, 237, 211, 180, 201, 204, 188,
  235, 227, 234, 264, 302, 293, 259, 229, 203, 229, 242, 233, 267, 269, 270, 315, 364, 347, 312, 274, 237, 278, 284, 277, 317, 313, 318, 374, 413, 405, 355,
  306, 271, 306, 315, 301, 356, 348, 355, 422, 465, 467, 404, 347, 305, 336, 340, 318, 362, 348, 363, 435, 491, 505, 404, 359, 310, 337, 360, 342, 406, 396,
  420, 472, 548, 559, 463, 407, 362, 405, 417, 391, 419, 461, 472, 535, 622, 606, 508, 461, 390, 432,
];

/**
 * ADR 0039: the price follows the model's work (input tokens are the estimated model time in 2 ms
 * units when that is more than the values read), and work that could only run into the engine's
 * time limit is refused at planning, before any credit is held. The reviewer's requests that ran
 * 30 s for free are here, answered at once.
 */
describe(`the price follows the work; work past the limit is refused at planning (${DB_KIND})`, () => {
  let t: TestApp;
  let u: TestUser;
  before(async () => {
    const engine = createEngine({ poolSize: 1, timeoutMs: 30_000, maxQueue: 16, modelsDir: '/nonexistent', threads: 1 });
    t = await createTestApp({ overrides: { engine } });
    u = await registerUser(t);
  });
  after(() => t.close());
  const quote = async (request: unknown) => {
    const r = await call(t, 'POST', '/v1/forecast/quote', { token: u.token, body: { request } });
    assert.equal(r.status, 200, r.text);
    return r.body as { credits: number; usage: { input_tokens: number }; would_refuse: { status: number; code: string; message: string } | null };
  };
  const body = (model: string, target: number[], frequency: string | null, extra: Record<string, unknown> = {}) => ({
    model,
    inputs: [{ target, start: '2000-01-01T00:00:00Z' }],
    parameters: { prediction_length: 1, quantile_levels: [], ...(frequency ? { frequency } : {}), ...extra },
  });

  test('cheap models keep their price (tokens = values read); the README example stays 1 credit', async () => {
    const naive = await quote(body('naive', seasonal(990, 144), '10min'));
    assert.equal(naive.usage.input_tokens, 990);
    assert.equal(naive.credits, 1);
    const readme = await quote({
      model: 'auto-ets',
      inputs: [{ target: AIRLINE, start: '1949-01-01' }],
      parameters: { prediction_length: 12, frequency: 'MS', quantile_levels: [0.1, 0.5, 0.9] },
    });
    assert.equal(readme.credits, 1);
  });

  test('a seasonal search is priced by its season: auto-arima on 990 points costs more at season 96 than at 48, more than naive', async () => {
    const at48 = await quote(body('auto-arima', seasonal(990, 48), '30min'));
    const at96 = await quote(body('auto-arima', seasonal(990, 96), '15min'));
    assert.ok(at48.usage.input_tokens > 990, JSON.stringify(at48));
    assert.ok(at48.credits >= 2, JSON.stringify(at48));
    assert.ok(at96.credits > at48.credits, `${at96.credits} vs ${at48.credits}`);
    // The same points without a season to search: the token floor.
    const flat = await quote(body('theta', seasonal(990, 96), '15min'));
    assert.equal(flat.credits, 1);
  });

  test("the reviewer's requests that ran 30 s for free are 413 at planning, naming what to shorten, and cost nothing", async () => {
    const cases: [string, unknown, RegExp][] = [
      ['auto-arima, 990 at 10min', body('auto-arima', seasonal(990, 144), '10min'), /coarser parameters\.frequency/],
      ['combo, 990 at 10min', body('combo', seasonal(990, 144), '10min'), /coarser parameters\.frequency/],
      ['auto-arima, 990 at 5min', body('auto-arima', seasonal(990, 288), '5min'), /coarser parameters\.frequency/],
      ['auto-ets, 100,000 hourly', body('auto-ets', seasonal(100_000, 24), 'h', { context_length: 100_000 }), /parameters\.context_length \d+ or less/],
      ['ces, 100,000 hourly', body('ces', seasonal(100_000, 24), 'h', { context_length: 100_000 }), /parameters\.context_length \d+ or less/],
      ['auto-arima, 100,000 hourly', body('auto-arima', seasonal(100_000, 24), 'h', { context_length: 100_000 }), /parameters\.context_length \d+ or less/],
    ];
    for (const [name, b, fix] of cases) {
      const started = performance.now();
      const r = await call(t, 'POST', '/v1/forecast', { token: u.token, body: b });
      assert.equal(r.status, 413, `${name}: ${r.text}`);
      assert.equal(r.body.code, 'request_too_large');
      assert.match(r.body.error, /estimated at [\d.]+ s of model time .* at most 15\.0 s \(INFERENCE_MAX_JOB_WORK_MS\)/, name);
      assert.match(r.body.error, fix, name);
      // Refused from the plan: nothing ran (a fit of these takes seconds).
      assert.ok(performance.now() - started < 5000, name);
    }
    const books = await booksOf(t, u.id);
    assert.equal(books.balance, 80000);
    assert.equal(books.events, 0);
    assert.equal(books.held, 0);
    // The suggested context is accepted.
    const refused = await call(t, 'POST', '/v1/forecast', { token: u.token, body: cases[3]![1] });
    const fits = Number(/context_length (\d+) or less/.exec(refused.body.error)?.[1]);
    const q = await quote(body('auto-ets', seasonal(100_000, 24), 'h', { context_length: fits }));
    assert.equal(q.would_refuse, null, JSON.stringify(q));
  });

  test('a season the model detects is priced as one of up to 24; a costlier detected season is a 422 before any fit, and free', async () => {
    const target = seasonal(990, 48);
    const started = performance.now();
    const r = await call(t, 'POST', '/v1/forecast', {
      token: u.token,
      body: { model: 'auto-arima', inputs: [{ target }], parameters: { prediction_length: 1, quantile_levels: [] } },
    });
    assert.equal(r.status, 422, r.text);
    assert.deepEqual(r.body.detail[0].loc, ['body', 'inputs', 0, 'target']);
    assert.match(r.body.detail[0].msg, /detected season of 4\d steps .* send parameters\.frequency/);
    assert.ok(performance.now() - started < 5000, 'refused before the seasonal search (seconds)');
    const books = await booksOf(t, u.id);
    assert.equal(books.events, 0);
    assert.equal(books.held, 0);
    // With the frequency the season is priced (and the forecast would run).
    const priced = await quote(body('auto-arima', target, '30min'));
    assert.equal(priced.would_refuse, null);
    assert.ok(priced.credits >= 2, JSON.stringify(priced));
  });

  test('ensembles, cross-validation and imputation plan their jobs with the same rule', async () => {
    const long = seasonal(100_000, 24);
    // Ensemble: the default candidates that cannot fit the budget on these inputs are filtered, with the reason.
    const plan = await planEnsemble(
      t.deps,
      EnsembleForecastRequest.parse({ inputs: [{ target: long }], parameters: { prediction_length: 24, frequency: 'h', context_length: 100_000 } }),
      async () => true,
    );
    for (const model of ['auto-ets', 'auto-arima', 'combo']) {
      assert.ok(
        plan.filters.some((f) => f.startsWith(`${model}: cannot serve these inputs (This ${model} forecast is estimated at`)),
        `${model}: ${plan.filters.join(' | ')}`,
      );
    }
    assert.ok(plan.candidates.some((c) => c.model === 'theta'));
    // Cross-validation: a window past the budget refuses the whole call (413).
    await assert.rejects(
      planCrossValidation(
        t.deps,
        CrossValidationRequest.parse({
          models: ['auto-arima'],
          inputs: [{ target: seasonal(990, 144) }],
          prediction_length: 1,
          n_windows: 2,
          frequency: '10min',
        }),
      ),
      (e: unknown) => e instanceof AppError && e.code === 'request_too_large' && /estimated at/.test(e.message),
    );
    // Imputation: 25 single nulls of 1,000 hourly points with auto-ets were 25 fits in one job (about
    // 60 s, past the time limit); they are now cut into jobs of at most the budget each.
    const gappy = seasonal(1000, 24).map((v, i) => (i % 40 === 20 ? null : v));
    const imp = await planImpute(t.deps, ImputeRequest.parse({ inputs: [{ target: gappy }], model: 'auto-ets', frequency: 'h' }));
    assert.equal(imp.gaps.length, 25);
    assert.ok(imp.forward.length > 1, `${imp.forward.length} forward jobs`);
    for (const p of [...imp.forward, ...imp.backward]) assert.ok(p.prepared.workMs <= t.deps.config.forecast.maxJobWorkMs, String(p.prepared.workMs));
    const fits = imp.forward.reduce((a, p) => a + p.prepared.inputs.length, 0) + imp.backward.reduce((a, p) => a + p.prepared.inputs.length, 0);
    assert.equal(fits, 50);
    // Priced as the fits they run: each context's work.
    const work = [...imp.forward, ...imp.backward].reduce((a, p) => a + p.prepared.workMs, 0);
    assert.ok(imp.credits >= Math.floor(work / 2000), `${imp.credits} credits for ${work} ms`);
    assert.ok(seriesWorkMs('auto-ets', { points: 500, seasonLength: 24, calibrated: false }) > 1000);
  });
});
