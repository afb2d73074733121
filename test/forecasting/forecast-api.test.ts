import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { call, createTestApp, DB_KIND, expectSchema, registerUser, routeSchema, type TestApp, type TestUser } from '../helpers/app.ts';
import { FakeEngine } from '../helpers/fake-engine.ts';

/**
 * The HTTP contract of /v1/forecast and the batch, on a test double of the engine so every
 * engine outcome can be produced on demand. Real models are exercised in models.test.ts.
 */
describe(`forecast API contract (${DB_KIND})`, () => {
  let t: TestApp;
  let engine: FakeEngine;
  let u: TestUser;
  before(async () => {
    engine = new FakeEngine();
    t = await createTestApp({ overrides: { engine } });
    u = await registerUser(t);
  });
  after(() => t.close());
  const forecast = (body: unknown, token = u.token) => call(t, 'POST', '/v1/forecast', { token, body });

  test('defaults: prediction_length 24, quantiles [0.1, 0.5, 0.9]; shapes; usage rule; echo of metadata and item_id', async () => {
    engine.behaviour = 'ok';
    const r = await forecast({
      model: 'echo-last',
      inputs: [
        { target: [[1], [2], [null], [4]], metadata: { item_id: 'a', other: 1 } },
        { target: [5, 6, 7], item_id: 'b' },
      ],
      metadata: { trace: 'x' },
    });
    assert.equal(r.status, 200, r.text);
    const body = expectSchema(routeSchema(t, 'POST', '/v1/forecast'), r.body) as Record<string, any>;
    assert.equal(body.object, 'forecast');
    assert.equal(body.model, 'echo-last');
    assert.equal(body.horizon, 24);
    assert.deepEqual(body.quantile_levels, [0.1, 0.5, 0.9]);
    assert.equal(body.outputs.length, 2);
    assert.equal(body.outputs[0].mean.length, 24);
    assert.deepEqual(body.outputs[0].mean[0], [4]);
    assert.deepEqual(body.outputs[1].mean[23], [7]);
    assert.deepEqual(
      body.outputs[0].quantile_predictions.map((q: { level: number }) => q.level),
      [0.1, 0.5, 0.9],
    );
    assert.deepEqual(body.outputs[0].metadata, { item_id: 'a' });
    assert.deepEqual(body.outputs[1].metadata, { item_id: 'b' });
    assert.deepEqual(body.metadata, { trace: 'x' });
    assert.equal(body.outputs[0].samples, null);
    assert.equal(body.outputs[0].timestamps, null);
    // input tokens = observed values read (3 + 3); output tokens = numbers returned:
    // horizon × series × (1 mean + 3 quantile levels) = 24 × 2 × 4
    assert.deepEqual(body.usage, { input_tokens: 6, output_tokens: 192, total_tokens: 198 });
    assert.equal(body.input_points, 6);
    assert.equal(body.truncated_from, null);
    assert.match(body.id, /^fcst_/);
    assert.ok(Math.abs(body.created - Date.now() / 1000) < 60);
    // nulls reach the engine as NaN
    assert.ok(Number.isNaN(engine.jobs.at(-1)?.series[0]?.[2]));
  });

  test('multivariate targets are split per variate and reassembled steps × variates', async () => {
    const r = await forecast({
      model: 'echo-last',
      inputs: [
        {
          target: [
            [1, 10],
            [2, 20],
            [3, 30],
          ],
        },
      ],
      parameters: { prediction_length: 2 },
    });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.outputs[0].mean, [
      [3, 30],
      [3, 30],
    ]);
    assert.equal(engine.jobs.at(-1)?.series.length, 2);
    assert.deepEqual(r.body.usage, { input_tokens: 6, output_tokens: 16, total_tokens: 22 });
  });

  test('forecast timestamps are output tokens: one per step of each input with a start and a frequency, priced and in the answer cap', async () => {
    const body = (start: boolean) => ({
      model: 'echo-last',
      inputs: [{ target: [1, 2, 3], ...(start ? { start: '2024-01-01T00:00:00Z' } : {}) }, { target: [4, 5, 6] }],
      parameters: { prediction_length: 5, frequency: 'min', quantile_levels: [] },
    });
    const dated = await forecast(body(true));
    assert.equal(dated.status, 200, dated.text);
    assert.equal(dated.body.outputs[0].timestamps.length, 5);
    assert.equal(dated.body.outputs[1].timestamps, null);
    // 2 series × 5 steps × 1 mean, plus 5 timestamps of the input with a start
    assert.deepEqual(dated.body.usage, { input_tokens: 6, output_tokens: 15, total_tokens: 21 });
    const plain = await forecast(body(false));
    assert.deepEqual(plain.body.usage, { input_tokens: 6, output_tokens: 10, total_tokens: 16 });
    // The cap counts them too: 15 values do not fit in 12, 10 do.
    const small = await createTestApp({ overrides: { engine }, env: { FORECAST_MAX_OUTPUT_VALUES: '12' } });
    try {
      const v = await registerUser(small);
      const over = await call(small, 'POST', '/v1/forecast', { token: v.token, body: body(true) });
      assert.equal(over.status, 413, over.text);
      assert.equal(over.body.code, 'request_too_large');
      assert.match(over.body.error, /15 values .*5 timestamps/);
      assert.match(over.body.error, /leave out inputs\[\]\.start and timestamps/);
      assert.equal((await call(small, 'POST', '/v1/forecast', { token: v.token, body: body(false) })).status, 200);
    } finally {
      await small.close();
    }
  });

  test('aliases freq and quantiles; requested level order kept; samples; timestamps from start + frequency', async () => {
    const r = await forecast({
      model: 'echo-last',
      inputs: [{ target: [1, 2, 3], start: '2024-01-01T00:00:00Z' }],
      parameters: { prediction_length: 3, freq: 'h', quantiles: [0.9, 0.2], num_samples: 4 },
    });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.quantile_levels, [0.9, 0.2]);
    assert.deepEqual(
      r.body.outputs[0].quantile_predictions.map((q: { level: number }) => q.level),
      [0.9, 0.2],
    );
    assert.deepEqual(engine.jobs.at(-1)?.quantileLevels, [0.2, 0.9]);
    assert.equal(engine.jobs.at(-1)?.seasonLength, 24);
    assert.equal(r.body.outputs[0].samples.length, 4);
    assert.equal(r.body.outputs[0].samples[0].length, 3);
    assert.deepEqual(r.body.outputs[0].timestamps, ['2024-01-01T03:00:00.000Z', '2024-01-01T04:00:00.000Z', '2024-01-01T05:00:00.000Z']);
    const monthly = await forecast({
      model: 'echo-last',
      inputs: [{ target: [1, 2], start: '2023-11-01' }],
      parameters: { prediction_length: 2, frequency: 'MS' },
    });
    assert.deepEqual(monthly.body.outputs[0].timestamps, ['2024-01-01T00:00:00.000Z', '2024-02-01T00:00:00.000Z']);
  });

  test('context_length keeps the most recent points and reports truncated_from', async () => {
    const r = await forecast({
      model: 'echo-last',
      inputs: [{ target: [1, 2, 3, 4, 5, 6] }, { target: [1, 2] }],
      parameters: { context_length: 4, prediction_length: 1 },
    });
    assert.equal(r.status, 200);
    assert.deepEqual(engine.jobs.at(-1)?.series[0], [3, 4, 5, 6]);
    assert.equal(r.body.truncated_from, 6);
    assert.equal(r.body.outputs[0].metadata.truncated_from, 6);
    assert.equal(r.body.input_points, 6);
  });

  test('validation: quantiles strictly inside (0, 1), prediction_length >= 1, num_samples >= 1, unknown frequency, bad start, ragged target', async () => {
    const cases: [unknown, (string | number)[]][] = [
      [{ model: 'echo-last', inputs: [{ target: [1] }], parameters: { quantile_levels: [0, 0.5] } }, ['body', 'parameters', 'quantile_levels', 0]],
      [{ model: 'echo-last', inputs: [{ target: [1] }], parameters: { quantile_levels: [0.5, 1] } }, ['body', 'parameters', 'quantile_levels', 1]],
      [{ model: 'echo-last', inputs: [{ target: [1] }], parameters: { prediction_length: 0 } }, ['body', 'parameters', 'prediction_length']],
      [{ model: 'echo-last', inputs: [{ target: [1] }], parameters: { num_samples: 0 } }, ['body', 'parameters', 'num_samples']],
      [{ model: 'echo-last', inputs: [{ target: [1] }], parameters: { frequency: 'fortnightly' } }, ['body', 'parameters', 'frequency']],
      [{ model: 'echo-last', inputs: [{ target: [1] }], parameters: { freq: 'zz' } }, ['body', 'parameters', 'freq']],
      [{ model: 'echo-last', inputs: [{ target: [1], start: 'yesterday' }] }, ['body', 'inputs', 0, 'start']],
      [{ model: 'echo-last', inputs: [{ target: [1] }, { target: [[1, 2], [3]] }] }, ['body', 'inputs', 1, 'target', 1]],
      [{ model: 'echo-last', inputs: [{ target: [[1], 2] }] }, ['body', 'inputs', 0, 'target']],
      [{ model: 'echo-last', inputs: [{ target: ['a'] }] }, ['body', 'inputs', 0, 'target', 0]],
      [{ model: 'echo-last', inputs: [{}] }, ['body', 'inputs', 0, 'target']],
      [{ model: 'echo-last', inputs: [] }, ['body', 'inputs']],
      [{ inputs: [{ target: [1] }] }, ['body', 'model']],
      [{ model: 'echo-last', inputs: [{ target: [1] }], parameters: { quantile_levels: [0.5, 0.5] } }, ['body', 'parameters', 'quantile_levels']],
    ];
    for (const [body, loc] of cases) {
      const r = await forecast(body);
      assert.equal(r.status, 422, `${JSON.stringify(body)} → ${r.text}`);
      assert.ok(
        r.body.detail.some((d: { loc: unknown[] }) => JSON.stringify(d.loc) === JSON.stringify(loc)),
        `${JSON.stringify(body)}: expected loc ${JSON.stringify(loc)}, got ${JSON.stringify(r.body.detail)}`,
      );
    }
  });

  test('too few points names the input index and min_points; horizon beyond the model maximum is 422', async () => {
    const r = await forecast({ model: 'echo-short', inputs: [{ target: [1, 2, 3] }, { target: [1, null, 2] }], parameters: { prediction_length: 2 } });
    assert.equal(r.status, 422);
    assert.deepEqual(r.body.detail[0].loc, ['body', 'inputs', 1, 'target']);
    assert.match(r.body.detail[0].msg, /inputs\[1\].*min_points=3/);
    const h = await forecast({ model: 'echo-short', inputs: [{ target: [1, 2, 3] }], parameters: { prediction_length: 6 } });
    assert.equal(h.status, 422);
    assert.deepEqual(h.body.detail[0].loc, ['body', 'parameters', 'prediction_length']);
  });

  test('covariates: validated against context and horizon, and reported as ignored', async () => {
    const ok = await forecast({
      model: 'echo-last',
      inputs: [{ target: [1, 2, 3], past_covariates: { temp: [1, null, 3] }, future_covariates: { promo: [0, 1] }, static_covariates: { store: 4 } }],
      parameters: { prediction_length: 2 },
    });
    assert.equal(ok.status, 200, ok.text);
    assert.deepEqual(ok.body.outputs[0].metadata.covariates_ignored, ['temp', 'promo', 'store']);
    const bad = await forecast({
      model: 'echo-last',
      inputs: [{ target: [1, 2, 3], past_covariates: { temp: [1] }, future_covariates: { promo: [0] } }],
      parameters: { prediction_length: 2 },
    });
    assert.equal(bad.status, 422);
    const locs = bad.body.detail.map((d: { loc: unknown[] }) => d.loc.join('.'));
    assert.deepEqual(locs, ['body.inputs.0.past_covariates.temp', 'body.inputs.0.future_covariates.promo']);
  });

  test('unknown model 404 model_not_found; a model whose weights are missing is 409 model_not_installed with the pull command (not a 5xx a client retries)', async () => {
    const r = await forecast({ model: 'nope', inputs: [{ target: [1] }] });
    assert.equal(r.status, 404);
    assert.equal(r.body.code, 'model_not_found');
    const u2 = await forecast({ model: 'org/slashed-model', inputs: [{ target: [1] }] });
    assert.equal(u2.status, 409);
    assert.equal(u2.body.code, 'model_not_installed');
    assert.match(u2.body.error, /npm run models -- pull org\/slashed-model/);
  });

  test("engine outcomes map to the documented errors: timeout 504, busy 503, over the account's queue share 429, failure 502, bad input 422", async () => {
    const expected: [FakeEngine['behaviour'], number, string][] = [
      ['timeout', 504, 'upstream_timeout'],
      ['busy', 503, 'upstream_unavailable'],
      ['failed', 502, 'upstream_empty'],
    ];
    try {
      for (const [behaviour, status, code] of expected) {
        engine.behaviour = behaviour;
        const r = await forecast({ model: 'echo-last', inputs: [{ target: [1, 2] }] });
        assert.equal(r.status, status, behaviour);
        assert.equal(r.body.code, code);
      }
      // The account's share of the engine queue is full (others are still admitted): its own rate, 429 with retry-after.
      engine.behaviour = 'share_exceeded';
      const over = await forecast({ model: 'echo-last', inputs: [{ target: [1, 2] }] });
      assert.equal(over.status, 429);
      assert.equal(over.body.code, 'rate_limit_exceeded');
      assert.match(over.body.error, /INFERENCE_ACCOUNT_QUEUE/);
      assert.equal(over.headers['retry-after'], '5');
      engine.behaviour = 'bad_input';
      const r = await forecast({ model: 'echo-last', inputs: [{ target: [1, 2] }] });
      assert.equal(r.status, 422);
      assert.deepEqual(r.body.detail[0].loc, ['body', 'inputs', 0, 'target']);
    } finally {
      engine.behaviour = 'ok';
    }
  });

  test('limits: too many inputs or too long a series is 413 request_too_large', async () => {
    const many = await forecast({ model: 'echo-last', inputs: Array.from({ length: 1001 }, () => ({ target: [1] })) });
    assert.equal(many.status, 413);
    assert.equal(many.body.code, 'request_too_large');
    const long = await forecast({ model: 'echo-last', inputs: [{ target: new Array(100_001).fill(1) }] });
    assert.equal(long.status, 413);
  });

  test('forecast routes need a credential', async () => {
    assert.equal((await call(t, 'POST', '/v1/forecast', { body: { model: 'echo-last', inputs: [{ target: [1] }] } })).status, 400);
    assert.equal((await call(t, 'POST', '/v1/forecast', { token: 'tsfm_bad', body: { model: 'echo-last', inputs: [{ target: [1] }] } })).status, 401);
    assert.equal((await call(t, 'POST', '/v1/forecast/batch', { body: { requests: [] } })).status, 400);
  });

  test('batch: results in request order, each item on its own; one bad item never fails the others', async () => {
    const r = await call(t, 'POST', '/v1/forecast/batch', {
      token: u.token,
      body: {
        requests: [
          { model: 'echo-last', inputs: [{ target: [1, 2] }], parameters: { prediction_length: 2 } },
          { model: 'nope', inputs: [{ target: [1] }] },
          { model: 'echo-last', inputs: [{ target: [1] }], parameters: { quantile_levels: [2] } },
          'not even an object',
          { model: 'echo-last', inputs: [{ target: [7] }], parameters: { prediction_length: 1 } },
        ],
      },
    });
    assert.equal(r.status, 200, r.text);
    expectSchema(routeSchema(t, 'POST', '/v1/forecast/batch'), r.body);
    assert.equal(r.body.object, 'list');
    assert.deepEqual(
      r.body.data.map((d: { ok: boolean }) => d.ok),
      [true, false, false, false, true],
    );
    assert.deepEqual(r.body.data[0].result.outputs[0].mean, [[2], [2]]);
    assert.equal(r.body.data[1].error.code, 'model_not_found');
    assert.equal(r.body.data[1].error.status, 404);
    assert.equal(r.body.data[2].error.code, 'validation_error');
    assert.deepEqual(r.body.data[2].error.detail[0].loc, ['body', 'parameters', 'quantile_levels', 0]);
    assert.equal(r.body.data[3].error.status, 422);
    assert.deepEqual(r.body.data[4].result.outputs[0].mean, [[7]]);
  });

  test('batch: at most 64 requests (413), at least one (422)', async () => {
    const req = { model: 'echo-last', inputs: [{ target: [1] }], parameters: { prediction_length: 1 } };
    const ok = await call(t, 'POST', '/v1/forecast/batch', { token: u.token, body: { requests: new Array(64).fill(req) } });
    assert.equal(ok.status, 200);
    assert.equal(ok.body.data.length, 64);
    const big = await call(t, 'POST', '/v1/forecast/batch', { token: u.token, body: { requests: new Array(65).fill(req) } });
    assert.equal(big.status, 413);
    assert.equal(big.body.code, 'request_too_large');
    assert.equal((await call(t, 'POST', '/v1/forecast/batch', { token: u.token, body: { requests: [] } })).status, 422);
  });
});
