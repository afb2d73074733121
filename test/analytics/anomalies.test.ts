import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { residualScores, robustSigma, zscoreScores } from '../../src/analytics/anomalies.ts';
import { createEngine } from '../../src/engine/engine.ts';
import { call, createTestApp, DB_KIND, expectSchema, registerUser, routeSchema, type TestApp, type TestUser } from '../helpers/app.ts';

describe('zscoreScores and robustSigma', () => {
  test('rolling mean and sd of the previous window, as computed directly; missing values skipped', () => {
    const y = [5, 7, 6, Number.NaN, 8, 9, 30, 7, 8, 6, 7, 100, 7];
    const window = 4;
    const s = zscoreScores(y, window, 3, 2);
    for (let t = 2; t < y.length; t++) {
      const prev = y.slice(Math.max(0, t - window), t).filter((v) => !Number.isNaN(v));
      const mean = prev.reduce((a, b) => a + b, 0) / prev.length;
      const sd = Math.sqrt(prev.reduce((a, b) => a + (b - mean) ** 2, 0) / (prev.length - 1));
      const k = t - 2;
      assert.ok(Math.abs(s.expected[k]! - mean) < 1e-9, `mean at ${t}`);
      assert.ok(Math.abs(s.upper[k]! - (mean + 3 * sd)) < 1e-9, `upper at ${t}`);
      if (Number.isNaN(y[t]!)) assert.ok(Number.isNaN(s.score[k]!) && !s.anomaly[k]);
      else assert.equal(s.anomaly[k], Math.abs(y[t]! - mean) / sd > 3);
    }
    assert.equal(s.anomaly[6 - 2], true, 'the jump to 30');
    assert.equal(s.anomaly[11 - 2], true, 'the jump to 100');
  });

  test('a window with fewer than two values has no prediction; a constant window scores finite', () => {
    const s = zscoreScores([1, 1, 1, 1, 2], 4, 3, 0);
    assert.ok(Number.isNaN(s.expected[0]!) && Number.isNaN(s.expected[1]!));
    assert.equal(s.expected[2], 1);
    assert.ok(Number.isFinite(s.score[4]!) && s.anomaly[4]);
  });

  test('robust sigma ignores a few large residuals; falls back to the RMS when the MAD is 0', () => {
    const r = Array.from({ length: 200 }, (_, i) => Math.sin(i * 12.9898) * 1.0);
    const clean = robustSigma(r);
    assert.ok(Math.abs(robustSigma([...r, 1000, -1000, 500]) - clean) / clean < 0.05);
    assert.equal(robustSigma([0, 0, 0, 0, 3, 4]), Math.sqrt(25 / 6));
    // The RMS of residuals past 1e154 (whose squares overflow) and under 1e-162 (whose squares vanish).
    for (const s of [1e200, 1e-200]) assert.ok(Math.abs(robustSigma([0, 0, 0, 0, 3 * s, 4 * s]) / s - Math.sqrt(25 / 6)) < 1e-12, `${s}`);
    // A MAD of rounding differences (not above the resolution given) is no spread: the RMS answers.
    assert.equal(robustSigma([1, 1 + 1e-15, 1, -2, 1 - 1e-15, 1], 1e-9), robustSigma([1, 1, 1, -2, 1, 1]));
  });

  test('scores do not depend on the units: the same flags and scores at 1e-300 and 1e300, no absolute floor', () => {
    const y = Array.from({ length: 40 }, (_, i) => 10 + (i % 3));
    y[35] = 80;
    const fitted = y.map((_, t) => (t === 0 ? Number.NaN : y[t - 1]!));
    const z1 = zscoreScores(y, 24, 3, 0);
    const r1 = residualScores(y, fitted, 99, 0);
    assert.deepEqual(
      z1.anomaly.flatMap((a, k) => (a ? [k] : [])),
      [35],
    );
    for (const s of [2 ** -1000, 2 ** -60, 2 ** 600, 2 ** 1000]) {
      const z = zscoreScores(
        y.map((v) => v * s),
        24,
        3,
        0,
      );
      const r = residualScores(
        y.map((v) => v * s),
        fitted.map((f) => f * s),
        99,
        0,
      );
      // Powers of two: exactly the same digits, put back in the data's units.
      assert.deepEqual([...z.score], [...z1.score], `zscore at ${s}`);
      assert.deepEqual(
        [...z.upper],
        [...z1.upper].map((u) => u * s),
      );
      assert.deepEqual(z.anomaly, z1.anomaly);
      assert.deepEqual([...r.score], [...r1.score], `residuals at ${s}`);
      assert.deepEqual(
        [...r.lower],
        [...r1.lower].map((u) => u * s),
      );
      assert.deepEqual(r.anomaly, r1.anomaly);
    }
  });
});

