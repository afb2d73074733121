import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { DB_KIND } from '../helpers/app.ts';
import { createListeningApp, type ListeningApp } from '../helpers/listen.ts';
import { pkcePair, registerClientAt } from '../oauth/flow.ts';

type Json = Record<string, any>;

/**
 * The browser pages that take forms (the OAuth consent page, the e-mail confirmation page) answer
 * their errors as HTML, and /verify-email as JSON to a JSON body: what each request really gets
 * back, status and media type, is what /openapi.json documents for its operation.
 */
describe(`form pages answer what the OpenAPI document says (${DB_KIND})`, () => {
  let t: ListeningApp;
  let doc: Json;
  let client: { client_id: string; redirect_uris: string[] };
  before(async () => {
    t = await createListeningApp({ env: { AUTH_RATE_LIMIT_PER_MINUTE: '100000' } });
    doc = (await (await fetch(`${t.baseUrl}/openapi.json`)).json()) as Json;
    client = await registerClientAt(t.baseUrl);
  });
  after(() => t.close());

  /** The documented media types of `status` for the operation (following a $ref to a shared response). */
  const documented = (method: string, path: string, status: number): string[] => {
    const op = doc.paths?.[path]?.[method.toLowerCase()];
    assert.ok(op, `${method} ${path} is documented`);
    let response = op.responses?.[String(status)];
    if (typeof response?.$ref === 'string') response = doc.components.responses[response.$ref.split('/').pop()];
    return response ? Object.keys(response.content ?? {}) : [];
  };

  const authorizeFields = () => ({
    client_id: client.client_id,
    redirect_uri: client.redirect_uris[0] as string,
    code_challenge: pkcePair().challenge,
    code_challenge_method: 'S256',
    scope: 'mcp',
    state: 'st',
    action: 'approve',
  });
  const form = (fields: Record<string, string>) => ({ 'content-type': 'application/x-www-form-urlencoded', body: new URLSearchParams(fields).toString() });

  const cases: {
    what: string;
    expect: [number, string];
    method: 'GET' | 'POST';
    path: string;
    url: () => string;
    init?: () => { headers?: Record<string, string>; body?: string };
  }[] = [
    {
      what: 'consent page',
      expect: [200, 'text/html'],
      method: 'GET',
      path: '/oauth/authorize',
      url: () => `/oauth/authorize?${new URLSearchParams({ response_type: 'code', ...authorizeFields() })}`,
    },
    {
      what: 'authorize with an unknown client',
      expect: [400, 'text/html'],
      method: 'GET',
      path: '/oauth/authorize',
      url: () => '/oauth/authorize?client_id=x',
    },
    { what: 'authorize with a NUL', expect: [400, 'text/html'], method: 'GET', path: '/oauth/authorize', url: () => '/oauth/authorize?client_id=a%00b' },
    {
      what: 'consent form with too little',
      expect: [400, 'text/html'],
      method: 'POST',
      path: '/oauth/authorize',
      url: () => '/oauth/authorize',
      init: () => {
        const { body, ...h } = form({ client_id: 'x' });
        return { headers: { ...h, origin: t.baseUrl }, body };
      },
    },
    {
      what: 'consent form as JSON',
      expect: [415, 'text/html'],
      method: 'POST',
      path: '/oauth/authorize',
      url: () => '/oauth/authorize',
      init: () => ({ headers: { 'content-type': 'application/json' }, body: JSON.stringify({ client_id: 'x' }) }),
    },
    {
      what: 'consent form, not signed in',
      expect: [401, 'text/html'],
      method: 'POST',
      path: '/oauth/authorize',
      url: () => '/oauth/authorize',
      init: () => {
        const { body, ...h } = form(authorizeFields());
        return { headers: { ...h, origin: t.baseUrl }, body };
      },
    },
    {
      what: 'consent form from another site',
      expect: [403, 'text/html'],
      method: 'POST',
      path: '/oauth/authorize',
      url: () => '/oauth/authorize',
      init: () => {
        const { body, ...h } = form(authorizeFields());
        return { headers: { ...h, origin: 'https://evil.example' }, body };
      },
    },
    {
      what: 'consent form with a wrong password',
      expect: [401, 'text/html'],
      method: 'POST',
      path: '/oauth/authorize',
      url: () => '/oauth/authorize',
      init: () => {
        const { body, ...h } = form({ ...authorizeFields(), email: 'nobody@example.com', password: 'wrong password' });
        return { headers: { ...h, origin: t.baseUrl }, body };
      },
    },
    { what: 'confirmation page', expect: [200, 'text/html'], method: 'GET', path: '/verify-email', url: () => '/verify-email?token=abc' },
    {
      what: 'confirmation form with a bad token',
      expect: [401, 'text/html'],
      method: 'POST',
      path: '/verify-email',
      url: () => '/verify-email',
      init: () => {
        const { body, ...h } = form({ token: 'abc' });
        return { headers: h, body };
      },
    },
    {
      what: 'confirmation as JSON with a bad token',
      expect: [401, 'application/json'],
      method: 'POST',
      path: '/verify-email',
      url: () => '/verify-email',
      init: () => ({ headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: 'abc' }) }),
    },
    {
      what: 'confirmation as JSON without a token',
      expect: [422, 'application/json'],
      method: 'POST',
      path: '/verify-email',
      url: () => '/verify-email',
      init: () => ({ headers: { 'content-type': 'application/json' }, body: '{}' }),
    },
  ];

  for (const c of cases) {
    test(`${c.what}: ${c.method} ${c.path} answers a documented status and media type`, async () => {
      const init = c.init?.() ?? {};
      const res = await fetch(t.baseUrl + c.url(), { method: c.method, redirect: 'manual', ...init });
      const media = (res.headers.get('content-type') ?? '').split(';')[0]?.trim() ?? '';
      await res.text();
      assert.deepEqual([res.status, media], c.expect, `${c.method} ${c.url()}`);
      const types = documented(c.method, c.path, res.status);
      assert.ok(types.includes(media), `${c.method} ${c.url()} → ${res.status} ${media}; documented for ${res.status}: [${types.join(', ')}]`);
    });
  }

  test('what the GET pages never answer is not documented: no 422 (a bad query is a 400 page) and no 429 (only the forms count)', () => {
    assert.deepEqual(documented('GET', '/oauth/authorize', 422), []);
    assert.deepEqual(documented('GET', '/oauth/authorize', 429), []);
    assert.deepEqual(documented('GET', '/verify-email', 429), []);
    assert.deepEqual(documented('POST', '/verify-email', 429), ['application/json']);
  });

  test('the statuses the pages never answer in JSON are not documented as JSON', () => {
    for (const [method, path] of [
      ['GET', '/oauth/authorize'],
      ['POST', '/oauth/authorize'],
    ] as const) {
      for (const status of Object.keys(doc.paths[path][method.toLowerCase()].responses).filter((s) => Number(s) >= 400)) {
        assert.deepEqual(documented(method, path, Number(status)), ['text/html'], `${method} ${path} ${status}`);
      }
    }
  });
});
