import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { call, createKey, createTestApp, DB_KIND, registerUser, type TestApp } from '../helpers/app.ts';

/**
 * The mistakes a newcomer makes (habits from other forecasting APIs, curl without a content type,
 * typos), each with the error they should meet: the field, what is wrong, and what to do instead.
 */
describe(`a newcomer's mistakes get errors they can act on (${DB_KIND})`, () => {
  let t: TestApp;
  let key: string;
  before(async () => {
    t = await createTestApp();
    key = (await createKey(t, await registerUser(t))).key;
  });
  after(() => t.close());
  const SERIES = [1, 2, 3, 4, 5, 6];
  const post = (body: unknown) => call(t, 'POST', '/v1/forecast', { token: key, body });
  const first = (r: { body: { detail: { loc: unknown[]; msg: string; type: string }[] } }) => r.body.detail[0]!;

  const unknownFields: Array<[string, unknown, (string | number)[], RegExp]> = [
    ['TimeGPT habit: h at the top', { model: 'echo-last', inputs: [{ target: SERIES }], h: 12 }, ['body', 'h'], /did you mean 'parameters\.prediction_length'/],
    [
      'horizon inside parameters',
      { model: 'echo-last', inputs: [{ target: SERIES }], parameters: { horizon: 12 } },
      ['body', 'parameters', 'horizon'],
      /prediction_length/,
    ],
    ['parameters.h', { model: 'echo-last', inputs: [{ target: SERIES }], parameters: { h: 3 } }, ['body', 'parameters', 'h'], /prediction_length/],
    [
      'timestamps beside the inputs (they belong in each input)',
      { model: 'echo-last', inputs: [{ target: SERIES }], timestamps: ['2024-01-01'] },
      ['body', 'timestamps'],
      /inputs\[\]\.timestamps/,
    ],
    ['y instead of target', { model: 'echo-last', inputs: [{ y: SERIES }] }, ['body', 'inputs', 0, 'y'], /inputs\[\]\.target/],
    [
      'a typo: quantile_level',
      { model: 'echo-last', inputs: [{ target: SERIES }], parameters: { quantile_level: [0.5] } },
      ['body', 'parameters', 'quantile_level'],
      /quantile_levels/,
    ],
  ];
  for (const [what, body, loc, hint] of unknownFields) {
    test(`unknown field (${what}) is a 422 at the field, with the close known name, and nothing is billed`, async () => {
      const r = await post(body);
      assert.equal(r.status, 422, r.text);
      const d = r.body.detail.find((x: { type: string }) => x.type === 'extra_forbidden');
      assert.ok(d, r.text);
      assert.deepEqual(d.loc, loc);
      assert.match(d.msg, hint);
      assert.match(r.body.request_id, /\S/);
    });
  }

  test('a field another route takes is not suggested as itself (impute has no parameters)', async () => {
    const r = await call(t, 'POST', '/v1/impute', { token: key, body: { inputs: [{ target: [1, null, 3, 4, 5, 6] }], parameters: { frequency: 'D' } } });
    assert.equal(r.status, 422, r.text);
    const d = first(r);
    assert.deepEqual(d.loc, ['body', 'parameters']);
    assert.equal(d.type, 'extra_forbidden');
    // It said "Unknown field 'parameters'; did you mean 'parameters'?".
    assert.doesNotMatch(d.msg, /did you mean 'parameters'/);
    // A habit is still pointed where it belongs from a nested place.
    const nested = await post({ model: 'echo-last', inputs: [{ target: SERIES, h: 3 }] });
    assert.match(first(nested).msg, /did you mean 'parameters\.prediction_length'/);
  });

  test('the aliases of the contract are still accepted', async () => {
    const r = await post({ model: 'echo-last', inputs: [{ target: SERIES, item_id: 'a' }], parameters: { freq: 'D', quantiles: [0.5], prediction_length: 2 } });
    assert.equal(r.status, 200, r.text);
  });

  test('an unknown model lists the close ids', async () => {
    for (const id of ['echolast', 'Echo-Last', 'echo_last']) {
      const r = await post({ model: id, inputs: [{ target: SERIES }] });
      assert.equal(r.status, 404, r.text);
      assert.equal(r.body.code, 'model_not_found');
      assert.match(r.body.error, /did you mean 'echo-last'/);
      assert.match(r.body.error, /GET \/api\/models/);
    }
  });

  test('bad JSON says where (line and column)', async () => {
    const r = await call(t, 'POST', '/v1/forecast', {
      token: key,
      raw: '{"model": "echo-last",\n "inputs": [1,]}',
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(r.status, 422);
    assert.equal(first(r).type, 'json_invalid');
    // V8's own words: a position with line and column, or the text around the fault.
    assert.match(first(r).msg, /Invalid JSON: .*(line 2|\[1,\]\})/);
    const r2 = await call(t, 'POST', '/v1/forecast', {
      token: key,
      raw: '{"model": "echo-last",\n "inputs" [1]}',
      headers: { 'content-type': 'application/json' },
    });
    assert.match(first(r2).msg, /line 2 column/);
  });

  test('a body in another content type is a 415 that says to send application/json', async () => {
    const r = await call(t, 'POST', '/v1/forecast', { token: key, raw: 'model=x', headers: { 'content-type': 'text/csv' } });
    assert.equal(r.status, 415);
    assert.equal(r.body.code, 'unsupported_media_type');
    assert.match(r.body.error, /Content-Type: application\/json/);
  });

  test('a wrong method is a 405 with Allow, an unknown path a 404', async () => {
    const r = await call(t, 'GET', '/v1/forecast', { token: key });
    assert.equal(r.status, 405);
    assert.equal(r.body.code, 'method_not_allowed');
    assert.equal(r.headers.allow, 'POST');
    const d = await call(t, 'DELETE', '/api/models');
    assert.equal(d.status, 405);
    assert.match(String(d.headers.allow), /GET/);
    const n = await call(t, 'GET', '/v1/forcast');
    assert.equal(n.status, 404);
    assert.equal(n.body.code, 'not_found');
  });

  test('every error body keeps {error, code} and adds the request id', async () => {
    const r = await call(t, 'POST', '/v1/forecast', { body: { model: 'echo-last', inputs: [{ target: SERIES }] }, headers: { 'x-request-id': 'my-req-1' } });
    assert.equal(r.status, 400);
    assert.equal(r.body.code, 'missing_credential');
    assert.deepEqual(Object.keys(r.body).sort(), ['code', 'error', 'request_id']);
    assert.equal(r.body.request_id, 'my-req-1');
  });
});
