import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { encodedBuffers, encodeForecasts, isEncoded, seriesGroups } from '../../src/engine/encode.ts';
import { createEngine } from '../../src/engine/engine.ts';
import type { Engine, ForecastJob, SeriesForecast } from '../../src/engine/types.ts';
import { runForecast } from '../../src/forecasting/service.ts';
import { principalFor } from '../billing/helpers.ts';
import { call, createTestApp, DB_KIND, registerUser, type TestApp } from '../helpers/app.ts';

const dec = (b: Uint8Array | Uint8Array[]) => (Array.isArray(b) ? b : [b]).map((x) => Buffer.from(x).toString('utf8')).join('');

test('encodeForecasts writes the steps × variates matrices as JSON.stringify would, one group per input', () => {
  const f = (k: number): SeriesForecast => ({
    mean: [k, k + 0.5, Number.NaN],
    quantiles: [
      [k - 1, k - 1, k - 1],
      [k + 1, Number.POSITIVE_INFINITY, k + 1],
    ],
    samples: [[1e21, -0, 1 / 3]],
    info: { k },
  });
  const job: ForecastJob = {
    model: 'm',
    series: [[1], [2], [3]],
    horizon: 3,
    quantileLevels: [0.1, 0.9],
    numSamples: 2,
    seasonLength: null,
    seed: 1,
    groupIds: [0, 0, 1],
  };
  assert.deepEqual(seriesGroups(job), [[0, 1], [2]]);
  const fc = [f(1), f(2), { ...f(3), samples: undefined }];
  const enc = encodeForecasts(job, fc);
  const rows = (cols: number[][]) => JSON.stringify([0, 1, 2].map((t) => cols.map((c) => c[t])));
  assert.equal(enc.groups.length, 2);
  assert.equal(dec(enc.groups[0]!.mean), rows([fc[0]!.mean, fc[1]!.mean]));
  assert.equal(dec(enc.groups[0]!.quantiles[1]!), rows([fc[0]!.quantiles[1]!, fc[1]!.quantiles[1]!]));
  assert.equal(dec(enc.groups[0]!.samples!), `[${rows([fc[0]!.samples![0]!, fc[1]!.samples![0]!])},${rows([fc[0]!.mean, fc[1]!.mean])}]`);
  // A series without samples repeats its mean, as the shaping on the main thread did.
  assert.equal(dec(enc.groups[1]!.samples!), `[${rows([fc[2]!.mean])},${rows([fc[2]!.mean])}]`);
  assert.deepEqual(enc.info, [{ k: 1 }, { k: 2 }, { k: 3 }]);
  // One buffer for the whole answer (a view per matrix), so the main thread frees one allocation, not one per matrix.
  assert.equal(encodedBuffers(enc).length, 1);
});

