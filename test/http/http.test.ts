import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { call, createTestApp, DB_KIND, expectSchema, registerUser, routeSchema, type TestApp } from '../helpers/app.ts';
import { AppError } from '../../src/shared/errors.ts';

describe(`HTTP plumbing (${DB_KIND})`, () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({
      env: { BODY_LIMIT_BYTES: '4096', REGIONS: 'eu-west,us-east' },
      // A route that fails unexpectedly, to see what a client gets from a 500.
      extraRoutes: (app) =>
        app.get('/__boom', async () => {
          throw new Error('secret internal detail');
        }),
    });
  });
  after(() => t.close());

  test('every response carries x-request-id; a sane client id is echoed, a hostile one replaced', async () => {
    const a = await call(t, 'GET', '/healthz');
    assert.match(String(a.headers['x-request-id']), /^req_[0-9a-f]{32}$/);
    const b = await call(t, 'GET', '/healthz', { headers: { 'x-request-id': 'client-abc.123' } });
    assert.equal(b.headers['x-request-id'], 'client-abc.123');
    const c = await call(t, 'GET', '/healthz', { headers: { 'x-request-id': 'bad id\nwith newline' } });
    assert.match(String(c.headers['x-request-id']), /^req_/);
    const d = await call(t, 'GET', '/nowhere');
    assert.ok(d.headers['x-request-id']);
  });

  test('unknown route → 404 JSON in the error shape', async () => {
    const r = await call(t, 'GET', '/api/nope');
    assert.equal(r.status, 404);
    assert.equal(r.body.code, 'not_found');
    assert.equal(typeof r.body.error, 'string');
  });

  test('malformed JSON → 422 json_invalid; wrong content type → 415; oversized body → 413 payload_too_large', async () => {
    const bad = await call(t, 'POST', '/api/auth/login', { raw: '{"email":', headers: { 'content-type': 'application/json' } });
    assert.equal(bad.status, 422);
    assert.equal(bad.body.detail[0].type, 'json_invalid');
    const ct = await call(t, 'POST', '/api/auth/login', { raw: 'email=x', headers: { 'content-type': 'text/plain' } });
    assert.equal(ct.status, 415);
    assert.equal(ct.body.code, 'unsupported_media_type');
    const big = await call(t, 'POST', '/api/contact', { body: { name: 'x', email: 'a@b.co', message: 'y'.repeat(5000) } });
    assert.equal(big.status, 413);
    assert.equal(big.body.code, 'payload_too_large');
  });

  test('query validation names ["query", ...] and path validation names ["path", ...]', async () => {
    const u = await registerUser(t);
    const r = await call(t, 'DELETE', `/api/account/keys/${'k'.repeat(80)}`, { token: u.token });
    assert.equal(r.status, 422);
    assert.deepEqual(r.body.detail[0].loc, ['path', 'key_id']);
  });

  test('an unexpected fault is a generic 500 with the request id and no internals', async () => {
    const r = await call(t, 'GET', '/__boom', { headers: { 'x-request-id': 'trace-500' } });
    assert.equal(r.status, 500);
    assert.equal(r.body.code, 'internal_error');
    assert.equal(r.body.request_id, 'trace-500');
    assert.ok(!r.text.includes('secret internal detail'));
    assert.ok(!r.text.includes('at '));
  });

  test('AppError maps code to status through one table', () => {
    assert.equal(new AppError('billing_required', 'x').status, 402);
    assert.equal(new AppError('missing_credential', 'x').status, 400);
    assert.equal(new AppError('rate_limit_exceeded', 'x').status, 429);
  });

  test('/healthz and /api/system/status', async () => {
    const h = await call(t, 'GET', '/healthz');
    assert.deepEqual(h.body, { status: 'ok' });
    const s = await call(t, 'GET', '/api/system/status');
    assert.equal(s.status, 200);
    expectSchema(routeSchema(t, 'GET', '/api/system/status'), s.body);
    assert.equal(s.body.version, '0.1.0');
    assert.equal(s.body.database.kind, DB_KIND);
    assert.equal(s.body.database.reachable, true);
    assert.deepEqual(s.body.regions, ['eu-west', 'us-east']);
  });

  test('OpenAPI 3.1.0 document at /openapi.json and /api/schema with the spec operation ids', async () => {
    const a = await call(t, 'GET', '/openapi.json');
    const b = await call(t, 'GET', '/api/schema');
    assert.equal(a.status, 200);
    assert.deepEqual(a.body, b.body);
    assert.equal(a.body.openapi, '3.1.0');
    assert.equal(a.body.info.version, '0.1.0');
    const ops = new Set<string>();
    for (const item of Object.values(a.body.paths) as Record<string, { operationId?: string }>[]) {
      for (const op of Object.values(item)) if (op.operationId) ops.add(op.operationId);
    }
    for (const id of [
      'getHealth',
      'getSystemStatus',
      'getApiSchema',
      'registerUser',
      'loginUser',
      'logoutUser',
      'forgotPassword',
      'getAccountMe',
      'deleteAccountMe',
      'listAccountKeys',
      'createAccountKey',
      'revokeAccountKey',
      'getPrivacySettings',
      'patchPrivacySettings',
      'postPrivacySettings',
      'validateCredential',
    ]) {
      assert.ok(ops.has(id), `missing operation ${id}`);
    }
    assert.ok(a.body.components.schemas.RegisterRequest, 'named component schemas');
    // Every route of the service is in the document.
    const documented = new Set(Object.keys(a.body.paths));
    for (const [key, schema] of t.app.routeSchemas) {
      const [method, url] = key.split(' ') as [string, string];
      // Hidden on purpose: the `org/name` twins of model routes, the web app's pages and files.
      const hidden = (schema as { hide?: boolean } | undefined)?.hide === true;
      if (method === 'HEAD' || url.startsWith('/__') || hidden) continue;
      const openapiPath = url.replace(/:([A-Za-z_]+)/g, '{$1}');
      assert.ok(documented.has(openapiPath), `${key} not documented`);
    }
  });
});