describe(`POST /v1/detect-anomalies and add_history (${DB_KIND})`, () => {
  let t: TestApp;
  let u: TestUser;
  before(async () => {
    const engine = createEngine({ poolSize: 2, timeoutMs: 60_000, maxQueue: 256, modelsDir: '/nonexistent', threads: 1 });
    t = await createTestApp({ overrides: { engine }, env: { FORECAST_MAX_OUTPUT_VALUES: '20000' } });
    u = await registerUser(t);
  });
  after(() => t.close());

  const seasonal = Array.from({ length: 96 }, (_, i) => 100 + 10 * Math.sin((2 * Math.PI * i) / 12) + ((i * 7919) % 7) - 3);
  const spiked = seasonal.map((v, i) => (i === 70 ? v + 60 : v));
  const detect = (body: unknown, token: string | undefined = u.token) => call(t, 'POST', '/v1/detect-anomalies', { token, body });
  const balance = async () => (await call(t, 'GET', '/api/account/billing', { token: u.token })).body.free_credits.remaining as number;

  test('forecast method: the spike is flagged, few false alarms, intervals around the fitted values; billed as the fit, one usage event', async () => {
    const before = await balance();
    const r = await detect({ inputs: [{ target: spiked, start: '2020-01-01', item_id: 'x' }], model: 'auto-ets', level: 99, frequency: 'MS' });
    assert.equal(r.status, 200, r.text);
    const body = expectSchema(routeSchema(t, 'POST', '/v1/detect-anomalies'), r.body) as Record<string, any>;
    const out = body.outputs[0];
    assert.equal(out.start_index, 0);
    assert.equal(out.value.length, 96);
    assert.equal(out.timestamps[70], '2025-11-01T00:00:00.000Z');
    assert.deepEqual(out.metadata, { item_id: 'x' });
    assert.equal(out.anomaly[70][0], true);
    // The spike also pulls the fitted seasonal state of its month (the fit is least squares): the same month of
    // other years may be flagged too (docs/analytics.md, limits). Never more than those.
    assert.ok(out.anomaly_count <= 8, `${out.anomaly_count} flagged`);
    for (let k = 0; k < 96; k++) if (out.anomaly[k][0]) assert.equal(k % 12, 70 % 12);
    for (let k = 0; k < 96; k++) {
      if (out.expected[k][0] === null) continue;
      assert.ok(out.lower[k][0] < out.expected[k][0] && out.expected[k][0] < out.upper[k][0]);
      assert.equal(out.anomaly[k][0], out.value[k][0] < out.lower[k][0] || out.value[k][0] > out.upper[k][0]);
    }
    assert.equal(body.method, 'forecast');
    assert.equal(body.model, 'auto-ets');
    assert.equal(before - (await balance()), body.cost_credits);
    const events = await t.deps.database.db
      .selectFrom('usage_events')
      .selectAll()
      .where('user_id', '=', u.id)
      .where('model', '=', 'detect-anomalies')
      .execute();
    assert.equal(events.length, 1);
    // a lower level flags more
    const wide = await detect({ inputs: [{ target: spiked }], model: 'auto-ets', level: 60, frequency: 'MS' });
    assert.ok(wide.body.anomaly_count > out.anomaly_count);
  });

  test('online mode: only the last detection_size points; naive expects the previous value; zscore method', async () => {
    const r = await detect({ inputs: [{ target: spiked }, { target: spiked.map((v) => [v, -v]) }], model: 'naive', detection_size: 30 });
    assert.equal(r.status, 200, r.text);
    const [a, b] = r.body.outputs;
    assert.equal(a.start_index, 66);
    assert.equal(a.value.length, 30);
    assert.equal(a.expected[0][0], spiked[65]);
    assert.equal(a.anomaly[4][0], true, 'step 70');
    assert.equal(b.value[0].length, 2);
    assert.equal(b.anomaly[4][1], true);
    const z = await detect({ inputs: [{ target: spiked }], method: 'zscore', window: 12, sensitivity: 4, detection_size: 40 });
    assert.equal(z.status, 200, z.text);
    assert.equal(z.body.model, null);
    assert.equal(z.body.window, 12);
    assert.equal(z.body.outputs[0].anomaly[70 - 56][0], true);
    const direct = zscoreScores(spiked, 12, 4, 56);
    assert.deepEqual(
      z.body.outputs[0].expected.map((row: number[]) => row[0]),
      [...direct.expected],
    );
    assert.ok(z.body.cost_credits >= 1);
  });

  test('bad input is a documented error, never a 500, and costs nothing', async () => {
    const before = await balance();
    const short = await detect({ inputs: [{ target: [1, 2, 3, null, 5, 6, 7, 8] }] });
    assert.equal(short.status, 422);
    assert.deepEqual(short.body.detail[0].loc, ['body', 'inputs', 0, 'target']);
    const noFits = await detect({ inputs: [{ target: seasonal }], model: 'theta' });
    assert.equal(noFits.status, 422);
    assert.deepEqual(noFits.body.detail[0].loc, ['body', 'model']);
    assert.match(noFits.body.detail[0].msg, /auto-ets/);
    for (const bad of [
      { window: 3 },
      { window: 129 },
      { sensitivity: 1 },
      { sensitivity: 6.5 },
      { level: 100 },
      { level: 0 },
      { method: 'iforest' },
      { detection_size: 0 },
    ]) {
      const r = await detect({ inputs: [{ target: seasonal }], ...bad });
      assert.equal(r.status, 422, JSON.stringify(bad));
    }
    const ragged = await detect({ inputs: [{ target: seasonal.map((v, i) => (i === 5 ? [v, v] : [v])) }], method: 'zscore' });
    assert.equal(ragged.status, 422);
    assert.deepEqual(ragged.body.detail[0].loc, ['body', 'inputs', 0, 'target', 5]);
    const freq = await detect({ inputs: [{ target: seasonal }], frequency: 'fortnight' });
    assert.equal(freq.status, 422);
    const big = await detect({ inputs: Array.from({ length: 40 }, () => ({ target: seasonal })), method: 'zscore' });
    assert.equal(big.status, 413);
    assert.equal((await detect({ inputs: [{ target: seasonal }], model: 'nope' })).status, 404);
    assert.equal((await call(t, 'POST', '/v1/detect-anomalies', { body: { inputs: [{ target: seasonal }] } })).status, 400);
    assert.equal(await balance(), before);
  });

  test('the same flags at every scale (1e-100 to 1e200), numbers wherever a step is scored; an interval past the largest double is 422', async () => {
    const series = (s: number) => {
      const y = Array.from({ length: 40 }, (_, i) => (10 + (i % 3)) * s);
      y[35] = 80 * s;
      return y;
    };
    const schema = routeSchema(t, 'POST', '/v1/detect-anomalies');
    const column = (rows: (number | null)[][]) => rows.map((row) => row[0] ?? null);
    for (const method of [{ model: 'naive' }, { model: 'drift' }, { model: 'auto-ets' }, { method: 'zscore' }]) {
      const ref = await detect({ inputs: [{ target: series(1) }], ...method });
      assert.equal(ref.status, 200, ref.text);
      const flags = column(ref.body.outputs[0].anomaly);
      assert.equal(flags[35], true, `${JSON.stringify(method)} flags the spike`);
      for (const s of [1e-100, 1e-50, 1e-20, 1e-5, 1e10, 1e100, 1e160, 1e200]) {
        const r = await detect({ inputs: [{ target: series(s) }], ...method });
        const what = `${JSON.stringify(method)} at ${s}`;
        assert.equal(r.status, 200, `${what}: ${r.text}`);
        const out = (expectSchema(schema, r.body) as Record<string, any>).outputs[0];
        assert.deepEqual(column(out.anomaly), flags, what);
        for (const key of ['expected', 'lower', 'upper', 'score']) {
          const got = column(out[key]);
          const want = column(ref.body.outputs[0][key]);
          got.forEach((x, k) => {
            // The steps without a prediction are the same; every other one is a number, the reference's times s.
            assert.equal(x === null, want[k] === null, `${what}: ${key}[${k}]`);
            const expected = key === 'score' ? want[k]! : want[k]! * s;
            if (x !== null)
              assert.ok(
                Math.abs(x - expected) <= 1e-6 * (key === 'score' ? Math.max(1, expected) : Math.abs(expected)),
                `${what}: ${key}[${k}] ${x} vs ${expected}`,
              );
          });
        }
      }
    }
    // Values near the largest double whose interval passes it: 422 naming the input, nothing debited.
    const before = await balance();
    const huge = Array.from({ length: 20 }, (_, i) => (i % 2 ? 1.7e308 : -1.7e308));
    for (const method of [{ model: 'naive' }, { method: 'zscore' }]) {
      const r = await detect({ inputs: [{ target: seasonal }, { target: huge }], ...method });
      assert.equal(r.status, 422, r.text);
      assert.deepEqual(r.body.detail[0].loc, ['body', 'inputs', 1, 'target']);
      assert.match(r.body.detail[0].msg, /largest representable number/);
    }
    assert.equal(await balance(), before);
  });

  test('add_history on /v1/forecast: fitted values aligned with the target, billed as output; refused for models without them', async () => {
    const y = [3, 5, 4, 6, 5, 7, 6, 8];
    const plain = await call(t, 'POST', '/v1/forecast', {
      token: u.token,
      body: { model: 'naive', inputs: [{ target: y }], parameters: { prediction_length: 2 } },
    });
    const r = await call(t, 'POST', '/v1/forecast', {
      token: u.token,
      body: { model: 'naive', inputs: [{ target: y }], parameters: { prediction_length: 2, add_history: true } },
    });
    assert.equal(r.status, 200, r.text);
    expectSchema(routeSchema(t, 'POST', '/v1/forecast'), r.body);
    assert.equal(plain.body.outputs[0].fitted_values, undefined);
    assert.deepEqual(r.body.outputs[0].fitted_values, [[null], [3], [5], [4], [6], [5], [7], [6]]);
    assert.equal(r.body.usage.output_tokens, plain.body.usage.output_tokens + 8);
    // context_length 5: the first 3 steps were not seen
    const ctx = await call(t, 'POST', '/v1/forecast', {
      token: u.token,
      body: { model: 'naive', inputs: [{ target: y }], parameters: { prediction_length: 2, add_history: true, context_length: 5 } },
    });
    assert.deepEqual(ctx.body.outputs[0].fitted_values, [[null], [null], [null], [null], [6], [5], [7], [6]]);
    const ets = await call(t, 'POST', '/v1/forecast', {
      token: u.token,
      body: { model: 'auto-ets', inputs: [{ target: seasonal }], parameters: { prediction_length: 2, add_history: true, frequency: 'MS' } },
    });
    assert.equal(ets.status, 200, ets.text);
    const fitted = ets.body.outputs[0].fitted_values.map((row: number[]) => row[0]);
    const mae = fitted.reduce((a: number, f: number, i: number) => a + Math.abs(f - seasonal[i]!), 0) / 96;
    assert.ok(mae < 4, `in-sample MAE ${mae}`);
    const arima = await call(t, 'POST', '/v1/forecast', {
      token: u.token,
      body: { model: 'auto-arima', inputs: [{ target: seasonal }], parameters: { prediction_length: 2, add_history: true, frequency: 'MS' } },
    });
    assert.equal(arima.status, 200, arima.text);
    assert.equal(arima.body.outputs[0].fitted_values.length, 96);
    const theta = await call(t, 'POST', '/v1/forecast', {
      token: u.token,
      body: { model: 'theta', inputs: [{ target: y }], parameters: { prediction_length: 2, add_history: true } },
    });
    assert.equal(theta.status, 422);
    assert.deepEqual(theta.body.detail[0].loc, ['body', 'parameters', 'add_history']);
  });
});
