import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { call, createTestApp, DB_KIND, expectSchema, registerUser, routeSchema, type TestApp } from '../helpers/app.ts';
import { activateBillingLocally, forecast } from './helpers.ts';

describe(`billing summary and the local payments provider (${DB_KIND})`, () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({ env: { FREE_CREDITS: '2', PUBLIC_BASE_URL: 'http://billing.test', BILLING_RETURN_ORIGINS: 'https://app.example.com' } });
  });
  after(() => t.close());

  const form = (url: string, decision: string) =>
    t.app.inject({
      method: 'POST',
      url: new URL(url).pathname,
      payload: `decision=${decision}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });

  test('GET /api/account/billing: free credits granted/used/remaining, billing state, metered period, rate limit', async () => {
    const u = await registerUser(t);
    await forecast(t, u.token);
    const r = await call(t, 'GET', '/api/account/billing', { token: u.token });
    assert.equal(r.status, 200, r.text);
    const b = expectSchema(routeSchema(t, 'GET', '/api/account/billing'), r.body) as Record<string, any>;
    assert.deepEqual(b.free_credits, { granted: 2, used: 1, remaining: 1 });
    assert.equal(b.billing_active, false);
    assert.equal(b.provider, 'local');
    assert.equal(b.metered.credits, 0);
    assert.deepEqual(b.rate_limit, { requests_per_minute: 1000, scope: 'account' });
    assert.equal(r.headers['x-ratelimit-limit'], '1000');
  });

  test('local checkout turns billing on, the portal turns it off; 402 ↔ 200 follows; links are single-use', async () => {
    const u = await registerUser(t);
    await forecast(t, u.token);
    await forecast(t, u.token);
    assert.equal((await forecast(t, u.token)).status, 402);

    const profile = await call(t, 'GET', '/api/account/billing/payments', { token: u.token });
    assert.equal(profile.status, 200);
    expectSchema(routeSchema(t, 'GET', '/api/account/billing/payments'), profile.body);
    assert.deepEqual(profile.body.available_actions, ['checkout']);
    assert.equal((await call(t, 'POST', '/api/account/billing/payments', { token: u.token, body: { action: 'portal' } })).status, 409);

    const s = await call(t, 'POST', '/api/account/billing/payments', {
      token: u.token,
      body: { action: 'checkout', success_url: 'https://app.example.com/done', cancel_url: 'http://billing.test/cancelled' },
    });
    assert.equal(s.status, 200, s.text);
    expectSchema(routeSchema(t, 'POST', '/api/account/billing/payments'), s.body);
    assert.equal(s.body.provider, 'local');
    assert.match(s.body.url, /^http:\/\/billing\.test\/api\/billing\/local\/checkout\/tsfb_/);
    const page = await t.app.inject({ method: 'GET', url: new URL(s.body.url).pathname });
    assert.equal(page.statusCode, 200);
    assert.match(String(page.headers['content-type']), /text\/html/);
    assert.ok(page.body.includes(u.email));

    const cancel = await form(s.body.url, 'cancel');
    assert.equal(cancel.statusCode, 303);
    assert.equal(cancel.headers.location, 'http://billing.test/cancelled');
    assert.equal((await call(t, 'GET', '/api/account/billing', { token: u.token })).body.billing_active, false);

    const ok = await form(s.body.url, 'confirm');
    assert.equal(ok.statusCode, 303);
    assert.equal(ok.headers.location, 'https://app.example.com/done');
    const summary = await call(t, 'GET', '/api/account/billing', { token: u.token });
    assert.equal(summary.body.billing_active, true);
    assert.equal(summary.body.rate_limit.requests_per_minute, 1_000_000);
    assert.equal((await form(s.body.url, 'confirm')).statusCode, 404, 'single use');

    const metered = await forecast(t, u.token);
    assert.equal(metered.status, 200, metered.text);
    const after = await call(t, 'GET', '/api/account/billing', { token: u.token });
    assert.equal(after.body.metered.credits, 1);
    assert.equal(after.body.metered.cost_nano_usd, after.body.credit_price_nano_usd);
    assert.equal((await call(t, 'POST', '/api/account/billing/payments', { token: u.token, body: { action: 'checkout' } })).status, 409);

    const portal = await call(t, 'POST', '/api/account/billing/payments', { token: u.token, body: { action: 'portal' } });
    assert.equal(portal.status, 200, portal.text);
    assert.match(portal.body.url, /\/api\/billing\/local\/portal\//);
    const off = await form(portal.body.url, 'confirm');
    assert.equal(off.statusCode, 303);
    assert.equal((await call(t, 'GET', '/api/account/billing', { token: u.token })).body.billing_active, false);
    assert.equal((await forecast(t, u.token)).status, 402);
    const prof = await call(t, 'GET', '/api/account/billing/payments', { token: u.token });
    assert.deepEqual(prof.body.available_actions, ['checkout', 'portal']);
  });

  test('payments session validation: action enum, redirect URLs limited to allowed origins', async () => {
    const u = await registerUser(t);
    const bad = await call(t, 'POST', '/api/account/billing/payments', { token: u.token, body: { action: 'refund' } });
    assert.equal(bad.status, 422);
    assert.deepEqual(bad.body.detail[0].loc, ['body', 'action']);
    const missing = await call(t, 'POST', '/api/account/billing/payments', { token: u.token, body: {} });
    assert.equal(missing.status, 422);
    const evil = await call(t, 'POST', '/api/account/billing/payments', {
      token: u.token,
      body: { action: 'checkout', success_url: 'https://evil.example/phish' },
    });
    assert.equal(evil.status, 422);
    assert.deepEqual(evil.body.detail[0].loc, ['body', 'success_url']);
    const junk = await call(t, 'POST', '/api/account/billing/payments', { token: u.token, body: { action: 'checkout', cancel_url: 'not a url' } });
    assert.equal(junk.status, 422);
    assert.deepEqual(junk.body.detail[0].loc, ['body', 'cancel_url']);
  });

  test("someone else's or a made-up checkout link does nothing", async () => {
    const u = await registerUser(t);
    const fake = await t.app.inject({ method: 'GET', url: '/api/billing/local/checkout/tsfb_made-up-token-123' });
    assert.equal(fake.statusCode, 404);
    const post = await form('http://x/api/billing/local/checkout/tsfb_made-up-token-123', 'confirm');
    assert.equal(post.statusCode, 404);
    // A checkout link is not a portal link.
    const s = await call(t, 'POST', '/api/account/billing/payments', { token: u.token, body: { action: 'checkout' } });
    const swapped = await form(s.body.url.replace('/checkout/', '/portal/'), 'confirm');
    assert.equal(swapped.statusCode, 404);
    await activateBillingLocally(t, u);
    assert.equal((await call(t, 'GET', '/api/account/billing', { token: u.token })).body.billing_active, true);
  });
});
