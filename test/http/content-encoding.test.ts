import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { createKey, createTestApp, DB_KIND, registerUser, type TestApp } from '../helpers/app.ts';

/**
 * Bodies are read as sent: a compressed one is refused on every route with 415
 * unsupported_media_type before any parser reads it (src/http/app.ts), never parsed as JSON, CSV
 * or a form and refused for the wrong reason with its bytes echoed. /mcp and the OAuth routes
 * answer the same refusal in their own shapes.
 */
describe(`compressed request bodies (${DB_KIND})`, () => {
  let t: TestApp;
  let key: string;
  before(async () => {
    t = await createTestApp();
    key = (await createKey(t, await registerUser(t))).key;
  });
  after(() => t.close());

  const send = (url: string, type: string, text: string, encoding = 'gzip', auth = true) =>
    t.app.inject({
      method: 'POST',
      url,
      headers: { 'content-type': type, 'content-encoding': encoding, ...(auth ? { authorization: `Bearer ${key}` } : {}) },
      payload: gzipSync(text),
    });

  const rest: [string, string, string][] = [
    ['/v1/forecast', 'application/json', '{"model":"naive","inputs":[{"target":[1,2,3]}]}'],
    ['/v1/series/ingest', 'text/csv', 'ds,y\n2024-01-01,1\n2024-01-02,2\n'],
    ['/v1/series/ingest', 'application/json', '{"text":"ds,y\\n2024-01-01,1\\n"}'],
    ['/api/auth/login', 'application/json', '{"email":"a@example.com","password":"correct horse"}'],
  ];
  for (const [url, type, text] of rest) {
    test(`REST ${url} (${type}): 415 unsupported_media_type naming the encoding, no body bytes echoed`, async () => {
      const r = await send(url, type, text);
      assert.equal(r.statusCode, 415, r.body);
      const b = r.json() as Record<string, unknown>;
      assert.deepEqual(Object.keys(b).sort(), ['code', 'error', 'request_id']);
      assert.equal(b.code, 'unsupported_media_type');
      assert.match(String(b.error), /Content-Encoding 'gzip' is not accepted: send the body uncompressed/);
      assert.equal(r.headers['accept-encoding'], 'identity');
      // gzip's magic bytes (1f 8b), escaped or not, are nowhere in the answer.
      assert.ok(!r.body.includes('\\u001f') && !r.body.includes(String.fromCharCode(0x1f)), r.body);
    });
  }

  test('an uncompressed body with Content-Encoding: identity is read as usual', async () => {
    const r = await t.app.inject({
      method: 'POST',
      url: '/v1/series/ingest',
      headers: { 'content-type': 'text/csv', 'content-encoding': 'identity', authorization: `Bearer ${key}` },
      payload: 'ds,y\n2024-01-01,1\n2024-01-02,2\n',
    });
    assert.equal(r.statusCode, 200, r.body);
  });

  test('/mcp: HTTP 415 with a JSON-RPC error carrying the same code', async () => {
    const r = await send('/mcp', 'application/json', '{"jsonrpc":"2.0","id":1,"method":"tools/list"}', 'br');
    assert.equal(r.statusCode, 415, r.body);
    const b = r.json() as { jsonrpc: string; error: { code: number; message: string; data: { code: string } } };
    assert.equal(b.jsonrpc, '2.0');
    assert.equal(b.error.data.code, 'unsupported_media_type');
    assert.match(b.error.message, /Content-Encoding 'br' is not accepted/);
  });

  test('OAuth token endpoint: 415 in the RFC 6749 shape', async () => {
    const r = await send('/oauth/token', 'application/x-www-form-urlencoded', 'grant_type=authorization_code', 'gzip', false);
    assert.equal(r.statusCode, 415, r.body);
    const b = r.json() as { error: string; error_description: string };
    assert.equal(b.error, 'invalid_request');
    assert.match(b.error_description, /Content-Encoding 'gzip' is not accepted/);
  });
});
