import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createEngine } from '../../src/engine/engine.ts';
import { call, createTestApp, DB_KIND, expectSchema, registerUser, routeSchema, type TestApp, type TestUser } from '../helpers/app.ts';

const SHARED = process.env.SHARED_DIR ?? resolve(import.meta.dirname, '..', '..', '..', 'shared');
const MODELS = join(SHARED, 'models');
const ID = 'ibm-granite/granite-timeseries-ttm-r2';
const present = existsSync(join(MODELS, ID, 'model.safetensors'));

/** TinyTimeMixer R2 served through /v1/forecast, the batch and the ensemble, with the real weights. */
describe(`TTM R2 through the API (${DB_KIND})`, { skip: present ? false : `no weights under ${MODELS} (set SHARED_DIR)` }, () => {
  let t: TestApp;
  let u: TestUser;
  before(async () => {
    const engine = createEngine({ poolSize: 2, timeoutMs: 60_000, maxQueue: 64, modelsDir: MODELS, threads: 1 });
    t = await createTestApp({ overrides: { engine } });
    await engine.refresh?.();
    u = await registerUser(t);
  });
  after(() => t.close());

  const hourly = Array.from({ length: 1000 }, (_, i) => 20 + 5 * Math.sin((2 * Math.PI * i) / 24) + 0.01 * i);

  test('listed as available once its files are verified; forecasts with quantiles, samples, multivariate and nulls', async () => {
    const m = await call(t, 'GET', `/api/models/${ID}`);
    assert.equal(m.body.available, true, m.body.unavailable_reason);
    const target = hourly.map((v, i) => [i === 700 ? null : v, 2 * v]);
    const r = await call(t, 'POST', '/v1/forecast', {
      token: u.token,
      body: { model: ID, inputs: [{ target, start: '2024-01-01T00:00:00Z' }], parameters: { prediction_length: 24, frequency: 'h', num_samples: 2 } },
    });
    assert.equal(r.status, 200, r.text);
    expectSchema(routeSchema(t, 'POST', '/v1/forecast'), r.body);
    const out = r.body.outputs[0];
    assert.equal(out.mean.length, 24);
    assert.ok(out.mean.every((row: number[]) => row.length === 2 && row.every(Number.isFinite)));
    // the daily cycle continues: the forecast follows the sine within a loose band
    const expected = Array.from({ length: 24 }, (_, h) => 20 + 5 * Math.sin((2 * Math.PI * (1000 + h)) / 24) + 0.01 * (1000 + h));
    const mae = out.mean.reduce((a: number, row: number[], h: number) => a + Math.abs((row[0] as number) - (expected[h] as number)), 0) / 24;
    assert.ok(mae < 1.5, `mean absolute error ${mae}`);
    const [lo, mid, hi] = out.quantile_predictions.map((q: { values: number[][] }) => q.values);
    for (let h = 0; h < 24; h++) assert.ok(lo[h][0] <= mid[h][0] && mid[h][0] <= hi[h][0]);
    assert.ok(lo[0][0] < hi[0][0], 'a real spread, not a point');
    assert.equal(out.samples.length, 2);
  });

  test('min_points is honest: a series under 36 points is a 422 naming the input and min_points; a horizon past the rollout is a 422', async () => {
    const models = await call(t, 'GET', '/api/models');
    const entry = (models.body.models as { id: string; min_points: number }[]).find((m) => m.id === ID);
    assert.equal(entry?.min_points, 36);
    const short = await call(t, 'POST', '/v1/forecast', {
      token: u.token,
      body: { model: ID, inputs: [{ target: hourly }, { target: hourly.slice(0, 35) }] },
    });
    assert.equal(short.status, 422);
    assert.deepEqual(short.body.detail[0].loc, ['body', 'inputs', 1, 'target']);
    assert.equal(short.body.detail[0].ctx.min_points, 36);
    assert.match(short.body.detail[0].msg, /35 observed points.*min_points=36/);
    const long = await call(t, 'POST', '/v1/forecast', {
      token: u.token,
      body: { model: ID, inputs: [{ target: hourly }], parameters: { prediction_length: 500 } },
    });
    assert.equal(long.status, 422);
  });

  test('a 60-point monthly series is padded: a forecast with intervals, and model_info says how', async () => {
    const monthly = Array.from({ length: 60 }, (_, i) => 100 + 0.8 * i + 15 * Math.sin((2 * Math.PI * i) / 12) + 3 * Math.cos(i * 1.7));
    const r = await call(t, 'POST', '/v1/forecast', {
      token: u.token,
      body: {
        model: ID,
        inputs: [{ target: monthly, start: '2019-01-01' }],
        parameters: { prediction_length: 18, frequency: 'M', quantile_levels: [0.1, 0.9] },
      },
    });
    assert.equal(r.status, 200, r.text);
    expectSchema(routeSchema(t, 'POST', '/v1/forecast'), r.body);
    const out = r.body.outputs[0];
    assert.equal(out.mean.length, 18);
    assert.ok(out.mean.every((row: number[]) => Number.isFinite(row[0])));
    const [info] = out.metadata.model_info;
    assert.equal(info.contextUsed, 60);
    assert.equal(info.padded, 452);
    assert.equal(info.padding, 'oldest_season');
    assert.equal(info.paddingSeasonLength, 12);
    assert.match(info.warning, /context padded: 60 of 512 points are real/);
    const [lo, hi] = out.quantile_predictions.map((q: { values: number[][] }) => q.values);
    for (let h = 0; h < 18; h++) assert.ok(lo[h][0] < hi[h][0]);
    // the price follows the tokens: 60 observed input points, not the 512 the network reads
    assert.equal(r.body.usage.input_tokens, 60);
    // the mean and two quantile levels per step, and a timestamp per step (start and frequency sent)
    assert.equal(r.body.usage.output_tokens, 18 * 3 + 18);
  });

  test('batch and ensemble can use it', async () => {
    const b = await call(t, 'POST', '/v1/forecast/batch', {
      token: u.token,
      body: {
        requests: [
          { model: ID, inputs: [{ target: hourly }], parameters: { prediction_length: 12 } },
          { model: 'naive', inputs: [{ target: hourly }] },
        ],
      },
    });
    assert.deepEqual(
      b.body.data.map((d: { ok: boolean }) => d.ok),
      [true, true],
    );
    const e = await call(t, 'POST', '/v1/forecast/ensemble', {
      token: u.token,
      body: { inputs: [{ target: hourly }], parameters: { prediction_length: 24, frequency: 'h' }, models: [ID, 'seasonal-naive', 'theta'], top_n: 2 },
    });
    assert.equal(e.status, 200, e.text);
    assert.ok(e.body.ensemble_metadata.models_evaluated.includes(ID), JSON.stringify(e.body.ensemble_metadata.selection));
  });

  test('the default ensemble leaves it out when it would pad; named, it runs padded; the catalog says where padding starts', async () => {
    const entry = await call(t, 'GET', `/api/models/${ID}`);
    assert.equal(entry.body.padded_below, 512);
    const naive = await call(t, 'GET', '/api/models/naive');
    assert.equal(naive.body.padded_below, null);
    const monthly = Array.from({ length: 120 }, (_, i) => 100 + 0.5 * i + 10 * Math.sin((2 * Math.PI * i) / 12));
    const body = { inputs: [{ target: monthly }], parameters: { prediction_length: 12, frequency: 'M' } };
    const byDefault = await call(t, 'POST', '/v1/forecast/ensemble', { token: u.token, body });
    assert.equal(byDefault.status, 200, byDefault.text);
    const meta = byDefault.body.ensemble_metadata;
    assert.ok(!meta.models_evaluated.includes(ID), JSON.stringify(meta));
    assert.ok(
      meta.selection.filters_applied.some((f: string) => f.startsWith(`${ID}: would pad`)),
      JSON.stringify(meta.selection.filters_applied),
    );
    const named = await call(t, 'POST', '/v1/forecast/ensemble', { token: u.token, body: { ...body, models: [ID, 'theta'] } });
    assert.equal(named.status, 200, named.text);
    assert.ok(named.body.ensemble_metadata.models_evaluated.includes(ID));
    // a long enough series: the deepest backtest still sees 512 real points, so it is a default candidate again
    const long = await call(t, 'POST', '/v1/forecast/ensemble', {
      token: u.token,
      body: { inputs: [{ target: hourly }], parameters: { prediction_length: 24, frequency: 'h' } },
    });
    assert.equal(long.status, 200, long.text);
    assert.ok(long.body.ensemble_metadata.models_evaluated.includes(ID), JSON.stringify(long.body.ensemble_metadata.selection.filters_applied));
  });
});
