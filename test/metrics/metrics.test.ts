import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createEngine } from '../../src/engine/engine.ts';
import { call, createKey, createTestApp, DB_KIND, registerUser, type TestApp } from '../helpers/app.ts';

/** Parses the Prometheus text format into `name{labels} value` lines, for exact look-ups. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | null {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const m = /^([^{ ]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(m[3]);
  }
  return null;
}

describe(`GET /metrics (${DB_KIND})`, () => {
  let t: TestApp;
  before(async () => {
    // The real worker pool, so queue wait and run time come from the worker thread.
    const engine = createEngine({ poolSize: 1, timeoutMs: 30_000, maxQueue: 8, modelsDir: '/nonexistent', threads: 1 });
    t = await createTestApp({ overrides: { engine }, env: { RATE_LIMIT_FREE_PER_MINUTE: '6' } });
  });
  after(() => t.close());

  test('requests by route and status, forecasts by model and outcome, inference time, queue wait and depth, credits, refusals', async () => {
    const u = await registerUser(t);
    const { key } = await createKey(t, u);
    const ok = await call(t, 'POST', '/v1/forecast', {
      token: key,
      body: { model: 'naive', inputs: [{ target: [1, 2, 3, 4, 5, 6] }], parameters: { prediction_length: 3 } },
    });
    assert.equal(ok.status, 200, ok.text);
    const bad = await call(t, 'POST', '/v1/forecast', { token: key, body: { model: 'naive', inputs: [] } });
    assert.equal(bad.status, 422);
    // The account's limit is 6 a minute: some of these are refused.
    let refused = 0;
    for (let i = 0; i < 8; i++) if ((await call(t, 'GET', '/api/account/me', { token: key })).status === 429) refused++;
    assert.ok(refused > 0);

    const r = await t.app.inject({ method: 'GET', url: '/metrics' });
    assert.equal(r.statusCode, 200);
    assert.match(String(r.headers['content-type']), /^text\/plain/);
    const m = r.body;
    assert.equal(sample(m, 'tsfm_http_requests_total', { method: 'POST', route: '/v1/forecast', status: '200' }), 1);
    assert.equal(sample(m, 'tsfm_http_requests_total', { method: 'POST', route: '/v1/forecast', status: '422' }), 1);
    assert.equal(sample(m, 'tsfm_http_requests_total', { method: 'GET', route: '/api/account/me', status: '429' }), refused);
    assert.equal(sample(m, 'tsfm_http_request_duration_seconds_count', { method: 'POST', route: '/v1/forecast', status: '200' }), 1);
    assert.equal(sample(m, 'tsfm_forecasts_total', { model: 'naive', outcome: 'ok' }), 1);
    assert.equal(sample(m, 'tsfm_inference_duration_seconds_count', { model: 'naive' }), 1);
    assert.equal(sample(m, 'tsfm_inference_queue_wait_seconds_count', { model: 'naive' }), 1);
    assert.ok((sample(m, 'tsfm_inference_duration_seconds_sum', { model: 'naive' }) ?? -1) >= 0);
    assert.equal(sample(m, 'tsfm_inference_queue_depth', { state: 'running' }), 0);
    assert.equal(sample(m, 'tsfm_inference_queue_depth', { state: 'waiting' }), 0);
    assert.equal(sample(m, 'tsfm_credits_charged_total', { model: 'naive', source: 'api' }), 1);
    assert.equal(sample(m, 'tsfm_rate_limit_refusals_total', { scope: 'account' }), refused);
    // Raw URLs never become labels.
    await t.app.inject({ method: 'GET', url: '/no/such/thing?x=1' });
    const again = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    assert.equal(sample(again, 'tsfm_http_requests_total', { method: 'GET', route: 'unmatched', status: '404' }), 1);
    assert.ok(!again.includes('/no/such/thing'));
  });

  test('without METRICS_TOKEN only loopback clients are answered', async () => {
    const r = await t.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '203.0.113.9' });
    assert.equal(r.statusCode, 403);
    assert.equal(JSON.parse(r.body).code, 'forbidden');
  });
});

describe(`GET /metrics with METRICS_TOKEN (${DB_KIND})`, () => {
  let t: TestApp;
  const token = 'metrics-token-0123456789';
  before(async () => {
    t = await createTestApp({ env: { METRICS_TOKEN: token } });
  });
  after(() => t.close());

  test('needs the bearer token, from any address', async () => {
    const none = await t.app.inject({ method: 'GET', url: '/metrics' });
    assert.equal(none.statusCode, 401);
    const wrong = await t.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer metrics-token-wrong-000000' } });
    assert.equal(wrong.statusCode, 401);
    const good = await t.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '203.0.113.9', headers: { authorization: `Bearer ${token}` } });
    assert.equal(good.statusCode, 200);
    assert.match(good.body, /# TYPE tsfm_http_requests_total counter/);
  });
});

describe('METRICS=off', () => {
  test('there is no /metrics route', async () => {
    const t = await createTestApp({ env: { METRICS: 'off' } });
    try {
      assert.equal((await t.app.inject({ method: 'GET', url: '/metrics' })).statusCode, 404);
    } finally {
      await t.close();
    }
  });
});