describe(`a large forecast's numbers are written on the worker thread (${DB_KIND})`, () => {
  let t: TestApp;
  let modelsDir: string;
  const answers: boolean[] = [];
  /** When set, jobs are run as if the engine could not write text (the object path), to compare. */
  let objectsOnly = false;
  before(async () => {
    modelsDir = mkdtempSync(join(tmpdir(), 'encoded-models-'));
    const real = createEngine({ poolSize: 1, timeoutMs: 30_000, maxQueue: 4, modelsDir, threads: 1 });
    // Records whether each answer came back as JSON text.
    const engine: Engine = Object.create(real) as Engine;
    engine.forecast = (async (job: ForecastJob, opts?: Parameters<Engine['forecast']>[1]) => {
      const { encode: _e, ...plainJob } = job as ForecastJob & { encode?: true };
      const out = await real.forecast((objectsOnly ? plainJob : job) as ForecastJob & { encode: true }, opts);
      answers.push(isEncoded(out));
      return out;
    }) as Engine['forecast'];
    t = await createTestApp({ overrides: { engine } });
  });
  after(async () => {
    await t.close();
    rmSync(modelsDir, { recursive: true, force: true });
  });

  test('the REST answer (encoded on the worker) equals the object answer, field for field', async () => {
    const u = await registerUser(t);
    const target = Array.from({ length: 120 }, (_, i) => [i % 11, 100 - (i % 5)]);
    const body = {
      model: 'drift',
      inputs: [{ target, start: '2024-01-01', item_id: 'a' }, { target: target.map((r) => r[0] as number) }],
      parameters: { prediction_length: 2000, frequency: 'D', quantile_levels: [0.9, 0.1], num_samples: 2 },
      metadata: { run: 7 },
    };
    const rest = await call(t, 'POST', '/v1/forecast', { token: u.token, body });
    assert.equal(rest.status, 200, JSON.stringify(rest.body).slice(0, 300));
    assert.deepEqual(answers, [true], 'the worker answered JSON text');
    const principal = await principalFor(t, u.token);
    const plain = await runForecast(t.deps, principal, body as never, { requestId: 'req_plain', source: 'api' });
    assert.deepEqual(answers, [true, false], 'the object path asks for numbers');
    const strip = ({ id: _i, created: _c, latency_ms: _l, ...rest }: Record<string, unknown>) => rest;
    assert.deepEqual(strip(rest.body), strip(JSON.parse(JSON.stringify(plain))));
    assert.equal(rest.body.outputs[0].mean.length, 2000);
    assert.deepEqual(
      rest.body.outputs[0].quantile_predictions.map((q: { level: number }) => q.level),
      [0.9, 0.1],
    );
    assert.ok(rest.body.outputs[0].quantile_predictions[0].values[5][0] >= rest.body.outputs[0].quantile_predictions[1].values[5][0]);
  });

  const strip = (x: unknown): unknown => {
    if (Array.isArray(x)) return x.map(strip);
    if (x === null || typeof x !== 'object') return x;
    return Object.fromEntries(
      Object.entries(x)
        .filter(([k]) => !['id', 'created', 'latency_ms'].includes(k))
        .map(([k, v]) => [k, strip(v)]),
    );
  };
  /** The same call with the worker writing text and on the object path: the answers must be equal. */
  async function bothWays(path: string, body: unknown): Promise<{ written: Record<string, unknown>; encodedAnswers: number }> {
    const u = await registerUser(t);
    answers.length = 0;
    objectsOnly = false;
    const written = await call(t, 'POST', path, { token: u.token, body });
    assert.equal(written.status, 200, JSON.stringify(written.body).slice(0, 300));
    const encodedAnswers = answers.filter(Boolean).length;
    objectsOnly = true;
    const plain = await call(t, 'POST', path, { token: u.token, body });
    objectsOnly = false;
    assert.equal(plain.status, 200);
    assert.deepEqual(strip(written.body), strip(plain.body));
    return { written: written.body, encodedAnswers };
  }

  test("an ensemble's final forecasts are written on the worker (samples picked as text), with the same answer", async () => {
    const target = Array.from({ length: 300 }, (_, i) => 50 + 10 * Math.sin(i / 4) + (i % 3));
    const { written, encodedAnswers } = await bothWays('/v1/forecast/ensemble', {
      inputs: [{ target }],
      models: ['drift', 'seasonal-naive', 'naive'],
      top_n: 2,
      parameters: { prediction_length: 2000, num_samples: 5, frequency: 'h' },
    });
    assert.ok(encodedAnswers >= 3, `${encodedAnswers} answers written as text`);
    const result = written.ensemble_result as { outputs: { samples: number[][][]; mean: number[][] }[] };
    assert.equal(result.outputs[0]!.samples.length, 5);
    assert.equal(result.outputs[0]!.samples[0]!.length, 2000);
    assert.equal(typeof result.outputs[0]!.mean[0]![0], 'number');
  });

  test('cross-validation windows are written on the worker and scored from that text, with the same answer', async () => {
    const target = Array.from({ length: 3000 }, (_, i) => 50 + 10 * Math.sin(i / 4) + (i % 3));
    const { written, encodedAnswers } = await bothWays('/v1/cross-validation', {
      inputs: [{ target }],
      models: ['theta', 'drift'],
      prediction_length: 1000,
      n_windows: 2,
    });
    // theta runs on a worker thread; drift's small jobs may run inline (numbers, no text).
    assert.ok(encodedAnswers >= 2, `${encodedAnswers} answers written as text`);
    const results = written.results as { metrics: { smape: number }; windows: { forecast: { outputs: { mean: number[][] }[] } }[] }[];
    assert.equal(results[0]!.windows[0]!.forecast.outputs[0]!.mean.length, 1000);
    assert.ok(Number.isFinite(results[0]!.metrics.smape));
  });
});
