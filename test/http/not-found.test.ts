import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { call, createTestApp, DB_KIND, type TestApp } from '../helpers/app.ts';

/**
 * 404 or 405 (src/http/app.ts, the not-found handler): a 405 names the methods to use instead,
 * so it is only answered when there is one; a route of the request's own method that finds
 * nothing (a static file that is not there) is a 404.
 */
describe(`404 or 405 (${DB_KIND})`, () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({
      extraRoutes: (app) => {
        app.head('/test/head-only', async (_req, reply) => reply.code(200).send());
      },
    });
  });
  after(() => t.close());

  for (const url of ['/static/nonexistent.js', '/vendor/preact/nope.js']) {
    test(`a missing static file (${url}) is a 404, for GET and HEAD`, async () => {
      const r = await call(t, 'GET', url);
      assert.equal(r.status, 404, r.text);
      assert.equal(r.body.code, 'not_found');
      assert.equal(r.headers.allow, undefined);
      assert.equal(typeof r.body.request_id, 'string');
      const h = await t.app.inject({ method: 'HEAD', url });
      assert.equal(h.statusCode, 404);
    });
  }

  test('another method on a static path is a 405 offering GET', async () => {
    const r = await call(t, 'POST', '/static/nonexistent.js', { raw: '' });
    assert.equal(r.status, 405, r.text);
    assert.equal(r.body.code, 'method_not_allowed');
    assert.match(r.body.error, /; use GET$/);
    assert.match(String(r.headers.allow), /GET/);
  });

  test('a path only HEAD would match is a 404: there is no method to offer', async () => {
    const r = await call(t, 'GET', '/test/head-only');
    assert.equal(r.status, 404, r.text);
    assert.equal(r.body.code, 'not_found');
  });

  test('no 405 ever says "use" with nothing after it', async () => {
    for (const [method, url] of [
      ['GET', '/static/x.js'],
      ['DELETE', '/static/x.js'],
      ['GET', '/v1/forecast'],
      ['DELETE', '/api/models'],
      ['PUT', '/vendor/uplot/nope.js'],
      ['GET', '/test/head-only'],
    ] as const) {
      const r = await call(t, method, url);
      if (r.status === 405) assert.match(r.body.error, /; use [A-Z]+( or [A-Z]+)*$/, `${method} ${url}: ${r.body.error}`);
    }
  });
});
