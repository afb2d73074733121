import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createEngine } from '../../src/engine/engine.ts';
import { call, createTestApp, DB_KIND, registerUser, type TestApp, type TestUser } from '../helpers/app.ts';

/**
 * Every route that takes a body or a query, fed malformed input as an administrator (so no route
 * stops at the role check): the answer is a 4xx in the documented shape, never a 500.
 */
const BODIES: unknown[] = [
  null,
  [],
  'text',
  42,
  {},
  { model: 'naive', inputs: 'x' },
  { model: 'naive', inputs: [{ target: [[1, 'a']] }] },
  { model: 'naive', inputs: [{ target: [1e308, -1e308, 0] }], parameters: { prediction_length: 2.5 } },
  { model: 'naive', inputs: [{ target: [[]] }] },
  { model: 'naive', inputs: [{ target: [1, 2], start: '2024-02-30' }], parameters: { frequency: '0min' } },
  { model: ['naive'], inputs: [{ target: [1, 2] }] },
  { inputs: [{ target: [1, 2] }], models: [], top_n: 0, budget: 1.5 },
  { inputs: [{ target: [1, 2, 3, 4] }], models: ['naive'], parameters: { prediction_length: 1e9 } },
  { requests: [{ model: 'naive' }, null, 5] },
  { requests: 'x' },
  { requestIds: Array.from({ length: 10001 }, (_, i) => `r${i}`) },
  { requestIds: [1, 2] },
  { target_user_id: 5, amount: 'x', reason: null },
  { target_user_id: 'usr_x', amount: 1e20, reason: 'r' },
  { target_user_id: 'usr_x', reason: 'r', start: 'nope', end: 'nope' },
  { action: 'refund' },
  { email: 'a@b.co', password: 'x'.repeat(5000) },
  { label: { nested: true } },
  { emails: Array.from({ length: 50 }, (_, i) => `u${i}@example.com`) },
  { service_improvement_opt_in: null },
  { name: 'n', email: 'a@b.co', message: '' },
  { token: '', password: 'longenough' },
  { api_key: ['x'] },
];
const QUERIES = ['?limit=0', '?limit=abc', '?offset=-1', '?start=garbage&end=2024-13-01', '?limit=1001', '?target_user_id=&limit=600', '?available=yes'];

describe(`bad input never gives a 500 (${DB_KIND})`, () => {
  let t: TestApp;
  let admin: TestUser;
  before(async () => {
    const engine = createEngine({ poolSize: 1, timeoutMs: 20_000, maxQueue: 64, modelsDir: '/nonexistent', threads: 1 });
    t = await createTestApp({ env: { ADMIN_EMAILS: 'fuzz-admin@example.com', AUTH_RATE_LIMIT_PER_MINUTE: '100000' }, overrides: { engine } });
    admin = await registerUser(t, { email: 'fuzz-admin@example.com' });
  });
  after(() => t.close());

  const routes = () =>
    [...t.app.routeSchemas.keys()]
      .map((k) => k.split(' ') as [string, string])
      .filter(
        ([m, url]) =>
          m !== 'HEAD' && m !== 'GET' && !url.startsWith('/mcp') && !url.startsWith('/oauth') && !url.includes('webhooks') && !url.includes('/local/'),
      );

  test('bodies', async () => {
    const checked: string[] = [];
    for (const [method, pattern] of routes()) {
      if (method === 'DELETE') continue; // deletes take no body; covered by their own tests
      const url = pattern.replace(/:[A-Za-z_]+/g, 'x');
      for (const body of BODIES) {
        const r = await call(t, method as 'POST', url, { token: admin.token, raw: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
        assert.ok(r.status < 500, `${method} ${url} ${JSON.stringify(body).slice(0, 120)} → ${r.status} ${r.text.slice(0, 300)}`);
        if (r.status >= 400) {
          assert.ok(
            r.status === 422 ? Array.isArray(r.body?.detail) : typeof r.body?.code === 'string' && typeof r.body?.error === 'string',
            `${method} ${url}: shape ${r.text.slice(0, 200)}`,
          );
        }
      }
      checked.push(`${method} ${url}`);
    }
    assert.ok(checked.length >= 15, `checked ${checked.length} routes`);
  });

  test('queries', async () => {
    for (const url of ['/api/account/usage', '/api/account/usage/summary', '/api/admin/billing/adjustments', '/api/models']) {
      for (const q of QUERIES) {
        const r = await call(t, 'GET', url + q, { token: admin.token });
        assert.ok(r.status < 500, `GET ${url}${q} → ${r.status} ${r.text.slice(0, 300)}`);
      }
    }
  });
});
