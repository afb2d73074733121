import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { between, blendGap, gapsOf, imputePoints, linearFill } from '../../src/analytics/impute.ts';
import { createEngine } from '../../src/engine/engine.ts';
import type { EngineJob, SeriesForecast } from '../../src/engine/types.ts';
import { FakeEngine } from '../helpers/fake-engine.ts';
import { call, createTestApp, DB_KIND, expectSchema, registerUser, routeSchema, type TestApp, type TestUser } from '../helpers/app.ts';

const N = Number.NaN;

describe('gaps, linear fill and the blend', () => {
  test('gaps are the runs of missing values; linear fill interpolates inside and carries the nearest value at the ends', () => {
    assert.deepEqual(gapsOf([N, 1, N, N, 4, N]), [
      [0, 1],
      [2, 4],
      [5, 6],
    ]);
    assert.deepEqual(linearFill([N, 1, N, N, 4, N]), [1, 1, 2, 3, 4, 4]);
  });
  test('the backcast weight grows across the gap; one side alone is used as is', () => {
    assert.deepEqual(blendGap([3, 3], [6, 6], 2), [4, 5]);
    assert.deepEqual(blendGap(null, [7, 6], 2), [6, 7]);
    assert.deepEqual(blendGap([1, 2, 3], null, 2), [1, 2]);
    assert.equal(blendGap(null, null, 2), null);
  });
  test('interpolation between values of any magnitude and sign stays finite and between them', () => {
    const max = Number.MAX_VALUE;
    assert.deepEqual(linearFill([1e308, N, -1e308]), [1e308, 0, -1e308]);
    assert.deepEqual(linearFill([-max, N, max]), [-max, 0, max]);
    const run = linearFill([-1.7e308, N, N, N, 1.7e308]);
    assert.ok(
      run.every((x, t) => Number.isFinite(x) && (t === 0 || x > run[t - 1]!)),
      `${run}`,
    );
    assert.deepEqual(linearFill([max, N, N, max]), [max, max, max, max]);
    assert.equal(between(1, 4, 1 / 3), 2);
    const blend = blendGap([max, max], [-max, -max], 2)!;
    assert.ok(Math.abs(blend[0]! / max - 1 / 3) < 1e-15 && Math.abs(blend[1]! / max + 1 / 3) < 1e-15, `${blend}`);
  });
});

describe('rate-limit points of an imputation', () => {
  test('the engine jobs it causes: a forward and a backward job per 25 gaps; linear or malformed input is one point', () => {
    const holes = (gaps: number) => Array.from({ length: 2 * gaps + 1 }, (_, i) => (i % 2 ? null : i));
    assert.equal(imputePoints({ inputs: [{ target: [1, 2, 3] }] }), 1);
    assert.equal(imputePoints({ inputs: [{ target: holes(1) }] }), 2);
    assert.equal(imputePoints({ inputs: [{ target: holes(25) }] }), 2);
    assert.equal(imputePoints({ inputs: [{ target: holes(26) }] }), 4);
    assert.equal(imputePoints({ inputs: [{ target: holes(20) }, { target: holes(20) }] }), 4);
    // a run of nulls is one gap; variates count apart
    assert.equal(imputePoints({ inputs: [{ target: [1, null, null, null, 5] }] }), 2);
    assert.equal(imputePoints({ inputs: [{ target: holes(60).map((v) => [v, v]) }] }), 8, '120 gaps: counted up to the 100 a request may hold');
    assert.equal(imputePoints({ inputs: [{ target: holes(60) }], method: 'linear' }), 1);
    for (const junk of [null, 'x', { inputs: 'x' }, { inputs: [null, { target: 3 }] }]) assert.equal(imputePoints(junk), 1);
  });
});

