import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { call, createKey, createTestApp, DB_KIND, expectSchema, registerUser, routeSchema, type TestApp } from '../helpers/app.ts';

describe(`API keys and credential validation (${DB_KIND})`, () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  test('create returns the secret once with a recognisable prefix; list never shows it', async () => {
    const u = await registerUser(t);
    const r = await call(t, 'POST', '/api/account/keys', { token: u.token, body: { label: 'prod' } });
    assert.equal(r.status, 200, r.text);
    expectSchema(routeSchema(t, 'POST', '/api/account/keys'), r.body);
    assert.match(r.body.key, /^tsfm_[A-Za-z0-9_-]{40,}$/);
    assert.ok(r.body.key.startsWith(r.body.prefix));
    const list = await call(t, 'GET', '/api/account/keys', { token: u.token });
    assert.equal(list.status, 200);
    expectSchema(routeSchema(t, 'GET', '/api/account/keys'), list.body);
    assert.equal(list.body.keys.length, 1);
    assert.equal(list.body.keys[0].id, r.body.id);
    assert.ok(!JSON.stringify(list.body).includes(r.body.key));
    const stored = await t.deps.database.db.selectFrom('api_keys').selectAll().where('id', '=', r.body.id).executeTakeFirstOrThrow();
    assert.notEqual(stored.key_hash, r.body.key);
    assert.ok(!Object.values(stored).includes(r.body.key));
  });

  test('an API key authenticates, and last_used_at is recorded', async () => {
    const u = await registerUser(t);
    const k = await createKey(t, u);
    const me = await call(t, 'GET', '/api/account/me', { token: k.key });
    assert.equal(me.status, 200);
    assert.equal(me.body.id, u.id);
    const list = await call(t, 'GET', '/api/account/keys', { token: u.token });
    assert.ok(list.body.keys[0].last_used_at);
  });

  test('duplicate label on the same account is 409; another account may reuse it; a revoked key frees it', async () => {
    const u = await registerUser(t);
    const v = await registerUser(t);
    const k = await createKey(t, u, 'same');
    const dup = await call(t, 'POST', '/api/account/keys', { token: u.token, body: { label: 'same' } });
    assert.equal(dup.status, 409);
    assert.equal(dup.body.code, 'conflict');
    assert.equal((await call(t, 'POST', '/api/account/keys', { token: v.token, body: { label: 'same' } })).status, 200);
    assert.equal((await call(t, 'DELETE', `/api/account/keys/${k.id}`, { token: u.token })).status, 200);
    assert.equal((await call(t, 'POST', '/api/account/keys', { token: u.token, body: { label: 'same' } })).status, 200);
  });

  test('label validation', async () => {
    const u = await registerUser(t);
    for (const body of [{}, { label: '' }, { label: 'x'.repeat(101) }, { label: 5 }]) {
      const r = await call(t, 'POST', '/api/account/keys', { token: u.token, body });
      assert.equal(r.status, 422, JSON.stringify(body));
      assert.deepEqual(r.body.detail[0].loc, ['body', 'label']);
    }
  });

  test("revoke works at once; someone else's key id is 404 and stays valid; unknown id is 404", async () => {
    const u = await registerUser(t);
    const v = await registerUser(t);
    const k = await createKey(t, u);
    const other = await call(t, 'DELETE', `/api/account/keys/${k.id}`, { token: v.token });
    assert.equal(other.status, 404);
    assert.equal((await call(t, 'GET', '/api/account/me', { token: k.key })).status, 200);
    const r = await call(t, 'DELETE', `/api/account/keys/${k.id}`, { token: u.token });
    assert.equal(r.status, 200);
    const after = await call(t, 'GET', '/api/account/me', { token: k.key });
    assert.equal(after.status, 401);
    assert.equal(after.body.code, 'invalid_credential');
    assert.equal((await call(t, 'DELETE', `/api/account/keys/${k.id}`, { token: u.token })).status, 404);
    assert.equal((await call(t, 'DELETE', '/api/account/keys/key_nope', { token: u.token })).status, 404);
    assert.equal((await call(t, 'GET', '/api/account/keys', { token: u.token })).body.keys.length, 0);
  });

  test('key routes need a credential', async () => {
    assert.equal((await call(t, 'GET', '/api/account/keys')).status, 400);
    assert.equal((await call(t, 'POST', '/api/account/keys', { body: { label: 'x' } })).status, 400);
    assert.equal((await call(t, 'DELETE', '/api/account/keys/key_x')).status, 400);
    assert.equal((await call(t, 'GET', '/api/account/keys', { token: 'tsfm_forged' })).status, 401);
  });

  test('POST /v1/validate: api_key in the body or a Bearer header', async () => {
    const u = await registerUser(t);
    const k = await createKey(t, u);
    const body = await call(t, 'POST', '/v1/validate', { body: { api_key: k.key } });
    assert.equal(body.status, 200);
    expectSchema(routeSchema(t, 'POST', '/v1/validate'), body.body);
    assert.deepEqual(body.body, { valid: true, auth_type: 'api_key', user: u.id, key: k.id });
    const header = await call(t, 'POST', '/v1/validate', { token: k.key });
    assert.deepEqual(header.body, body.body);
    const session = await call(t, 'POST', '/v1/validate', { token: u.token });
    assert.deepEqual(session.body, { valid: true, auth_type: 'session', user: u.id });
    const none = await call(t, 'POST', '/v1/validate');
    assert.equal(none.status, 400);
    assert.equal(none.body.code, 'missing_credential');
    const bad = await call(t, 'POST', '/v1/validate', { body: { api_key: 'tsfm_unknown' } });
    assert.equal(bad.status, 401);
    assert.equal(bad.body.code, 'invalid_credential');
    const wrongType = await call(t, 'POST', '/v1/validate', { body: { api_key: 12 } });
    assert.equal(wrongType.status, 422);
  });
});
