import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ForecastQuote } from '../../src/forecasting/quote.ts';
import { booksOf, ONE_CREDIT } from '../billing/helpers.ts';
import { call, DB_KIND, expectSchema, registerUser, type TestApp, createTestApp } from '../helpers/app.ts';
import { FakeEngine } from '../helpers/fake-engine.ts';

const BIG = { model: 'echo-last', inputs: [{ target: Array.from({ length: 300 }, (_, i) => i) }], parameters: { prediction_length: 40, num_samples: 5 } };
const ENSEMBLE = { inputs: [{ target: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10] }], parameters: { prediction_length: 2 }, models: ['echo-last', 'echo-short'] };

describe(`POST /v1/forecast/quote (${DB_KIND})`, () => {
  let t: TestApp;
  const engine = new FakeEngine();
  before(async () => {
    t = await createTestApp({ overrides: { engine }, env: { FORECAST_MAX_OUTPUT_VALUES: '5000' } });
  });
  after(() => t.close());
  const quote = (token: string, body: unknown) => call(t, 'POST', '/v1/forecast/quote', { token, body });

  test('a forecast quote matches what the call then charges; the quote runs nothing and charges nothing', async () => {
    const u = await registerUser(t);
    const jobs = engine.jobs.length;
    const q = await quote(u.token, { request: BIG });
    assert.equal(q.status, 200, q.text);
    const body = expectSchema(ForecastQuote, q.body);
    assert.equal(body.operation, 'forecast');
    assert.equal(body.would_refuse, null);
    assert.equal(body.balance_source, 'free');
    assert.equal(body.free_credits, body.credits);
    assert.ok(body.credits >= 1);
    assert.equal(body.cost_nano_usd, body.credits * t.deps.config.billing.creditPriceNanoUsd);
    assert.equal(engine.jobs.length, jobs, 'nothing ran');
    assert.equal((await booksOf(t, u.id)).debits, 0, 'nothing charged');
    const real = await call(t, 'POST', '/v1/forecast', { token: u.token, body: BIG });
    assert.equal(real.status, 200);
    assert.equal(Number(real.headers['x-credits-charged']), body.credits);
    assert.deepEqual(real.body.usage, body.usage);
    assert.equal(body.credits_available, Number(real.headers['x-credits-remaining']) + body.credits);
  });

  test('batch and ensemble quotes match their charges; a failing batch item is quoted as its refusal', async () => {
    const u = await registerUser(t);
    const batch = { requests: [BIG, ONE_CREDIT, { ...ONE_CREDIT, model: 'no-such-model' }] };
    const q = await quote(u.token, { operation: 'forecastBatch', request: batch });
    assert.equal(q.status, 200, q.text);
    assert.equal(q.body.items.length, 3);
    assert.equal(q.body.items[2].would_refuse.status, 404);
    assert.equal(q.body.items[2].would_refuse.code, 'model_not_found');
    const real = await call(t, 'POST', '/v1/forecast/batch', { token: u.token, body: batch });
    assert.equal(Number(real.headers['x-credits-charged']), q.body.credits);
    const e = await quote(u.token, { operation: 'forecastEnsemble', request: ENSEMBLE });
    assert.equal(e.status, 200, e.text);
    const ens = await call(t, 'POST', '/v1/forecast/ensemble', { token: u.token, body: ENSEMBLE });
    assert.equal(ens.status, 200, ens.text);
    assert.equal(ens.body.ensemble_metadata.total_cost_credits, e.body.credits);
    assert.equal(Number(ens.headers['x-credits-charged']), e.body.credits);
  });

  test('refusals are answered in would_refuse (402, 404, 413); a malformed request is 422 under request', async () => {
    const broke = await registerUser(t, { verified: false });
    const q402 = await quote(broke.token, { request: ONE_CREDIT });
    assert.equal(q402.status, 200, q402.text);
    assert.equal(q402.body.would_refuse?.status, 402);
    assert.equal(q402.body.would_refuse?.code, 'billing_required');
    assert.equal(q402.body.balance_source, null);
    const real = await call(t, 'POST', '/v1/forecast', { token: broke.token, body: ONE_CREDIT });
    assert.equal(real.status, 402);
    assert.equal(real.body.error, q402.body.would_refuse?.message);

    const u = await registerUser(t);
    const q404 = await quote(u.token, { request: { ...ONE_CREDIT, model: 'nope' } });
    assert.equal(q404.body.would_refuse?.status, 404);
    const q413 = await quote(u.token, { request: { ...BIG, parameters: { prediction_length: 1000, num_samples: 10 } } });
    assert.equal(q413.body.would_refuse?.status, 413);
    assert.equal(q413.body.would_refuse?.code, 'request_too_large');
    const bad = await quote(u.token, { request: { model: 'echo-last', inputs: [], h: 3 } });
    assert.equal(bad.status, 422);
    assert.ok(bad.body.detail.some((d: { loc: unknown[] }) => d.loc[0] === 'body' && d.loc[1] === 'request'));
    const unknownOp = await quote(u.token, { operation: 'delete', request: {} });
    assert.equal(unknownOp.status, 422);
    assert.equal((await booksOf(t, u.id)).debits, 0);
  });

  test("a key's monthly_credit_limit is quoted: 402 key_budget_exceeded in would_refuse, as the call then answers", async () => {
    const u = await registerUser(t);
    const made = await call(t, 'POST', '/api/account/keys', { token: u.token, body: { label: 'budget', monthly_credit_limit: 1 } });
    assert.equal(made.status, 200, made.text);
    const fits = await quote(made.body.key, { request: ONE_CREDIT });
    assert.equal(fits.body.credits, 1);
    assert.equal(fits.body.would_refuse, null, 'one credit fits the limit');
    const first = await call(t, 'POST', '/v1/forecast', { token: made.body.key, body: ONE_CREDIT });
    assert.equal(first.status, 200, first.text);
    const q = await quote(made.body.key, { request: ONE_CREDIT });
    assert.equal(q.status, 200, q.text);
    assert.equal(q.body.would_refuse?.status, 402);
    assert.equal(q.body.would_refuse?.code, 'key_budget_exceeded');
    const real = await call(t, 'POST', '/v1/forecast', { token: made.body.key, body: ONE_CREDIT });
    assert.equal(real.status, 402, real.text);
    assert.equal(real.body.code, 'key_budget_exceeded');
    assert.equal(real.body.error, q.body.would_refuse?.message);
  });

  test('dry_run: true on the three routes answers the quote; nothing runs, nothing is charged, no key is claimed', async () => {
    const u = await registerUser(t);
    const jobs = engine.jobs.length;
    const f = await call(t, 'POST', '/v1/forecast', { token: u.token, body: { ...BIG, dry_run: true }, headers: { 'idempotency-key': 'dry-1' } });
    assert.equal(f.status, 200, f.text);
    expectSchema(ForecastQuote, f.body);
    const q = await quote(u.token, { request: BIG });
    assert.equal(f.body.credits, q.body.credits);
    assert.equal(f.headers['x-credits-charged'], '0');
    const b = await call(t, 'POST', '/v1/forecast/batch', { token: u.token, body: { requests: [BIG, ONE_CREDIT], dry_run: true } });
    assert.equal(b.status, 200, b.text);
    assert.equal(b.body.object, 'forecast_quote');
    assert.equal(b.body.items.length, 2);
    const e = await call(t, 'POST', '/v1/forecast/ensemble', { token: u.token, body: { ...ENSEMBLE, dry_run: true } });
    assert.equal(e.status, 200, e.text);
    assert.equal(e.body.operation, 'forecastEnsemble');
    assert.equal(engine.jobs.length, jobs, 'nothing ran');
    assert.equal((await booksOf(t, u.id)).debits, 0);
    // An item may not carry dry_run (it would be ignored and charged): it fails alone, uncharged.
    const item = await call(t, 'POST', '/v1/forecast/batch', { token: u.token, body: { requests: [{ ...ONE_CREDIT, dry_run: true }] } });
    assert.equal(item.body.data[0].ok, false);
    assert.equal(item.body.data[0].error.status, 422);
    assert.equal((await booksOf(t, u.id)).debits, 0);
    // The dry run did not claim the key: the same key without dry_run runs for real.
    const real = await call(t, 'POST', '/v1/forecast', { token: u.token, body: BIG, headers: { 'idempotency-key': 'dry-1' } });
    assert.equal(real.body.object, 'forecast');
    assert.equal(Number(real.headers['x-credits-charged']), q.body.credits);
  });
});
