import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { TsfmClient } from '../../sdk/src/client.ts';
import { createKey, registerUser } from '../helpers/app.ts';
import { createListeningApp, type ListeningApp } from '../helpers/listen.ts';

describe('SDK: the analytics operations', () => {
  let t: ListeningApp;
  let client: TsfmClient;
  before(async () => {
    t = await createListeningApp();
    const user = await registerUser(t);
    client = new TsfmClient({ baseUrl: t.baseUrl, apiKey: (await createKey(t, user, 'sdk')).key });
  });
  after(async () => t.close());

  test('crossValidate returns the typed response', async () => {
    const r = await client.crossValidate({ models: ['echo-last'], inputs: [{ target: [1, 2, 3, 4, 5, 6, 7, 8] }], prediction_length: 2, n_windows: 2 });
    assert.equal(r.object, 'cross_validation');
    assert.deepEqual(
      r.windows.map((w) => w.cutoffs),
      [[4], [6]],
    );
    // echo-last repeats the last value: window 1 forecasts 6, 6 for actuals 7, 8
    assert.deepEqual(r.results[0]?.windows[1]?.forecast.outputs[0]?.mean, [[6], [6]]);
  });

  test('detectAnomalies returns the typed response', async () => {
    const target = [5, 6, 5, 6, 5, 6, 5, 6, 5, 6, 50, 6];
    const r = await client.detectAnomalies({ inputs: [{ target }], method: 'zscore', window: 6, sensitivity: 3 });
    assert.equal(r.object, 'anomaly_detection');
    assert.equal(r.outputs[0]?.anomaly[10]?.[0], true);
    assert.equal(r.anomaly_count, 1);
  });

  test('impute returns the typed response', async () => {
    const r = await client.impute({ inputs: [{ target: [1, 2, null, 4] }], method: 'linear' });
    assert.equal(r.object, 'imputation');
    assert.deepEqual(r.outputs[0]?.target, [[1], [2], [3], [4]]);
    assert.deepEqual(
      r.outputs[0]?.filled.map((row) => row[0]),
      [false, false, true, false],
    );
  });
});
