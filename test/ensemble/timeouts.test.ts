import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { call, createTestApp, DB_KIND, registerUser, type TestApp } from '../helpers/app.ts';
import { FakeEngine } from '../helpers/fake-engine.ts';
import { booksOf } from '../billing/helpers.ts';

/**
 * ADR 0039: a job that ran for the engine's whole time limit is charged its price, in an ensemble
 * too: its candidate is dropped, and the answer (or the failure) costs that job on top of the
 * candidates that answered. A candidate that failed otherwise costs nothing.
 */
describe(`ensemble jobs that run out of time (${DB_KIND})`, () => {
  let t: TestApp;
  let engine: FakeEngine;
  before(async () => {
    engine = new FakeEngine();
    t = await createTestApp({ overrides: { engine } });
  });
  after(() => t.close());
  const body = (models: string[]) => ({
    inputs: [{ target: Array.from({ length: 40 }, (_, i) => 10 + (i % 7)) }],
    parameters: { prediction_length: 4, quantile_levels: [0.1, 0.9] },
    models,
  });
  const quote = async (token: string, models: string[]) =>
    (await call(t, 'POST', '/v1/forecast/quote', { token, body: { operation: 'forecastEnsemble', request: body(models) } })).body.credits as number;

  test('a candidate that ran out of time is dropped and its jobs charged; a failed one costs nothing', async () => {
    const u = await registerUser(t);
    const [last, short] = [await quote(u.token, ['echo-last']), await quote(u.token, ['echo-short'])];
    engine.byModel.set('echo-short', 'timeout');
    try {
      const r = await call(t, 'POST', '/v1/forecast/ensemble', { token: u.token, body: body(['echo-last', 'echo-short']) });
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.body.ensemble_metadata.models_evaluated, ['echo-last']);
      assert.ok(r.body.ensemble_metadata.selection.filters_applied.some((f: string) => /echo-short: dropped, failed \(The model did not answer/.test(f)));
      // echo-short's final forecast and backtest both ran out of time: its whole price is charged.
      assert.deepEqual(r.body.ensemble_metadata.cost_breakdown, [
        { model: 'echo-last', credits: last },
        { model: 'echo-short', credits: short },
      ]);
      assert.equal(r.body.ensemble_metadata.total_cost_credits, last + short);
      assert.equal(r.headers['x-credits-charged'], String(last + short));
      engine.byModel.set('echo-short', 'failed');
      const failed = await call(t, 'POST', '/v1/forecast/ensemble', { token: u.token, body: body(['echo-last', 'echo-short']) });
      assert.equal(failed.status, 200, failed.text);
      assert.equal(failed.headers['x-credits-charged'], String(last));
    } finally {
      engine.byModel.clear();
    }
    const b = await booksOf(t, u.id);
    assert.equal(b.balance, 80000 - 2 * last - short);
    assert.equal(b.held, 0);
    assert.equal(b.balanced, true);
  });

  test('when every candidate ran out of time the call is a 504, charged those jobs (status timed_out)', async () => {
    const u = await registerUser(t);
    const price = await quote(u.token, ['echo-last', 'echo-short']);
    engine.behaviour = 'timeout';
    const r = await call(t, 'POST', '/v1/forecast/ensemble', { token: u.token, body: body(['echo-last', 'echo-short']) }).finally(() => {
      engine.behaviour = 'ok';
    });
    assert.equal(r.status, 504, r.text);
    assert.equal(r.body.code, 'upstream_timeout');
    assert.equal(r.headers['x-credits-charged'], String(price));
    const ev = await t.deps.database.db.selectFrom('usage_events').selectAll().where('user_id', '=', u.id).execute();
    assert.equal(ev.length, 1);
    assert.equal(ev[0]?.status, 'timed_out');
    assert.equal(Number(ev[0]?.credits), price);
    const b = await booksOf(t, u.id);
    assert.equal(b.balance, 80000 - price);
    assert.equal(b.held, 0);
    assert.equal(b.balanced, true);
  });
});
