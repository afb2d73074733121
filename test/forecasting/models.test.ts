import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createEngine } from '../../src/engine/engine.ts';
import { call, createTestApp, DB_KIND, expectSchema, registerUser, routeSchema, type TestApp, type TestUser } from '../helpers/app.ts';

/** Every built-in model of the catalog, through /v1/forecast on the real worker-pool engine. */
describe(`every built-in model answers /v1/forecast (${DB_KIND})`, () => {
  let t: TestApp;
  let u: TestUser;
  let builtins: string[] = [];
  before(async () => {
    const engine = createEngine({ poolSize: 2, timeoutMs: 60_000, maxQueue: 64, modelsDir: '/nonexistent', threads: 1 });
    t = await createTestApp({ overrides: { engine } });
    u = await registerUser(t);
    builtins = t.deps.catalog.list({ provider: 'builtin' }).map((m) => m.id);
  });
  after(() => t.close());

  // Two seasonal cycles of monthly data with a trend, a gap, and a second variate.
  const series = Array.from({ length: 48 }, (_, i) => 100 + i + 10 * Math.sin((2 * Math.PI * i) / 12));

  test('the catalog has the built-in models the issue names', () => {
    for (const id of ['naive', 'seasonal-naive', 'auto-ets', 'auto-arima', 'theta', 'mstl']) assert.ok(builtins.includes(id), id);
  });

  test('univariate with nulls, multivariate, timestamps, quantiles and samples: correct shapes for each model', async () => {
    for (const model of builtins) {
      const withGap = series.map((v, i) => (i === 20 || i === 21 ? null : v));
      const r = await call(t, 'POST', '/v1/forecast', {
        token: u.token,
        body: {
          model,
          inputs: [
            { target: withGap, start: '2020-01-01', item_id: 'uni' },
            { target: series.map((v, i) => [v, i % 7 === 0 ? null : 2 * v]), start: '2020-01-01' },
          ],
          parameters: { prediction_length: 6, frequency: 'MS', quantile_levels: [0.05, 0.5, 0.95], num_samples: 3 },
        },
      });
      assert.equal(r.status, 200, `${model}: ${r.text}`);
      expectSchema(routeSchema(t, 'POST', '/v1/forecast'), r.body);
      const [uni, multi] = r.body.outputs;
      assert.equal(uni.mean.length, 6, model);
      assert.ok(
        uni.mean.every((row: number[]) => row.length === 1 && Number.isFinite(row[0])),
        model,
      );
      assert.ok(
        multi.mean.every((row: number[]) => row.length === 2 && row.every(Number.isFinite)),
        model,
      );
      assert.deepEqual(uni.metadata.item_id, 'uni');
      assert.equal(uni.timestamps[0], '2024-01-01T00:00:00.000Z', model);
      assert.equal(uni.samples.length, 3, model);
      assert.ok(
        uni.samples.every((p: number[][]) => p.length === 6 && p.every((row) => row.length === 1)),
        model,
      );
      for (const out of [uni, multi]) {
        const [lo, mid, hi] = out.quantile_predictions.map((q: { values: number[][] }) => q.values);
        for (let h = 0; h < 6; h++) {
          for (let v = 0; v < out.mean[0].length; v++) {
            assert.ok(lo[h][v] <= mid[h][v] && mid[h][v] <= hi[h][v], `${model}: quantiles monotone at step ${h}`);
          }
        }
      }
    }
  });

  test('the same request gives the same answer (seeded)', async () => {
    const body = { model: 'auto-ets', inputs: [{ target: series }], parameters: { prediction_length: 4, num_samples: 2 } };
    const a = await call(t, 'POST', '/v1/forecast', { token: u.token, body });
    const b = await call(t, 'POST', '/v1/forecast', { token: u.token, body });
    assert.deepEqual(a.body.outputs, b.body.outputs);
  });

  test('an all-null series is a 422 naming the input, not a crash', async () => {
    const r = await call(t, 'POST', '/v1/forecast', {
      token: u.token,
      body: { model: 'theta', inputs: [{ target: [1, 2, 3, 4] }, { target: [null, null, null] }] },
    });
    assert.equal(r.status, 422, r.text);
    assert.deepEqual(r.body.detail[0].loc, ['body', 'inputs', 1, 'target']);
  });

  test('values near 1e300 are forecast by every model; values whose interval passes the double range are a 422 naming the input', async () => {
    // Before src/engine/magnitude.ts, theta and combo answered 502 (their sums of squares
    // overflowed) and the random walks' quantiles came back as nulls.
    const huge = series.map((v) => v * 1e300);
    for (const model of builtins) {
      const r = await call(t, 'POST', '/v1/forecast', {
        token: u.token,
        body: { model, inputs: [{ target: huge }], parameters: { prediction_length: 6, frequency: 'MS' } },
      });
      assert.equal(r.status, 200, `${model}: ${r.text}`);
      const out = r.body.outputs[0];
      assert.ok(
        out.mean.every((row: number[]) => Number.isFinite(row[0]) && row[0]! > 1e301),
        `${model}: ${JSON.stringify(out.mean)}`,
      );
      assert.ok(
        out.quantile_predictions.every((q: { values: number[][] }) => q.values.every((row) => Number.isFinite(row[0]))),
        model,
      );
    }
    const extreme = series.map((_, i) => (i % 5 < 2 ? 1.7e308 : -1.7e308));
    for (const model of ['naive', 'theta']) {
      const r = await call(t, 'POST', '/v1/forecast', {
        token: u.token,
        // Monthly: a season of 12, which the period-5 pattern does not repeat (with its own period
        // detected, theta forecasts it exactly, with representable bounds).
        body: { model, inputs: [{ target: series }, { target: extreme }], parameters: { prediction_length: 6, frequency: 'MS' } },
      });
      assert.equal(r.status, 422, `${model}: ${r.text}`);
      assert.deepEqual(r.body.detail[0].loc, ['body', 'inputs', 1, 'target'], model);
      assert.match(r.body.detail[0].msg, /largest representable number/, model);
    }
  });

  test('seasonal naive repeats the last season when the frequency gives the season', async () => {
    const r = await call(t, 'POST', '/v1/forecast', {
      token: u.token,
      body: { model: 'seasonal-naive', inputs: [{ target: series }], parameters: { prediction_length: 12, frequency: 'MS' } },
    });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(
      r.body.outputs[0].mean.map((row: number[]) => row[0]),
      series.slice(36),
    );
  });
});
