import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { call, createKey, createTestApp, DB_KIND, registerUser, type TestApp, type TestUser } from '../helpers/app.ts';

/**
 * Issue #12.9: unsafe requests authenticated by the session cookie must come from this site
 * (Origin, or Sec-Fetch-Site: same-origin) and send JSON; bearer requests are not affected.
 */
describe(`cross-site request forgery defence (${DB_KIND})`, () => {
  let t: TestApp;
  let u: TestUser;
  const ours = 'http://127.0.0.1:8000';
  before(async () => {
    t = await createTestApp({ env: { PUBLIC_BASE_URL: ours } });
    u = await registerUser(t);
  });
  after(() => t.close());

  const keyCount = async () => (await call(t, 'GET', '/api/account/keys', { token: u.token })).body.keys.length as number;
  const cookie = () => `tsfm_session=${u.token}`;

  test('a form post from another site with the cookie creates nothing (the reported attack)', async () => {
    const before = await keyCount();
    const r = await call(t, 'POST', '/api/account/keys', {
      raw: 'label=pwned',
      headers: { cookie: cookie(), origin: 'https://evil.example', 'content-type': 'application/x-www-form-urlencoded' },
    });
    assert.equal(r.status, 403);
    assert.equal(r.body.code, 'forbidden');
    assert.equal(await keyCount(), before);
  });

  test('cookie requests on any route: another Origin, Origin null, a cross-site fetch, or no site at all are refused', async () => {
    const before = await keyCount();
    const cases: Record<string, string>[] = [
      { origin: 'https://evil.example' },
      { origin: 'null' },
      { origin: 'http://127.0.0.1:8000.evil.example' },
      { 'sec-fetch-site': 'cross-site' },
      { 'sec-fetch-site': 'same-site' },
      {},
    ];
    for (const headers of cases) {
      const r = await call(t, 'POST', '/api/account/keys', { body: { label: 'x' }, headers: { cookie: cookie(), ...headers } });
      assert.equal(r.status, 403, JSON.stringify(headers));
      const p = await call(t, 'PATCH', '/api/account/privacy', { body: { service_improvement_opt_in: true }, headers: { cookie: cookie(), ...headers } });
      assert.equal(p.status, 403, JSON.stringify(headers));
    }
    assert.equal(await keyCount(), before);
    const del = await call(t, 'DELETE', '/api/account/me', { headers: { cookie: cookie(), origin: 'https://evil.example' } });
    assert.equal(del.status, 403);
    assert.equal((await call(t, 'GET', '/api/account/me', { token: u.token })).status, 200);
  });

  test('same-origin cookie requests keep working (the web app): by Origin, by Host, or by Sec-Fetch-Site', async () => {
    const cases: Record<string, string>[] = [{ origin: ours }, { origin: 'http://localhost:80' }, { 'sec-fetch-site': 'same-origin' }];
    for (const [i, headers] of cases.entries()) {
      const r = await call(t, 'POST', '/api/account/keys', { body: { label: `web-${i}` }, headers: { cookie: cookie(), ...headers } });
      assert.equal(r.status, 200, `${JSON.stringify(headers)} ${r.text}`);
    }
    // Safe methods need nothing.
    assert.equal((await call(t, 'GET', '/api/account/keys', { headers: { cookie: cookie() } })).status, 200);
  });

  test('cookie requests to authenticated routes send JSON: a same-origin form body is a 415', async () => {
    const r = await call(t, 'POST', '/api/account/keys', {
      raw: 'label=form',
      headers: { cookie: cookie(), origin: ours, 'content-type': 'application/x-www-form-urlencoded' },
    });
    assert.equal(r.status, 415);
    assert.equal(r.body.code, 'unsupported_media_type');
  });

  test('API keys and bearer tokens are not affected, whatever the Origin or body type', async () => {
    const k = await createKey(t, u);
    const viaKey = await call(t, 'POST', '/v1/validate', { token: k.key, body: {}, headers: { origin: 'https://elsewhere.example' } });
    assert.notEqual(viaKey.status, 403);
    const viaBearer = await call(t, 'POST', '/api/account/keys', {
      token: u.token,
      raw: 'label=from-a-script',
      headers: { origin: 'https://elsewhere.example', 'content-type': 'application/x-www-form-urlencoded', cookie: cookie() },
    });
    assert.equal(viaBearer.status, 200, viaBearer.text);
  });

  test('no cookie: another site cannot post to the sign-in routes (login CSRF); scripts without Origin can', async () => {
    const evil = await call(t, 'POST', '/api/auth/login', { body: { email: u.email, password: u.password }, headers: { origin: 'https://evil.example' } });
    assert.equal(evil.status, 403);
    assert.equal(evil.headers['set-cookie'], undefined);
    const script = await call(t, 'POST', '/api/auth/login', { body: { email: u.email, password: u.password } });
    assert.equal(script.status, 200);
  });
});
