import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { encodeForecasts, isEncoded, seriesGroups } from '../../src/engine/encode.ts';
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
});

describe(`a large forecast's numbers are written on the worker thread (${DB_KIND})`, () => {
  let t: TestApp;
  let modelsDir: string;
  const answers: boolean[] = [];
  before(async () => {
    modelsDir = mkdtempSync(join(tmpdir(), 'encoded-models-'));
    const real = createEngine({ poolSize: 1, timeoutMs: 30_000, maxQueue: 4, modelsDir, threads: 1 });
    // Records whether each answer came back as JSON text.
    const engine: Engine = Object.create(real) as Engine;
    engine.forecast = (async (job: ForecastJob, opts?: Parameters<Engine['forecast']>[1]) => {
      const out = await real.forecast(job as ForecastJob & { encode: true }, opts);
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
});
