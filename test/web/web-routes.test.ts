import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { call, createTestApp, DB_KIND, registerUser, type TestApp } from '../helpers/app.ts';
import { PAGE_PATHS } from '../../src/web/routes.ts';

describe(`web pages and their assets (${DB_KIND})`, () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({ env: { ADMIN_EMAILS: 'web-admin@example.com', AUTH_RATE_LIMIT_PER_MINUTE: '100000' } });
  });
  after(() => t.close());

  test('every page path answers the shell with a CSP that allows exactly its import map', async () => {
    for (const path of PAGE_PATHS) {
      const r = await call(t, 'GET', path);
      assert.equal(r.status, 200, path);
      assert.match(String(r.headers['content-type']), /^text\/html/);
      assert.match(r.text, /<script type="module" src="\/static\/main.js"><\/script>/);
    }
    const r = await call(t, 'GET', '/');
    const map = /<script type="importmap">(.*?)<\/script>/s.exec(r.text)?.[1] ?? '';
    const hash = createHash('sha256').update(map).digest('base64');
    const csp = String(r.headers['content-security-policy']);
    assert.ok(csp.includes(`script-src 'self' 'sha256-${hash}'`), csp);
    assert.ok(csp.includes("frame-ancestors 'none'"));
    const cfg = JSON.parse(/<script type="application\/json" id="tsfm-config">(.*?)<\/script>/s.exec(r.text)?.[1] ?? '{}');
    assert.equal(cfg.publicBaseUrl, t.deps.config.publicBaseUrl);
    assert.deepEqual(cfg.identityProviders, []);
  });

  test('the shell tells the app whether the request carried a session cookie; /favicon.ico is an empty answer', async () => {
    const cfgOf = (text: string) => JSON.parse(/<script type="application\/json" id="tsfm-config">(.*?)<\/script>/s.exec(text)?.[1] ?? '{}');
    const visitor = await call(t, 'GET', '/account/keys');
    assert.equal(cfgOf(visitor.text).session, false);
    assert.match(String(visitor.headers.vary), /cookie/i);
    const withCookie = await call(t, 'GET', '/account/keys', { headers: { cookie: 'tsfm_session=anything' } });
    assert.equal(cfgOf(withCookie.text).session, true);
    const icon = await call(t, 'GET', '/favicon.ico');
    assert.equal(icon.status, 204);
  });

  test('the import map points at files the server really serves, and nothing outside them', async () => {
    const r = await call(t, 'GET', '/');
    const map = JSON.parse(/<script type="importmap">(.*?)<\/script>/s.exec(r.text)?.[1] ?? '{}') as { imports: Record<string, string> };
    for (const url of [...Object.values(map.imports), '/static/main.js', '/static/app.css', '/vendor/uplot/uPlot.min.css']) {
      const f = await call(t, 'GET', url);
      assert.equal(f.status, 200, url);
      assert.ok(f.text.length > 100, url);
    }
    for (const url of ['/vendor/preact/../package.json', '/static/../routes.ts', '/vendor/nothing/x.js', '/static/%2e%2e/routes.ts']) {
      assert.equal((await call(t, 'GET', url)).status, 404, url);
    }
  });

  test('the playground header sets the usage source only for session credentials', async () => {
    const u = await registerUser(t);
    const key = (await call(t, 'POST', '/api/account/keys', { token: u.token, body: { label: 'k' } })).body.key as string;
    const body = { model: 'echo-last', inputs: [{ target: [1, 2, 3, 4, 5, 6] }], parameters: { prediction_length: 2 } };
    const pg = { 'x-tsfm-client': 'playground' };
    assert.equal((await call(t, 'POST', '/v1/forecast', { token: u.token, body, headers: pg })).status, 200);
    assert.equal((await call(t, 'POST', '/v1/forecast', { token: key, body, headers: pg })).status, 200);
    assert.equal((await call(t, 'POST', '/v1/forecast', { token: u.token, body })).status, 200);
    const ens = { inputs: body.inputs, parameters: body.parameters, models: ['echo-last'] };
    assert.equal((await call(t, 'POST', '/v1/forecast/ensemble', { token: u.token, body: ens, headers: pg })).status, 200);
    assert.equal((await call(t, 'POST', '/v1/forecast/ensemble', { token: key, body: ens, headers: pg })).status, 200);
    const events = (await call(t, 'GET', '/api/account/usage', { token: u.token })).body.events as { source: string; credential_kind: string; model: string }[];
    const seen = events.map((e) => `${e.model} ${e.credential_kind} ${e.source}`).sort();
    assert.deepEqual(seen, [
      'echo-last api_key api',
      'echo-last session api',
      'echo-last session playground',
      'ensemble api_key ensemble',
      'ensemble session playground',
    ]);
  });

  test('administrators find accounts by part of the e-mail or by id; others are refused', async () => {
    const admin = await registerUser(t, { email: 'web-admin@example.com' });
    const a = await registerUser(t, { email: 'Findme_One@example.com' });
    await registerUser(t, { email: 'findmexone@example.com' });
    const byPart = await call(t, 'GET', '/api/admin/users?q=FINDME', { token: admin.token });
    assert.equal(byPart.status, 200);
    assert.equal(byPart.body.accounts.length, 2);
    // `_` is a literal here, not LIKE's one-character wildcard.
    const literal = await call(t, 'GET', '/api/admin/users?q=findme_', { token: admin.token });
    assert.deepEqual(
      literal.body.accounts.map((x: { id: string }) => x.id),
      [a.id],
    );
    const byId = await call(t, 'GET', `/api/admin/users?q=${a.id}`, { token: admin.token });
    assert.equal(byId.body.accounts[0].email, 'findme_one@example.com');
    assert.equal(byId.body.accounts[0].balance, t.deps.config.billing.freeCredits);
    assert.equal((await call(t, 'GET', '/api/admin/users?q=%25', { token: admin.token })).body.accounts.length, 0);
    assert.equal((await call(t, 'GET', '/api/admin/users?q=findme', { token: a.token })).status, 403);
    assert.equal((await call(t, 'GET', '/api/admin/users?q=', { token: admin.token })).status, 422);
    assert.equal((await call(t, 'GET', '/api/admin/users?q=x')).status, 400);
  });
});
