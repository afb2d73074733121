import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createEngine } from '../../src/engine/engine.ts';
import { mase, smape } from '../../src/ensemble/metrics.ts';
import { call, createTestApp, DB_KIND, expectSchema, registerUser, routeSchema, type TestApp, type TestUser } from '../helpers/app.ts';

describe(`POST /v1/cross-validation (${DB_KIND})`, () => {
  let t: TestApp;
  let u: TestUser;
  before(async () => {
    const engine = createEngine({ poolSize: 2, timeoutMs: 60_000, maxQueue: 256, modelsDir: '/nonexistent', threads: 1 });
    // A small output cap, so that the windows together pass it where each one alone does not.
    t = await createTestApp({ overrides: { engine }, env: { FORECAST_MAX_OUTPUT_VALUES: '5000' } });
    u = await registerUser(t);
  });
  after(() => t.close());

  const seasonal = Array.from({ length: 60 }, (_, i) => 50 + 0.5 * i + 8 * Math.sin((2 * Math.PI * i) / 12) + ((i * 7919) % 5) - 2);
  const cv = (body: unknown, token = u.token) => call(t, 'POST', '/v1/cross-validation', { token, body });
  const balance = async () => (await call(t, 'GET', '/api/account/billing', { token: u.token })).body.free_credits.remaining as number;

  test('windows, actuals, metrics that match the forecasts, ranking, one debit equal to the windows × models forecasts', async () => {
    const before = await balance();
    const body = {
      models: ['naive', 'seasonal-naive'],
      inputs: [{ target: seasonal, start: '2020-01-01', item_id: 'a' }, { target: seasonal.slice(5).map((x) => [x, x * 2]) }],
      prediction_length: 6,
      n_windows: 3,
      step_size: 4,
      frequency: 'MS',
      quantile_levels: [0.1, 0.5, 0.9],
      metadata: { run: 7 },
    };
    const r = await cv(body);
    assert.equal(r.status, 200, r.text);
    const out = expectSchema(routeSchema(t, 'POST', '/v1/cross-validation'), r.body) as Record<string, any>;
    assert.equal(out.object, 'cross_validation');
    assert.deepEqual(out.metadata, { run: 7 });
    assert.equal(out.step_size, 4);
    // window k's cut-off: n − h − (W−1−k)·step, per input
    assert.deepEqual(
      out.windows.map((w: any) => w.cutoffs),
      [
        [60 - 6 - 8, 55 - 6 - 8],
        [60 - 6 - 4, 55 - 6 - 4],
        [60 - 6, 55 - 6],
      ],
    );
    assert.deepEqual(
      out.windows[2].actuals[0].map((row: number[]) => row[0]),
      seasonal.slice(54, 60),
    );
    assert.equal(out.windows[0].actuals[1][0].length, 2);
    // seasonal naive beats naive on a seasonal series
    assert.deepEqual(
      out.results.map((x: any) => x.model),
      ['seasonal-naive', 'naive'],
    );
    assert.deepEqual(
      out.results.map((x: any) => x.rank),
      [1, 2],
    );
    // naive's window 2 forecast of input 0 is the last training value; its metrics are the ensemble's functions of it
    const naive = out.results.find((x: any) => x.model === 'naive');
    const w2 = naive.windows[2];
    const fc = w2.forecast.outputs[0].mean.map((row: number[]) => row[0]);
    assert.deepEqual(fc, new Array(6).fill(seasonal[53]));
    assert.match(w2.forecast.outputs[0].timestamps[0], /^2024-07-01/);
    // Each window's forecast names its input by item_id alone.
    assert.equal(w2.forecast.outputs[0].metadata.item_id, 'a');
    const single = naive.windows.map((w: any) => w.metrics.smape);
    assert.ok(single.every((x: number) => Number.isFinite(x) && x >= 0));
    // pooled over 3 windows × (1 + 2) series
    const all: number[] = [];
    const mases: number[] = [];
    for (let k = 0; k < 3; k++) {
      const cut = out.windows[k].cutoffs;
      const series = [seasonal, seasonal.slice(5), seasonal.slice(5).map((x) => x * 2)];
      const cuts = [cut[0], cut[1], cut[1]];
      series.forEach((s, j) => {
        const actual = s.slice(cuts[j], cuts[j] + 6);
        const f = new Array(6).fill(s[cuts[j] - 1]);
        all.push(smape(actual, f));
        mases.push(mase(actual, f, s.slice(0, cuts[j]), 12));
      });
    }
    assert.ok(Math.abs(naive.metrics.smape - all.reduce((a, b) => a + b) / all.length) < 1e-9);
    assert.ok(Math.abs(naive.metrics.mase - mases.reduce((a, b) => a + b) / mases.length) < 1e-9);
    assert.equal(naive.metrics.coverage.length, 1);
    assert.equal(naive.metrics.coverage[0].nominal, 0.8);
    assert.ok(naive.metrics.coverage[0].observed >= 0 && naive.metrics.coverage[0].observed <= 1);
    assert.ok(naive.metrics.wql > 0);
    // billing: the sum of the runs' forecasts, debited once, one usage event
    const sum = out.results.reduce((a: number, x: any) => a + x.credits, 0);
    assert.equal(out.total_cost_credits, sum);
    assert.equal(before - (await balance()), sum);
    // each window × model costs what the same forecast costs on its own
    let alone = 0;
    for (const cut of [46, 50, 54]) {
      const b0 = await balance();
      const inputs = [{ target: seasonal.slice(0, cut) }, { target: seasonal.slice(5, 5 + cut - 5).map((x) => [x, x * 2]) }];
      const f = await call(t, 'POST', '/v1/forecast', { token: u.token, body: { model: 'naive', inputs, parameters: { prediction_length: 6 } } });
      assert.equal(f.status, 200, f.text);
      alone += b0 - (await balance());
    }
    assert.equal(naive.credits, alone);
    const events = await t.deps.database.db
      .selectFrom('usage_events')
      .selectAll()
      .where('user_id', '=', u.id)
      .where('model', '=', 'cross-validation')
      .execute();
    assert.equal(events.length, 1);
    assert.equal(Number(events[0]!.total_tokens), out.usage.total_tokens);
  });

  test('an input’s metadata is not copied into every window (only its item_id, at most 256 characters)', async () => {
    const body = (input: Record<string, unknown>) => ({
      models: ['naive', 'drift'],
      inputs: [{ target: seasonal, ...input }],
      prediction_length: 3,
      n_windows: 4,
    });
    const r = await cv(body({ metadata: { item_id: 'store-1', notes: 'x'.repeat(10_000) } }));
    assert.equal(r.status, 200, r.text);
    assert.ok(r.text.length < 20_000, `${r.text.length} bytes: the 10 KB of notes were copied into the windows`);
    for (const res of r.body.results) for (const w of res.windows) assert.deepEqual(w.forecast.outputs[0].metadata.item_id, 'store-1');
    for (const input of [{ item_id: 'x'.repeat(257) }, { metadata: { item_id: 'x'.repeat(257) } }]) {
      const bad = await cv(body(input));
      assert.equal(bad.status, 422, bad.text);
      assert.match(JSON.stringify(bad.body.detail), /item_id/);
    }
  });

  test('nulls in the held-out values are skipped; defaults (3 windows of 12, step 12)', async () => {
    const target: (number | null)[] = seasonal.slice();
    target[59] = null;
    const r = await cv({ models: ['drift'], inputs: [{ target }] });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.n_windows, 3);
    assert.equal(r.body.prediction_length, 12);
    assert.deepEqual(r.body.windows[0].cutoffs, [24]);
    assert.equal(r.body.windows[2].actuals[0][11][0], null);
    assert.ok(Number.isFinite(r.body.results[0].metrics.smape));
  });

  test('metrics do not depend on the magnitude: the same numbers for a series near the largest double; a metric past it is 422', async () => {
    // Values up to about 1.6e308: |y| + |f| and the sums of |y| passed the largest double (sMAPE null, MASE and WQL 0).
    const base = Array.from({ length: 60 }, (_, i) => 14 * Math.sin((2 * Math.PI * i) / 12) + ((i * 7919) % 5) * 0.2);
    const body = (s: number) => ({
      models: ['seasonal-naive', 'auto-ets'],
      inputs: [{ target: base.map((v) => v * s) }],
      prediction_length: 6,
      n_windows: 2,
      frequency: 'MS',
    });
    const ref = await cv(body(1));
    assert.equal(ref.status, 200, ref.text);
    for (const s of [2 ** 1020, 2 ** -1000]) {
      const r = await cv(body(s));
      assert.equal(r.status, 200, r.text);
      const out = expectSchema(routeSchema(t, 'POST', '/v1/cross-validation'), r.body) as Record<string, any>;
      for (const [m, res] of out.results.entries()) {
        const want = ref.body.results[m];
        assert.equal(res.model, want.model);
        for (const key of ['smape', 'mase', 'wql']) {
          const x = res.metrics[key];
          assert.ok(
            typeof x === 'number' && Math.abs(x - want.metrics[key]) <= 1e-6 * want.metrics[key],
            `${res.model} ${key} at ${s}: ${x} vs ${want.metrics[key]}`,
          );
        }
      }
    }
    // A flat training part has no MASE scale (it falls back to 1, in the data's units): an error of 2e308 has no number.
    const before = await balance();
    const flat = [...new Array(20).fill(1e308), ...new Array(6).fill(-1e308)];
    const r = await cv({ models: ['naive'], inputs: [{ target: base }, { target: flat }], prediction_length: 6, n_windows: 1 });
    assert.equal(r.status, 422, r.text);
    assert.deepEqual(r.body.detail[0].loc, ['body', 'inputs', 1, 'target']);
    assert.match(r.body.detail[0].msg, /mase/);
    assert.equal(await balance(), before);
  });

  test('bad input: too short 422 naming the input; runs over the cap 413; output over the cap 413; unknown model 404; no credential 400; nothing debited', async () => {
    const before = await balance();
    const short = await cv({ models: ['naive'], inputs: [{ target: seasonal }, { target: seasonal.slice(0, 10) }], prediction_length: 6, n_windows: 2 });
    assert.equal(short.status, 422, short.text);
    assert.deepEqual(short.body.detail[0].loc, ['body', 'inputs', 1, 'target']);
    const runs = await cv({ models: ['naive', 'drift', 'theta'], inputs: [{ target: seasonal }], prediction_length: 2, n_windows: 20 });
    assert.equal(runs.status, 413);
    assert.equal(runs.body.code, 'request_too_large');
    // 20 windows × 100 steps × 4 numbers = 8000 > 5000, one window alone 400
    const long = Array.from({ length: 300 }, (_, i) => i % 7);
    const output = await cv({ models: ['naive'], inputs: [{ target: long }], prediction_length: 100, n_windows: 20, step_size: 5 });
    assert.equal(output.status, 413, output.text);
    assert.match(output.body.error, /would return 10000 numbers; at most 5000/);
    const unknown = await cv({ models: ['nope'], inputs: [{ target: seasonal }] });
    assert.equal(unknown.status, 404);
    const covariates = await cv({ models: ['naive'], inputs: [{ target: seasonal, past_covariates: { x: seasonal } }] });
    assert.equal(covariates.status, 422);
    const windows = await cv({ models: ['naive'], inputs: [{ target: seasonal }], n_windows: 0 });
    assert.equal(windows.status, 422);
    assert.equal((await call(t, 'POST', '/v1/cross-validation', { body: { models: ['naive'], inputs: [{ target: seasonal }] } })).status, 400);
    assert.equal(await balance(), before);
  });
});
