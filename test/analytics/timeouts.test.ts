import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { JOBS_IN_FLIGHT } from '../../src/analytics/metered.ts';
import { call, createTestApp, DB_KIND, registerUser, type TestApp } from '../helpers/app.ts';
import { FakeEngine } from '../helpers/fake-engine.ts';
import { booksOf } from '../billing/helpers.ts';

/**
 * ADR 0039: analytics calls fail as a whole, and what they are charged then is exactly their jobs
 * that ran for the engine's whole time limit (each at its price, usage status timed_out); any other
 * failure costs nothing. The jobs in flight end before the call is settled, so none is missed.
 */
describe(`analytics jobs that run out of time (${DB_KIND})`, () => {
  let t: TestApp;
  let engine: FakeEngine;
  before(async () => {
    engine = new FakeEngine();
    t = await createTestApp({ overrides: { engine } });
  });
  after(() => t.close());
  const series = Array.from({ length: 40 }, (_, i) => 10 + (i % 7));
  const failing = async (behaviour: FakeEngine['behaviour'], path: string, body: unknown) => {
    const u = await registerUser(t);
    engine.behaviour = behaviour;
    const r = await call(t, 'POST', path, { token: u.token, body }).finally(() => {
      engine.behaviour = 'ok';
    });
    const b = await booksOf(t, u.id);
    assert.equal(b.held, 0);
    assert.equal(b.balanced, true);
    const events = await t.deps.database.db.selectFrom('usage_events').selectAll().where('user_id', '=', u.id).execute();
    return { r, spent: 80000 - b.balance, events };
  };

  test('cross-validation: the windows that ran out of time are charged, the windows never started are not; a failure costs nothing', async () => {
    const body = { models: ['echo-last'], inputs: [{ target: series }], prediction_length: 4, n_windows: 4, quantile_levels: [0.5] };
    const ok = await call(t, 'POST', '/v1/cross-validation', { token: (await registerUser(t)).token, body });
    assert.equal(ok.status, 200, ok.text);
    const perRun = ok.body.results[0].credits / 4;
    const { r, spent, events } = await failing('timeout', '/v1/cross-validation', body);
    assert.equal(r.status, 504, r.text);
    // JOBS_IN_FLIGHT windows were running when the first ran out of time; the others never started.
    const charged = Math.min(4, JOBS_IN_FLIGHT) * perRun;
    assert.equal(spent, charged);
    assert.equal(r.headers['x-credits-charged'], String(charged));
    assert.deepEqual(
      events.map((e) => [e.status, Number(e.credits)]),
      [['timed_out', charged]],
    );
    const other = await failing('failed', '/v1/cross-validation', body);
    assert.equal(other.r.status, 502);
    assert.equal(other.spent, 0);
    assert.equal(other.events.length, 0);
  });

  test('imputation with a model: a fit that ran out of time is charged', async () => {
    const gaps = series.map((v, i) => (i === 10 || i === 25 ? null : v));
    const imputed = await failing('timeout', '/v1/impute', { inputs: [{ target: gaps }], model: 'echo-last' });
    assert.equal(imputed.r.status, 504, imputed.r.text);
    assert.ok(imputed.spent >= 1);
    assert.deepEqual(
      imputed.events.map((e) => e.status),
      ['timed_out'],
    );
  });
});