describe(`POST /v1/impute (${DB_KIND})`, () => {
  let t: TestApp;
  let u: TestUser;
  before(async () => {
    const engine = createEngine({ poolSize: 2, timeoutMs: 60_000, maxQueue: 256, modelsDir: '/nonexistent', threads: 1 });
    t = await createTestApp({ overrides: { engine }, env: { FORECAST_MAX_OUTPUT_VALUES: '20000' } });
    u = await registerUser(t);
  });
  after(() => t.close());
  const impute = (body: unknown) => call(t, 'POST', '/v1/impute', { token: u.token, body });
  const balance = async () => (await call(t, 'GET', '/api/account/billing', { token: u.token })).body.free_credits.remaining as number;

  test('naive forward and backward forecasts blended across each gap; flags; one debit equal to cost_credits', async () => {
    const before = await balance();
    const r = await impute({ inputs: [{ target: [1, 2, 3, null, null, 6, 7, 8], item_id: 'a' }], model: 'naive', metadata: { k: 1 } });
    assert.equal(r.status, 200, r.text);
    const body = expectSchema(routeSchema(t, 'POST', '/v1/impute'), r.body) as Record<string, any>;
    // forward naive: 3, 3; backcast naive from 8, 7, 6: 6, 6; weights 1/3 and 2/3 toward the backcast
    assert.deepEqual(
      body.outputs[0].target.map((row: number[]) => row[0]),
      [1, 2, 3, 4, 5, 6, 7, 8],
    );
    assert.deepEqual(
      body.outputs[0].filled.map((row: boolean[]) => row[0]),
      [false, false, false, true, true, false, false, false],
    );
    assert.equal(body.outputs[0].filled_count, 2);
    assert.deepEqual(body.outputs[0].metadata, { item_id: 'a' });
    assert.deepEqual(body.metadata, { k: 1 });
    assert.equal(before - (await balance()), body.cost_credits);
    const events = await t.deps.database.db.selectFrom('usage_events').selectAll().where('user_id', '=', u.id).where('model', '=', 'impute').execute();
    assert.equal(events.length, 1);
  });

  test('a seasonal gap: the model follows the season where linear interpolation cannot; multivariate; edges', async () => {
    const season = Array.from({ length: 72 }, (_, i) => 50 + 20 * Math.sin((2 * Math.PI * i) / 12));
    const holed: (number | null)[] = season.map((v, i) => (i >= 40 && i < 46 ? null : v));
    const r = await impute({ inputs: [{ target: holed }], model: 'seasonal-naive', frequency: 'MS' });
    const lin = await impute({ inputs: [{ target: holed }], method: 'linear' });
    assert.equal(r.status, 200, r.text);
    assert.equal(lin.status, 200, lin.text);
    assert.equal(lin.body.model, null);
    const err = (out: number[][]) => [40, 41, 42, 43, 44, 45].reduce((a, i) => a + Math.abs(out[i]![0]! - season[i]!), 0);
    assert.ok(err(r.body.outputs[0].target) < 1e-9, `model error ${err(r.body.outputs[0].target)}`);
    assert.ok(err(lin.body.outputs[0].target) > 20);
    // leading and trailing nulls, two variates
    const m = await impute({
      inputs: [
        {
          target: [
            [null, 1],
            [2, 2],
            [3, 3],
            [4, null],
            [5, 5],
            [6, 6],
            [7, 7],
            [null, 8],
          ],
        },
      ],
      model: 'drift',
    });
    assert.equal(m.status, 200, m.text);
    const tgt = m.body.outputs[0].target;
    assert.ok(tgt.every((row: number[]) => row.every(Number.isFinite)));
    assert.ok(Math.abs(tgt[7][0] - 8) < 1e-9, 'drift forward from 2..7');
    assert.ok(Math.abs(tgt[0][0] - 1) < 1e-9, 'drift backcast from 7..2');
    assert.ok(Math.abs(tgt[3][1] - 4) < 1e-9);
    assert.equal(m.body.outputs[0].filled_count, 3);
    // nothing to fill: echoed, no model run, still at least one credit
    const none = await impute({ inputs: [{ target: [1, 2, 3] }] });
    assert.equal(none.status, 200);
    assert.equal(none.body.outputs[0].filled_count, 0);
  });

  test('values near the largest double: linear interpolation answers numbers, as its schema says', async () => {
    const r = await impute({
      inputs: [
        { target: [1e308, null, -1e308] },
        {
          target: [
            [-1.7e308, 1],
            [null, null],
            [1.7e308, 3],
          ],
        },
      ],
      method: 'linear',
    });
    assert.equal(r.status, 200, r.text);
    const body = expectSchema(routeSchema(t, 'POST', '/v1/impute'), r.body) as Record<string, any>;
    assert.deepEqual(body.outputs[0].target, [[1e308], [0], [-1e308]]);
    assert.deepEqual(body.outputs[1].target, [
      [-1.7e308, 1],
      [0, 2],
      [1.7e308, 3],
    ]);
  });

  test('rate limit: a model imputation counts its engine jobs, a linear one a single point', async () => {
    const remaining = async () => Number((await call(t, 'GET', '/api/account/me', { token: u.token })).headers['x-ratelimit-remaining']);
    const target = Array.from({ length: 61 }, (_, i) => (i % 2 ? null : i));
    const r0 = await remaining();
    const r = await impute({ inputs: [{ target }], model: 'naive' });
    assert.equal(r.status, 200, r.text);
    const r1 = await remaining();
    assert.equal(r0 - r1, 4 + 1, '30 gaps: two forward and two backward jobs, plus the GET that reads the header');
    assert.equal((await impute({ inputs: [{ target }], method: 'linear' })).status, 200);
    assert.equal(r1 - (await remaining()), 1 + 1);
  });

  test('bad input: a variate without values 422; unknown model 404; too many gaps 413; output cap 413; nothing debited', async () => {
    const before = await balance();
    const empty = await impute({ inputs: [{ target: [null, null] }] });
    assert.equal(empty.status, 422);
    assert.deepEqual(empty.body.detail[0].loc, ['body', 'inputs', 0, 'target']);
    assert.equal((await impute({ inputs: [{ target: [1, null, 3] }], model: 'nope' })).status, 404);
    const ragged = await impute({ inputs: [{ target: [[1, 2], [3], [4, 5]] }], method: 'linear' });
    assert.equal(ragged.status, 422);
    assert.deepEqual(ragged.body.detail[0].loc, ['body', 'inputs', 0, 'target', 1]);
    assert.equal((await impute({ inputs: [{ target: [[1], 2, [3]] }], method: 'linear' })).status, 422);
    const many = Array.from({ length: 1100 }, (_, i) => (i % 2 ? null : i));
    const gaps = await impute({ inputs: [{ target: many }] });
    assert.equal(gaps.status, 413);
    assert.match(gaps.body.error, /550 gaps/);
    const big = await impute({ inputs: Array.from({ length: 20 }, () => ({ target: Array.from({ length: 600 }, (_, i) => i) })), method: 'linear' });
    assert.equal(big.status, 413);
    assert.equal((await impute({ inputs: [{ target: [1, null, 3] }], method: 'spline' })).status, 422);
    assert.equal((await call(t, 'POST', '/v1/impute', { body: { inputs: [{ target: [1, null, 3] }] } })).status, 400);
    assert.equal(await balance(), before);
  });
});

