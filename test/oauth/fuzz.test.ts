import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { createTestApp, DB_KIND, type TestApp } from '../helpers/app.ts';

/**
 * Issue #11: every OAuth endpoint answers any input with its RFC error (JSON `{error,
 * error_description}`, or an HTML page for the authorize routes), never a 5xx. fast-check
 * generates the requests (wrong types, prototype keys, NUL and other odd characters, malformed
 * Basic headers, wrong content types); a fixed seed keeps runs reproducible and the count bounded.
 */
const FIELDS = [
  'client_id',
  'client_secret',
  'redirect_uri',
  'redirect_uris',
  'client_name',
  'grant_type',
  'code',
  'code_verifier',
  'code_challenge',
  'code_challenge_method',
  'refresh_token',
  'token',
  'token_type_hint',
  'scope',
  'state',
  'resource',
  'response_type',
  'action',
  'email',
  'password',
  'token_endpoint_auth_method',
  'grant_types',
  '__proto__',
  'constructor',
  'prototype',
];

const oddString = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom(
    '\u0000',
    'a\u0000b',
    '%00',
    '%E0%A4%A',
    'not a url',
    'ms-word:ofe|u|https://x',
    'https://evil.example/cb',
    'http://127.0.0.1:1/cb',
    'mcp offline_access',
    'S256',
    'plain',
    'authorization_code',
    'refresh_token',
    'x'.repeat(3000),
  ),
);
const jsonValue = fc.oneof(
  oddString,
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(oddString, { maxLength: 3 }),
  fc.dictionary(oddString, oddString, { maxKeys: 2 }),
);
const fields = fc.dictionary(fc.oneof(fc.constantFrom(...FIELDS), fc.string({ maxLength: 10 })), jsonValue, { maxKeys: 8 });

const asForm = (o: Record<string, unknown>) =>
  Object.entries(o)
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(typeof v === 'string' ? v : JSON.stringify(v))}`)
    .join('&');

const body = fc.oneof(
  fields.map((o) => ({ type: 'application/x-www-form-urlencoded', raw: asForm(o) })),
  fields.map((o) => ({ type: 'application/json', raw: JSON.stringify(o) })),
  fields.map((o) => ({ type: 'application/json', raw: JSON.stringify(o).replace('{', '{"__proto__":{"x":1},') })),
  fc.string({ maxLength: 60 }).map((raw) => ({ type: 'application/json', raw })),
  fc
    .tuple(
      fc.constantFrom('text/plain', 'application/xml', 'multipart/form-data; boundary=x', 'application/json; charset=latin1', 'garbage', ''),
      fc.string({ maxLength: 60 }),
    )
    .map(([type, raw]) => ({ type, raw })),
  fc.constant({ type: '', raw: '' }),
);

const authorization = fc.option(
  fc.oneof(
    fc.string({ unit: 'binary', maxLength: 30 }).map((s) => `Basic ${Buffer.from(s).toString('base64')}`),
    fc.string({ maxLength: 30 }).map((s) => `Basic ${s}`),
    fc.constantFrom('Basic', 'Bearer x', `Basic ${Buffer.from('%zz:%zz').toString('base64')}`, `Basic ${Buffer.from('a\u0000:b').toString('base64')}`),
  ),
  { nil: undefined },
);

const JSON_ENDPOINTS = ['/oauth/register', '/oauth/token', '/oauth/revoke'];

describe(`OAuth endpoints under fuzzed input never answer 5xx (${DB_KIND})`, () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({ env: { AUTH_RATE_LIMIT_PER_MINUTE: '1000000' } });
  });
  after(() => t.close());

  test('POST /oauth/register, /oauth/token, /oauth/revoke, /oauth/authorize and GET /oauth/authorize', async () => {
    let count = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('POST /oauth/register', 'POST /oauth/token', 'POST /oauth/revoke', 'POST /oauth/authorize', 'GET /oauth/authorize'),
        body,
        fields,
        authorization,
        fc.constantFrom(undefined, 'null', 'https://evil.example', 'http://localhost:80'),
        async (route, b, query, auth, origin) => {
          count += 1;
          const [method, path] = route.split(' ') as ['GET' | 'POST', string];
          const headers: Record<string, string> = {};
          if (auth !== undefined) headers.authorization = auth;
          if (origin !== undefined) headers.origin = origin;
          let url = path;
          let payload: string | undefined;
          if (method === 'GET') url += `?${asForm(query)}`;
          else {
            if (b.type !== '') headers['content-type'] = b.type;
            payload = b.raw;
          }
          const res = await t.app.inject({ method, url, headers, ...(payload !== undefined ? { payload } : {}) });
          assert.ok(res.statusCode < 500, `${route} ${JSON.stringify(headers)} ${payload ?? url} → ${res.statusCode} ${res.body.slice(0, 300)}`);
          if (JSON_ENDPOINTS.includes(path) && res.statusCode >= 400) {
            const parsed = JSON.parse(res.body) as Record<string, unknown>;
            // RFC errors, or the app's {error, code} for a refusal before the route (e.g. CSRF 403).
            assert.equal(typeof parsed.error, 'string', res.body);
            assert.ok(typeof parsed.error_description === 'string' || typeof parsed.code === 'string', res.body);
          }
          if (path === '/oauth/authorize' && res.statusCode !== 303) {
            assert.match(String(res.headers['content-type']), /text\/html/, `${route} → ${res.statusCode} ${res.body.slice(0, 200)}`);
          }
        },
      ),
      { numRuns: 400, seed: 20261125, endOnFailure: true },
    );
    assert.equal(count >= 400, true);
  });
});
