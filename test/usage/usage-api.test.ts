import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { call, createTestApp, DB_KIND, expectSchema, registerUser, routeSchema, type TestApp } from '../helpers/app.ts';
import { balanceOf, booksOf, forecast, ONE_CREDIT } from '../billing/helpers.ts';

describe(`usage API and cost report (${DB_KIND})`, () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({ env: { CREDIT_PRICE_NANO_USD: '1000' } });
  });
  after(() => t.close());

  test('GET /api/account/usage lists own events newest first, with limit/offset and a time window', async () => {
    const u = await registerUser(t);
    const other = await registerUser(t);
    for (let i = 0; i < 3; i++) assert.equal((await forecast(t, u.token, ONE_CREDIT, { 'x-request-id': `u-${i}` })).status, 200);
    assert.equal((await forecast(t, other.token)).status, 200);
    const r = await call(t, 'GET', '/api/account/usage', { token: u.token });
    assert.equal(r.status, 200, r.text);
    const body = expectSchema(routeSchema(t, 'GET', '/api/account/usage'), r.body) as { events: { request_id: string; created_at: string }[]; limit: number };
    assert.equal(body.limit, 1000);
    assert.deepEqual(
      body.events.map((e) => e.request_id),
      ['u-2', 'u-1', 'u-0'],
    );
    const page = await call(t, 'GET', '/api/account/usage?limit=1&offset=1', { token: u.token });
    assert.deepEqual(
      page.body.events.map((e: { request_id: string }) => e.request_id),
      ['u-1'],
    );
    const future = await call(t, 'GET', `/api/account/usage?start=${encodeURIComponent(new Date(Date.now() + 3600_000).toISOString())}`, { token: u.token });
    assert.equal(future.body.events.length, 0);
    const past = await call(t, 'GET', '/api/account/usage?start=2020-01-01&end=2999-01-01T00:00:00Z', { token: u.token });
    assert.equal(past.body.events.length, 3);
  });

  test('usage list validation: limit, offset, start/end out of range → 422 naming the field', async () => {
    const u = await registerUser(t);
    for (const [qs, field] of [
      ['limit=0', 'limit'],
      ['limit=1001', 'limit'],
      ['offset=-1', 'offset'],
      ['offset=100001', 'offset'],
      ['start=yesterday', 'start'],
      ['end=2024-13-45T00:00:00Z', 'end'],
      ['start=2024-02-01&end=2024-01-01', 'end'],
    ] as const) {
      const r = await call(t, 'GET', `/api/account/usage?${qs}`, { token: u.token });
      assert.equal(r.status, 422, `${qs}: ${r.text}`);
      assert.deepEqual(r.body.detail[0].loc, ['query', field], qs);
    }
  });

  test('usage routes need a valid credential', async () => {
    for (const [m, url] of [
      ['GET', '/api/account/usage'],
      ['DELETE', '/api/account/usage'],
      ['GET', '/api/account/usage/summary'],
      ['GET', '/api/account/billing'],
      ['GET', '/api/account/billing/payments'],
      ['POST', '/api/account/billing/payments'],
      ['POST', '/api/billing/costs'],
    ] as const) {
      const none = await call(t, m, url, m === 'POST' ? { body: {} } : {});
      assert.equal(none.status, 400, `${m} ${url}`);
      assert.equal(none.body.code, 'missing_credential');
      const bad = await call(t, m, url, { token: 'tsfm_not-a-key', ...(m === 'POST' ? { body: {} } : {}) });
      assert.equal(bad.status, 401, `${m} ${url}`);
      assert.equal(bad.body.code, 'invalid_credential');
    }
  });

  test('DELETE /api/account/usage deletes only own history and never gives credits back', async () => {
    const u = await registerUser(t);
    const other = await registerUser(t);
    await forecast(t, u.token);
    await forecast(t, u.token);
    await forecast(t, other.token);
    const before = await balanceOf(t, u.id);
    const d = await call(t, 'DELETE', '/api/account/usage', { token: u.token });
    assert.equal(d.status, 200);
    expectSchema(routeSchema(t, 'DELETE', '/api/account/usage'), d.body);
    assert.equal(d.body.deleted, 2);
    assert.equal((await call(t, 'GET', '/api/account/usage', { token: u.token })).body.events.length, 0);
    assert.equal(await balanceOf(t, u.id), before);
    const books = await booksOf(t, u.id);
    assert.equal(books.debits, 2, 'the ledger keeps the debits');
    assert.equal(books.balanced, true);
    assert.equal((await call(t, 'GET', '/api/account/usage', { token: other.token })).body.events.length, 1);
    const summary = await call(t, 'GET', '/api/account/billing', { token: u.token });
    assert.equal(summary.body.free_credits.used, 2);
  });

  test('GET /api/account/usage/summary: totals, daily, by model, by source, recent', async () => {
    const u = await registerUser(t);
    await forecast(t, u.token);
    await forecast(t, u.token);
    await call(t, 'POST', '/v1/forecast/batch', { token: u.token, body: { requests: [ONE_CREDIT] } });
    const r = await call(t, 'GET', '/api/account/usage/summary', { token: u.token });
    assert.equal(r.status, 200, r.text);
    const s = expectSchema(routeSchema(t, 'GET', '/api/account/usage/summary'), r.body) as Record<string, any>;
    assert.equal(s.totals.requests, 3);
    assert.equal(s.totals.credits, 3);
    assert.equal(s.totals.cost_nano_usd, 3000);
    assert.equal(s.totals.total_tokens, 3 * 7); // 3 observed values in, 4 numbers out (mean + 3 quantiles)
    assert.equal(s.daily.length, 1);
    assert.equal(s.daily[0].date, new Date().toISOString().slice(0, 10));
    assert.equal(s.daily[0].requests, 3);
    assert.deepEqual(
      s.by_model.map((m: { model: string; requests: number }) => [m.model, m.requests]),
      [['echo-last', 3]],
    );
    assert.deepEqual(s.by_source.map((m: { source: string; requests: number }) => [m.source, m.requests]).sort(), [
      ['api', 2],
      ['batch', 1],
    ]);
    assert.equal(s.recent.length, 3);
    const empty = await call(t, 'GET', '/api/account/usage/summary?start=2001-01-01&end=2001-02-01', { token: u.token });
    assert.equal(empty.body.totals.requests, 0);
    assert.equal(empty.body.daily.length, 0);
    const bad = await call(t, 'GET', '/api/account/usage/summary?start=soon', { token: u.token });
    assert.equal(bad.status, 422);
    assert.deepEqual(bad.body.detail[0].loc, ['query', 'start']);
  });

  test('POST /api/billing/costs: own requests only, batch ids cover their items, > 10000 ids → 422', async () => {
    const u = await registerUser(t);
    const other = await registerUser(t);
    await forecast(t, u.token, ONE_CREDIT, { 'x-request-id': 'mine-1' });
    await call(t, 'POST', '/v1/forecast/batch', { token: u.token, body: { requests: [ONE_CREDIT, ONE_CREDIT] }, headers: { 'x-request-id': 'mine-batch' } });
    await forecast(t, other.token, ONE_CREDIT, { 'x-request-id': 'theirs-1' });
    const r = await call(t, 'POST', '/api/billing/costs', {
      token: u.token,
      body: { requestIds: ['mine-1', 'mine-batch', 'mine-batch:1', 'theirs-1', 'unknown', 'mine-1'] },
    });
    assert.equal(r.status, 200, r.text);
    expectSchema(routeSchema(t, 'POST', '/api/billing/costs'), r.body);
    assert.deepEqual(r.body.requests, [
      { requestId: 'mine-1', costNanoUsd: 1000 },
      { requestId: 'mine-batch', costNanoUsd: 2000 },
      { requestId: 'mine-batch:1', costNanoUsd: 1000 },
      { requestId: 'theirs-1', costNanoUsd: 0 },
      { requestId: 'unknown', costNanoUsd: 0 },
    ]);
    const big = await call(t, 'POST', '/api/billing/costs', { token: u.token, body: { requestIds: Array.from({ length: 10001 }, (_, i) => `r${i}`) } });
    assert.equal(big.status, 422);
    assert.deepEqual(big.body.detail[0].loc, ['body', 'requestIds']);
    const max = await call(t, 'POST', '/api/billing/costs', { token: u.token, body: { requestIds: Array.from({ length: 10000 }, (_, i) => `r${i}`) } });
    assert.equal(max.status, 200);
    assert.equal(max.body.requests.length, 10000);
    const missing = await call(t, 'POST', '/api/billing/costs', { token: u.token, body: {} });
    assert.equal(missing.status, 422);
  });
});