/** A model that answers Infinity: what the guard before the answer is for (the real engine refuses such forecasts itself). */
class InfiniteEngine extends FakeEngine {
  override async forecast(job: EngineJob, opts?: { tenant?: string }): Promise<SeriesForecast[]> {
    return (await super.forecast(job, opts)).map((f) => ({ ...f, mean: f.mean.map(() => Number.POSITIVE_INFINITY) }));
  }
}

describe(`POST /v1/impute: a fill that is not a finite number (${DB_KIND})`, () => {
  let t: TestApp;
  let u: TestUser;
  before(async () => {
    t = await createTestApp({ overrides: { engine: new InfiniteEngine() } });
    u = await registerUser(t);
  });
  after(() => t.close());

  test('is a 422 naming the input, never a null in the target, and costs nothing', async () => {
    const balance = async () => (await call(t, 'GET', '/api/account/billing', { token: u.token })).body.free_credits.remaining as number;
    const before = await balance();
    const r = await call(t, 'POST', '/v1/impute', {
      token: u.token,
      body: { inputs: [{ target: [1, 2, 3] }, { target: [1, 2, null, 4, 5] }], model: 'echo-last' },
    });
    assert.equal(r.status, 422, r.text);
    assert.deepEqual(r.body.detail[0].loc, ['body', 'inputs', 1, 'target']);
    assert.match(r.body.detail[0].msg, /step 2 is not a finite number/);
    assert.equal(await balance(), before);
  });
});
