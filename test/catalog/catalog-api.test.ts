import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { call, createTestApp, DB_KIND, expectSchema, registerUser, routeSchema, type TestApp } from '../helpers/app.ts';

describe(`model catalog API (${DB_KIND})`, () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  test('list with the spec record fields, prices and availability; public', async () => {
    const r = await call(t, 'GET', '/api/models');
    assert.equal(r.status, 200);
    expectSchema(routeSchema(t, 'GET', '/api/models'), r.body);
    const ids = r.body.models.map((m: { id: string }) => m.id);
    assert.ok(ids.includes('echo-last'));
    for (const m of r.body.models) {
      for (const f of ['id', 'provider', 'supported_tasks', 'avg_latency_ms', 'context_length', 'max_context_length', 'min_points', 'capabilities']) {
        assert.ok(f in m, f);
      }
      assert.ok(m.pricing.input_credits_per_1k_tokens > 0);
    }
    const missing = r.body.models.find((m: { id: string }) => m.id === 'org/slashed-model');
    assert.equal(missing.available, false);
    assert.equal(missing.pull_command, 'npm run models -- pull org/slashed-model');
  });

  test('filters: q, task, capability, provider, available', async () => {
    const q = await call(t, 'GET', '/api/models?q=SLASHED');
    assert.deepEqual(
      q.body.models.map((m: { id: string }) => m.id),
      ['org/slashed-model'],
    );
    assert.equal((await call(t, 'GET', '/api/models?task=forecast')).body.models.length, 3);
    assert.equal((await call(t, 'GET', '/api/models?task=classify')).body.models.length, 0);
    assert.equal((await call(t, 'GET', '/api/models?capability=samples')).body.models.length, 3);
    assert.equal((await call(t, 'GET', '/api/models?provider=nobody')).body.models.length, 0);
    assert.equal((await call(t, 'GET', '/api/models?available=false')).body.models.length, 1);
    const bad = await call(t, 'GET', '/api/models?available=maybe');
    assert.equal(bad.status, 422);
    assert.deepEqual(bad.body.detail[0].loc, ['query', 'available']);
  });

  test('detail: ids with a slash, raw or encoded; unknown is 404 model_not_found', async () => {
    const a = await call(t, 'GET', '/api/models/org/slashed-model');
    const b = await call(t, 'GET', '/api/models/org%2Fslashed-model');
    assert.equal(a.status, 200);
    assert.deepEqual(a.body, b.body);
    expectSchema(routeSchema(t, 'GET', '/api/models/:modelId'), a.body);
    const nf = await call(t, 'GET', '/api/models/nope');
    assert.equal(nf.status, 404);
    assert.equal(nf.body.code, 'model_not_found');
    assert.equal((await call(t, 'GET', '/api/models/no/pe')).status, 404);
  });

  test('OpenAI-compatible list and detail', async () => {
    const l = await call(t, 'GET', '/v1/models');
    assert.equal(l.body.object, 'list');
    const entry = l.body.data.find((m: { id: string }) => m.id === 'echo-last');
    assert.deepEqual(Object.keys(entry).sort(), ['created', 'id', 'object', 'owned_by']);
    assert.equal(entry.object, 'model');
    const d = await call(t, 'GET', '/v1/models/org/slashed-model');
    assert.equal(d.body.id, 'org/slashed-model');
    assert.equal((await call(t, 'GET', '/v1/models/zzz')).status, 404);
  });

  test('avg_latency_ms is measured from real calls', async () => {
    const u = await registerUser(t);
    const before = (await call(t, 'GET', '/api/models/echo-last')).body;
    assert.equal(before.latency_samples, 0);
    await call(t, 'POST', '/v1/forecast', { token: u.token, body: { model: 'echo-last', inputs: [{ target: [1, 2] }] } });
    const after = (await call(t, 'GET', '/api/models/echo-last')).body;
    assert.equal(after.latency_samples, 1);
    assert.ok(after.avg_latency_ms >= 0);
  });
});
