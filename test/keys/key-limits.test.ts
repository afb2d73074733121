import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { globToRegExp, modelMatches } from '../../src/keys/policy.ts';
import { operations } from '../../src/operations.ts';
import { ErrorBody } from '../../src/shared/schemas.ts';
import { call, DB_KIND, expectSchema, registerUser, routeSchema, type TestUser } from '../helpers/app.ts';
import { createListeningApp, type ListeningApp } from '../helpers/listen.ts';

const FORECAST = { model: 'echo-last', inputs: [{ target: [1, 2, 3, 4, 5, 6] }], parameters: { prediction_length: 3 } };
const forecastWith = (model: string) => ({ ...FORECAST, model });

describe(`API key scopes and limits (${DB_KIND})`, () => {
  let t: ListeningApp;
  before(async () => {
    t = await createListeningApp();
  });
  after(() => t.close());

  async function key(u: TestUser, body: Record<string, unknown> = {}): Promise<{ id: string; key: string; body: any }> {
    const r = await call(t, 'POST', '/api/account/keys', { token: u.token, body: { label: `k-${Math.random().toString(36).slice(2)}`, ...body } });
    assert.equal(r.status, 200, r.text);
    expectSchema(routeSchema(t, 'POST', '/api/account/keys'), r.body);
    return { id: r.body.id, key: r.body.key, body: r.body };
  }

  test('glob patterns are anchored and escape everything but *', () => {
    assert.ok(modelMatches(['ttm-*'], 'ttm-r2'));
    assert.ok(!modelMatches(['ttm-*'], 'xttm-r2'));
    assert.ok(!modelMatches(['auto.ets'], 'autoXets'));
    assert.ok(!globToRegExp('a.b*').test('aXb'));
    assert.ok(modelMatches(['org/*'], 'org/slashed-model'));
    assert.ok(modelMatches(['*'], 'anything'));
    assert.ok(!modelMatches([], 'anything'));
  });

  test('a default key forecasts and reads, but cannot manage keys, the account, privacy or checkout; the 403 names what is needed', async () => {
    const u = await registerUser(t);
    const k = await key(u);
    assert.deepEqual(k.body.scopes, ['forecast', 'usage:read', 'billing:read']);
    assert.equal((await call(t, 'POST', '/v1/forecast', { token: k.key, body: FORECAST })).status, 200);
    assert.equal((await call(t, 'GET', '/api/account/usage', { token: k.key })).status, 200);
    assert.equal((await call(t, 'GET', '/api/account/billing', { token: k.key })).status, 200);
    assert.equal((await call(t, 'GET', '/api/account/keys', { token: k.key })).status, 200);
    const refusals: [string, string, unknown, string][] = [
      ['POST', '/api/account/keys', { label: 'escalate' }, 'keys:write'],
      ['DELETE', `/api/account/keys/${k.id}`, undefined, 'keys:write'],
      ['DELETE', '/api/account/keys', undefined, 'keys:write'],
      ['PATCH', `/api/account/keys/${k.id}`, { monthly_credit_limit: null }, 'keys:write'],
      ['DELETE', '/api/account/me', undefined, 'account:write'],
      ['PATCH', '/api/account/privacy', { service_improvement_opt_in: true }, 'account:write'],
      ['POST', '/api/account/billing/payments', { kind: 'checkout' }, 'billing:write'],
    ];
    for (const [method, url, body, scope] of refusals) {
      const r = await call(t, method as 'POST', url, { token: k.key, ...(body !== undefined ? { body } : {}) });
      assert.equal(r.status, 403, `${method} ${url}: ${r.text}`);
      assert.equal(r.body.code, 'forbidden');
      assert.match(r.body.error, new RegExp(`needs a signed-in session or an API key with scope ${scope}`));
    }
    // Nothing happened: the account and the key are still there.
    assert.equal((await call(t, 'GET', '/api/account/me', { token: u.token })).status, 200);
    assert.equal((await call(t, 'GET', '/api/account/keys', { token: u.token })).body.keys.length, 1);
  });

  test('a key created with keys:write may manage keys, not the account; a forecast-less key may not forecast', async () => {
    const u = await registerUser(t);
    const admin = await key(u, { scopes: ['keys:write'] });
    const made = await call(t, 'POST', '/api/account/keys', { token: admin.key, body: { label: 'made-by-key', scopes: ['keys:write'] } });
    assert.equal(made.status, 200, made.text);
    assert.equal((await call(t, 'DELETE', `/api/account/keys/${made.body.id}`, { token: admin.key })).status, 200);
    assert.equal((await call(t, 'DELETE', '/api/account/me', { token: admin.key })).status, 403);
    const f = await call(t, 'POST', '/v1/forecast', { token: admin.key, body: FORECAST });
    assert.equal(f.status, 403);
    assert.match(f.body.error, /scope forecast/);
    const bad = await call(t, 'POST', '/api/account/keys', { token: u.token, body: { label: 'x', scopes: ['root'] } });
    assert.equal(bad.status, 422);
    assert.deepEqual(bad.body.detail[0].loc.slice(0, 2), ['body', 'scopes']);
  });

  test('a keys:write key creates and changes keys only within its own scopes and limits; a session has no such bound', async () => {
    const a = await registerUser(t);
    await t.deps.database.db.updateTable('users').set({ role: 'admin' }).where('id', '=', a.id).execute();
    const expires = Date.now() + 30 * 86400_000;
    const own = { allowed_models: ['echo-*'], monthly_credit_limit: 100, rate_limit_per_minute: 1000, expires_at: new Date(expires).toISOString() };
    const k = await key(a, { scopes: ['forecast', 'keys:write'], ...own });
    const within = {
      allowed_models: ['echo-last'],
      monthly_credit_limit: 50,
      rate_limit_per_minute: 500,
      expires_at: new Date(expires - 3600_000).toISOString(),
    };
    const refused: [Record<string, unknown>, RegExp][] = [
      [{ scopes: ['admin'], ...within }, /scopes admin \(it holds forecast, keys:write\)/],
      [{ scopes: ['forecast', 'account:write', 'billing:write'], ...within }, /scopes account:write, billing:write/],
      [within, /scopes usage:read, billing:read/], // the default scopes are more than this key holds
      [{ scopes: ['forecast'] }, /allowed_models unset.*monthly_credit_limit unset|monthly_credit_limit unset/],
      [{ scopes: ['forecast'], ...within, allowed_models: ['*'] }, /allowed_models \* \(its own are echo-\*\)/],
      [{ scopes: ['forecast'], ...within, allowed_models: ['echo-last', 'naive'] }, /allowed_models naive/],
      [{ scopes: ['forecast'], ...within, monthly_credit_limit: 101 }, /monthly_credit_limit 101 \(its own is 100\)/],
      [{ scopes: ['forecast'], ...within, rate_limit_per_minute: 1001 }, /rate_limit_per_minute 1001 \(its own is 1000\)/],
      [{ scopes: ['forecast'], ...within, expires_at: null }, /expires_at unset/],
      [{ scopes: ['forecast'], ...within, expires_at: new Date(expires + 1000).toISOString() }, /expires_at 20/],
    ];
    for (const [body, message] of refused) {
      const r = await call(t, 'POST', '/api/account/keys', { token: k.key, body: { label: 'minted', ...body } });
      assert.equal(r.status, 403, `${JSON.stringify(body)}: ${r.text}`);
      expectSchema(ErrorBody, r.body);
      assert.equal(r.body.code, 'forbidden');
      assert.match(r.body.error, message);
    }
    assert.equal((await call(t, 'GET', '/api/account/keys', { token: a.token })).body.keys.length, 1, 'nothing was created');
    // Within its own: allowed, including a pattern its own pattern covers and keys:write itself (rotation).
    const ok = await call(t, 'POST', '/api/account/keys', {
      token: k.key,
      body: { label: 'rotated', scopes: ['forecast', 'keys:write'], ...within, allowed_models: ['echo-l*', 'echo-last'] },
    });
    assert.equal(ok.status, 200, ok.text);

    // PATCH: its own limits cannot be lifted, nor another key's raised beyond its own; tightening is fine.
    const lift = await call(t, 'PATCH', `/api/account/keys/${k.id}`, {
      token: k.key,
      body: { allowed_models: null, monthly_credit_limit: null, rate_limit_per_minute: null, expires_at: null },
    });
    assert.equal(lift.status, 403, lift.text);
    assert.match(lift.body.error, /allowed_models unset/);
    const mine = (await call(t, 'GET', '/api/account/keys', { token: a.token })).body.keys.find((x: { id: string }) => x.id === k.id);
    assert.deepEqual(
      [mine.allowed_models, mine.monthly_credit_limit, mine.rate_limit_per_minute, mine.expires_at],
      [own.allowed_models, 100, 1000, own.expires_at],
    );
    const free = await key(a, { scopes: ['forecast'] }); // made by the session: no limits
    for (const body of [{ monthly_credit_limit: 1000 }, { allowed_models: ['ttm-*'] }, { rate_limit_per_minute: 1001 }]) {
      const r = await call(t, 'PATCH', `/api/account/keys/${free.id}`, { token: k.key, body });
      assert.equal(r.status, 403, `${JSON.stringify(body)}: ${r.text}`);
    }
    assert.equal((await call(t, 'PATCH', `/api/account/keys/${k.id}`, { token: k.key, body: { monthly_credit_limit: 60 } })).status, 200);
    const tightened = await call(t, 'PATCH', `/api/account/keys/${free.id}`, { token: k.key, body: { monthly_credit_limit: 10, label: 'tight' } });
    assert.equal(tightened.status, 200, tightened.text);
    assert.equal(tightened.body.monthly_credit_limit, 10);
    // The 60 it set on itself is now its bound.
    assert.equal((await call(t, 'PATCH', `/api/account/keys/${free.id}`, { token: k.key, body: { monthly_credit_limit: 61 } })).status, 403);

    // A session keeps full power: an admin key without limits, and any limit lifted.
    const adm = await call(t, 'POST', '/api/account/keys', { token: a.token, body: { label: 'adm', scopes: ['admin'] } });
    assert.equal(adm.status, 200, adm.text);
    const lifted = await call(t, 'PATCH', `/api/account/keys/${k.id}`, {
      token: a.token,
      body: { allowed_models: null, monthly_credit_limit: null, rate_limit_per_minute: null, expires_at: null },
    });
    assert.equal(lifted.status, 200, lifted.text);
  });

  test("an administrator's API key needs scope admin for the admin routes; the session does not", async () => {
    const email = `admin-${Date.now()}-${Math.random().toString(36).slice(2)}@example.com`;
    const a = await registerUser(t, { email });
    await t.deps.database.db.updateTable('users').set({ role: 'admin' }).where('id', '=', a.id).execute();
    const plain = await key(a);
    const scoped = await key(a, { scopes: ['admin'] });
    assert.equal((await call(t, 'GET', '/api/admin/billing/adjustments', { token: a.token })).status, 200);
    const r = await call(t, 'GET', '/api/admin/billing/adjustments', { token: plain.key });
    assert.equal(r.status, 403);
    assert.match(r.body.error, /scope admin/);
    assert.equal((await call(t, 'GET', '/api/admin/billing/adjustments', { token: scoped.key })).status, 200);
  });

  test('a key without scope forecast runs no operation that spends credits, over REST or MCP', async () => {
    const u = await registerUser(t);
    const reader = await key(u, { scopes: ['usage:read'] });
    const spending = operations.filter((op) => op.spendsCredits);
    assert.ok(spending.some((op) => op.path === '/v1/cross-validation') && spending.some((op) => op.path === '/v1/impute'));
    for (const op of spending) {
      const r = await call(t, op.method, op.path, { token: reader.key, body: op.example.request ?? {} });
      assert.equal(r.status, 403, `${op.method} ${op.path}: ${r.text}`);
      assert.match(r.body.error, /scope forecast/, op.path);
    }
    const client = new Client({ name: 'test', version: '1' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${t.baseUrl}/mcp`), { requestInit: { headers: { authorization: `Bearer ${reader.key}` } } }),
    );
    try {
      for (const op of spending) {
        const r = await client.callTool({
          name: op.id,
          arguments: op.mcpExample ? JSON.parse(op.mcpExample) : (op.example.request as Record<string, unknown>),
        });
        assert.equal(r.isError, true, op.id);
        assert.match((r.content as { text: string }[])[0]?.text ?? '', /^Error forbidden \(HTTP 403\): This API key lacks scope forecast/, op.id);
      }
    } finally {
      await client.close();
    }
    const spent = await t.deps.database.db.selectFrom('usage_events').select('id').where('user_id', '=', u.id).execute();
    assert.equal(spent.length, 0, 'nothing was charged');
  });

  test('the scope of a route is in the OpenAPI document: its 403 and who may call it', async () => {
    const doc = (await call(t, 'GET', '/openapi.json')).body;
    const create = doc.paths['/api/account/keys'].post;
    assert.ok(create.responses['403']);
    assert.match(create.description, /scope keys:write/);
    assert.ok(doc.paths['/api/account/keys/{key_id}'].patch.responses['403']);
    assert.match(doc.paths['/v1/forecast'].post.description, /scope forecast/);
  });

  test('expires_at: a past time is 422; an expired key is 401 invalid_credential saying it expired', async () => {
    const u = await registerUser(t);
    const past = await call(t, 'POST', '/api/account/keys', { token: u.token, body: { label: 'past', expires_at: '2001-01-01T00:00:00Z' } });
    assert.equal(past.status, 422);
    assert.deepEqual(past.body.detail[0].loc, ['body', 'expires_at']);
    const k = await key(u, { expires_at: new Date(Date.now() + 3600_000).toISOString() });
    assert.ok(k.body.expires_at);
    assert.equal((await call(t, 'POST', '/v1/forecast', { token: k.key, body: FORECAST })).status, 200);
    await t.deps.database.db
      .updateTable('api_keys')
      .set({ expires_at: Date.now() - 1000 })
      .where('id', '=', k.id)
      .execute();
    const r = await call(t, 'POST', '/v1/forecast', { token: k.key, body: FORECAST });
    assert.equal(r.status, 401);
    assert.equal(r.body.code, 'invalid_credential');
    assert.match(r.body.error, /expired/);
  });

  test('allowed_models applies to forecasts, every batch item and explicit ensemble members', async () => {
    const u = await registerUser(t);
    const k = await key(u, { allowed_models: ['echo-l*'] });
    assert.deepEqual(k.body.allowed_models, ['echo-l*']);
    assert.equal((await call(t, 'POST', '/v1/forecast', { token: k.key, body: FORECAST })).status, 200);
    const refused = await call(t, 'POST', '/v1/forecast', { token: k.key, body: forecastWith('echo-short') });
    assert.equal(refused.status, 403);
    assert.equal(refused.body.code, 'key_model_not_allowed');
    assert.match(refused.body.error, /echo-short.*echo-l\*/);
    const batch = await call(t, 'POST', '/v1/forecast/batch', { token: k.key, body: { requests: [FORECAST, forecastWith('echo-short')] } });
    assert.equal(batch.status, 200, batch.text);
    assert.equal(batch.body.data[0].ok, true);
    assert.equal(batch.body.data[1].ok, false);
    assert.equal(batch.body.data[1].error.code, 'key_model_not_allowed');
    const ens = await call(t, 'POST', '/v1/forecast/ensemble', {
      token: k.key,
      body: { models: ['echo-last', 'echo-short'], inputs: [{ target: Array.from({ length: 40 }, (_, i) => i % 7) }], parameters: { prediction_length: 3 } },
    });
    assert.equal(ens.status, 403, ens.text);
    assert.equal(ens.body.code, 'key_model_not_allowed');
    // The session of the same account is not restricted.
    assert.equal((await call(t, 'POST', '/v1/forecast', { token: u.token, body: forecastWith('echo-short') })).status, 200);
  });

  test('over MCP (official SDK client), a key-limit refusal is a text-only tool error', async () => {
    const u = await registerUser(t);
    const k = await key(u, { allowed_models: ['echo-last'] });
    const client = new Client({ name: 'test', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${t.baseUrl}/mcp`), { requestInit: { headers: { authorization: `Bearer ${k.key}` } } }));
    try {
      const ok = await client.callTool({ name: 'forecast', arguments: FORECAST });
      assert.notEqual(ok.isError, true, JSON.stringify(ok.content));
      const r = await client.callTool({ name: 'forecast', arguments: forecastWith('echo-short') });
      assert.equal(r.isError, true);
      assert.equal(r.structuredContent, undefined);
      assert.match((r.content as { text: string }[])[0]?.text ?? '', /^Error key_model_not_allowed \(HTTP 403\): This API key may not run model 'echo-short'/);
    } finally {
      await client.close();
    }
    // The key's own rate limit counts tool calls too (and, as for the account, the other MCP
    // messages: initialize and its notification are 2 of these 3).
    const slow = await key(u, { rate_limit_per_minute: 3 });
    const c2 = new Client({ name: 'test', version: '1' });
    await c2.connect(new StreamableHTTPClientTransport(new URL(`${t.baseUrl}/mcp`), { requestInit: { headers: { authorization: `Bearer ${slow.key}` } } }));
    try {
      assert.notEqual((await c2.callTool({ name: 'listModels', arguments: {} })).isError, true);
      const r = await c2.callTool({ name: 'listModels', arguments: {} });
      assert.equal(r.isError, true);
      assert.match(
        (r.content as { text: string }[])[0]?.text ?? '',
        /^Error rate_limit_exceeded \(HTTP 429\): Rate limit exceeded: 3 requests for this API key/,
      );
    } finally {
      await c2.close();
    }
  });

  test('PATCH renames and changes limits (null clears); the list shows spend this month; another account gets 404', async () => {
    const u = await registerUser(t);
    const v = await registerUser(t);
    const k = await key(u, { monthly_credit_limit: 1000, rate_limit_per_minute: 50 });
    const f = await call(t, 'POST', '/v1/forecast', { token: k.key, body: FORECAST });
    assert.equal(f.status, 200);
    const p = await call(t, 'PATCH', `/api/account/keys/${k.id}`, {
      token: u.token,
      body: { label: 'renamed', monthly_credit_limit: null, allowed_models: ['echo-*'] },
    });
    assert.equal(p.status, 200, p.text);
    expectSchema(routeSchema(t, 'PATCH', '/api/account/keys/:key_id'), p.body);
    assert.equal(p.body.label, 'renamed');
    assert.equal(p.body.monthly_credit_limit, null);
    assert.equal(p.body.rate_limit_per_minute, 50, 'absent fields stay');
    assert.deepEqual(p.body.allowed_models, ['echo-*']);
    const list = await call(t, 'GET', '/api/account/keys', { token: u.token });
    expectSchema(routeSchema(t, 'GET', '/api/account/keys'), list.body);
    const usage = await t.deps.database.db.selectFrom('usage_events').select('credits').where('key_id', '=', k.id).execute();
    assert.equal(usage.length, 1);
    assert.ok(Number(usage[0]!.credits) > 0);
    assert.equal(list.body.keys[0].spend_this_month, Number(usage[0]!.credits));
    assert.equal((await call(t, 'PATCH', `/api/account/keys/${k.id}`, { token: v.token, body: { label: 'mine' } })).status, 404);
    assert.equal((await call(t, 'PATCH', '/api/account/keys/key_nope', { token: u.token, body: {} })).status, 404);
    const bad = await call(t, 'PATCH', `/api/account/keys/${k.id}`, { token: u.token, body: { rate_limit_per_minute: 0 } });
    assert.equal(bad.status, 422);
    assert.deepEqual(bad.body.detail[0].loc, ['body', 'rate_limit_per_minute']);
    await key(u, { label: 'taken' });
    assert.equal((await call(t, 'PATCH', `/api/account/keys/${k.id}`, { token: u.token, body: { label: 'taken' } })).status, 409);
  });

  test('PATCH refuses scopes (they cannot change) and unknown fields with a 422 naming the field; nothing changes', async () => {
    const u = await registerUser(t);
    const k = await key(u, { monthly_credit_limit: 1000 });
    const scopes = await call(t, 'PATCH', `/api/account/keys/${k.id}`, { token: u.token, body: { scopes: ['forecast'], label: 'changed' } });
    assert.equal(scopes.status, 422, scopes.text);
    assert.deepEqual(scopes.body.detail[0].loc, ['body', 'scopes']);
    assert.match(scopes.body.detail[0].msg, /Scopes cannot be changed: create a new key/);
    const typo = await call(t, 'PATCH', `/api/account/keys/${k.id}`, { token: u.token, body: { monthly_limit: 5 } });
    assert.equal(typo.status, 422, typo.text);
    assert.deepEqual(typo.body.detail[0].loc, ['body', 'monthly_limit']);
    assert.equal(typo.body.detail[0].type, 'extra_forbidden');
    assert.match(typo.body.detail[0].msg, /Unknown field 'monthly_limit'/);
    const now = (await call(t, 'GET', '/api/account/keys', { token: u.token })).body.keys[0];
    assert.deepEqual([now.label, now.scopes, now.monthly_credit_limit], [k.body.label, k.body.scopes, 1000]);
  });

  test('monthly_credit_limit: concurrent calls cannot pass the last credits; the refusal is 402 key_budget_exceeded', async () => {
    const u = await registerUser(t);
    const probe = await key(u);
    assert.equal((await call(t, 'POST', '/v1/forecast', { token: probe.key, body: FORECAST })).status, 200);
    const price = Number(
      (await t.deps.database.db.selectFrom('usage_events').select('credits').where('key_id', '=', probe.id).executeTakeFirstOrThrow()).credits,
    );
    assert.ok(price > 0);
    const k = await key(u, { monthly_credit_limit: price * 3 });
    const results = await Promise.all(Array.from({ length: 8 }, () => call(t, 'POST', '/v1/forecast', { token: k.key, body: FORECAST })));
    const statuses = results.map((r) => r.status).sort();
    assert.deepEqual(statuses, [200, 200, 200, 402, 402, 402, 402, 402], results.map((r) => r.text).join('\n'));
    const refusal = results.find((r) => r.status === 402)!;
    assert.equal(refusal.body.code, 'key_budget_exceeded');
    assert.match(refusal.body.error, new RegExp(`monthly_credit_limit is ${price * 3} credits`));
    const list = await call(t, 'GET', '/api/account/keys', { token: u.token });
    assert.equal(list.body.keys.find((x: { id: string }) => x.id === k.id).spend_this_month, price * 3);
    // Raising the limit lets the key go on at once.
    await call(t, 'PATCH', `/api/account/keys/${k.id}`, { token: u.token, body: { monthly_credit_limit: price * 4 } });
    assert.equal((await call(t, 'POST', '/v1/forecast', { token: k.key, body: FORECAST })).status, 200);
    assert.equal((await call(t, 'POST', '/v1/forecast', { token: k.key, body: FORECAST })).status, 402);
    // Other keys of the account are not limited by it.
    assert.equal((await call(t, 'POST', '/v1/forecast', { token: probe.key, body: FORECAST })).status, 200);
  });

  test('rate_limit_per_minute: the key gets 429 with retry-after and the rate-limit headers of its own limit', async () => {
    const u = await registerUser(t);
    const k = await key(u, { rate_limit_per_minute: 2 });
    const first = await call(t, 'GET', '/api/account/usage/summary', { token: k.key });
    assert.equal(first.status, 200);
    assert.equal(first.headers['x-ratelimit-limit'], '2');
    assert.equal(first.headers['x-ratelimit-remaining'], '1');
    assert.equal((await call(t, 'GET', '/api/account/usage/summary', { token: k.key })).status, 200);
    const r = await call(t, 'GET', '/api/account/usage/summary', { token: k.key });
    assert.equal(r.status, 429);
    assert.equal(r.body.code, 'rate_limit_exceeded');
    assert.match(r.body.error, /API key/);
    assert.ok(Number(r.headers['retry-after']) >= 1);
    assert.equal(r.headers['x-ratelimit-remaining'], '0');
    // The account's other credentials are not slowed by this key's limit.
    assert.equal((await call(t, 'GET', '/api/account/usage/summary', { token: u.token })).status, 200);
  });
});
