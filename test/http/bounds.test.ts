import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { creditsFor, priceOf } from '../../src/catalog/pricing.ts';
import {
  forecastTimestamps,
  parseFrequency,
  parseIsoMs,
  parseStart,
  parseTimestampsAhead,
  sliceTimestamps,
  stepTime,
  timesOf,
  timestampsJson,
} from '../../src/forecasting/frequency.ts';
import type { Hold, Meter } from '../../src/forecasting/metering.ts';
import { planForecast, runPlanned } from '../../src/forecasting/service.ts';
import { balanceOf, booksOf, principalFor } from '../billing/helpers.ts';
import type { FakeEngine } from '../helpers/fake-engine.ts';
import { call, createTestApp, DB_KIND, registerUser, type TestApp, type TestUser } from '../helpers/app.ts';

/** Issue #11: no single request can stall, crash or overload the service (everything but the engine pool). */
describe(`request bounds (${DB_KIND})`, () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({ env: { FORECAST_MAX_OUTPUT_VALUES: '100000', AUTH_RATE_LIMIT_PER_MINUTE: '100000' } });
  });
  after(() => t.close());

  const fc = (u: TestUser, body: unknown) => call(t, 'POST', '/v1/forecast', { token: u.token, body });
  const series = (n: number) => Array.from({ length: n }, (_, i) => i % 7);

  test('output values count in the price: horizon × series × (1 + quantile levels + samples)', async () => {
    const u = await registerUser(t);
    const before = await balanceOf(t, u.id);
    const r = await fc(u, {
      model: 'echo-last',
      inputs: [
        {
          target: [
            [1, 2],
            [3, 4],
          ],
        },
      ],
      parameters: { prediction_length: 10, quantile_levels: [0.5], num_samples: 20 },
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.usage.output_tokens, 10 * 2 * (1 + 1 + 20));
    assert.equal(r.body.outputs[0].samples.length, 20);
    assert.equal((t.deps.engine as FakeEngine).tenants.at(-1), u.id, 'the engine shares its threads per account');
    const price = priceOf('echo-last', 'statistical');
    assert.equal(before - (await balanceOf(t, u.id)), creditsFor(price, r.body.usage));
  });

  test('a response over the output cap is 413 request_too_large naming the fields, and nothing is held or debited', async () => {
    const u = await registerUser(t);
    const before = await balanceOf(t, u.id);
    const jobsBefore = (t.deps.engine as FakeEngine).jobs.length;
    const r = await fc(u, { model: 'echo-last', inputs: [{ target: [1, 2, 3] }], parameters: { prediction_length: 1000, num_samples: 100 } });
    assert.equal(r.status, 413, r.text);
    assert.equal(r.body.code, 'request_too_large');
    for (const field of ['prediction_length', 'num_samples', 'quantile_levels', '100000']) assert.match(r.body.error, new RegExp(field));
    assert.equal(await balanceOf(t, u.id), before);
    const books = await booksOf(t, u.id);
    assert.equal(books.events, 0);
    assert.equal((t.deps.engine as FakeEngine).jobs.length, jobsBefore, 'nothing ran');
  });

  test('a batch whose items together pass the cap is refused whole before any hold', async () => {
    const u = await registerUser(t);
    const before = await balanceOf(t, u.id);
    const item = { model: 'echo-last', inputs: [{ target: [1, 2, 3] }], parameters: { prediction_length: 1000, num_samples: 20 } }; // 24,000 numbers each
    const r = await call(t, 'POST', '/v1/forecast/batch', { token: u.token, body: { requests: [item, item, item, item, item] } });
    assert.equal(r.status, 413, r.text);
    assert.equal(r.body.code, 'request_too_large');
    assert.equal(await balanceOf(t, u.id), before);
    const ok = await call(t, 'POST', '/v1/forecast/batch', { token: u.token, body: { requests: [item, item] } });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.body.data.length, 2);
    assert.equal(ok.body.data[1].result.outputs[0].samples.length, 20);
  });

  test('business-day stepping is closed-form: 100000B over a long horizon answers, and matches day-by-day counting', async () => {
    const u = await registerUser(t);
    const r = await fc(u, {
      model: 'echo-last',
      inputs: [{ target: series(10), start: '2024-01-06' }],
      parameters: { prediction_length: 40, frequency: '100000B' },
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.outputs[0].timestamps.length, 40);
    // Against a day-by-day count for small multiples, from every weekday.
    const slow = (d: Date, n: number) => {
      const out = new Date(d.getTime());
      while (out.getUTCDay() === 0 || out.getUTCDay() === 6) out.setUTCDate(out.getUTCDate() + 1);
      for (let left = n; left > 0; ) {
        out.setUTCDate(out.getUTCDate() + 1);
        if (out.getUTCDay() !== 0 && out.getUTCDay() !== 6) left -= 1;
      }
      return out.toISOString();
    };
    const b = parseFrequency('B');
    assert.ok(b);
    for (let s = 0; s < 7; s++) {
      const start = new Date(Date.UTC(2024, 0, 1 + s, 9, 30));
      for (let n = 0; n < 30; n++) assert.equal(stepTime(start, b, n).toISOString(), slow(start, n), `start +${s} days, ${n} steps`);
    }
    const ms = parseFrequency('MS');
    assert.ok(ms);
    assert.deepEqual(forecastTimestamps(new Date('0050-03-01T00:00:00Z'), ms, 0, 2), ['0050-03-01T00:00:00.000Z', '0050-04-01T00:00:00.000Z']);
  });

  test('timestamps read fast are read as parseStart reads them; large arrays are parsed ahead in slices', async () => {
    const samples = [
      '2024-01-31',
      '2024-02-29',
      '2023-02-29',
      '2024-13-01',
      '2024-00-10',
      '0099-05-05',
      '0100-05-05',
      '9999-12-31T23:59:59.999Z',
      '2024-01-31T10:00:00',
      '2024-01-31 10:00:00',
      '2024-01-31T10:00:00Z',
      '2024-01-31T24:00:00Z',
      '2024-01-31T23:60:00Z',
      '2024-01-31T10:00:00.5Z',
      '2024-01-31T10:00:00.123',
      '2024-01-31T10:00:00.123Z',
      '2024-01-31T10:00:00+02:00',
      '2024-01-31T10:00Z',
      '2024-01-31X10:00:00Z',
      '2024-01-31T10:00:00z',
      '2024/01/31',
      '20a4-01-31',
      '2024-01-3a',
      '2024-01-31T1a:00:00Z',
      ' 2024-01-31 ',
      '',
    ];
    for (let k = 0; k < 2000; k++) {
      const ms = Date.UTC(1900, 0, 1) + Math.floor(Math.random() * 250 * 365 * 86_400_000);
      const iso = new Date(ms).toISOString();
      samples.push(iso, iso.slice(0, 19), iso.slice(0, 10), iso.replace('T', ' ').slice(0, 19), iso.slice(0, 20).replace(/.$/, 'Z'));
    }
    for (const text of samples) assert.equal(parseIsoMs(text), parseStart(text)?.getTime() ?? Number.NaN, JSON.stringify(text));
    // A day past its month is no date (Date alone would roll 2024-02-30 over to March 1).
    for (const text of ['2024-02-30', '2023-02-29T00:00:00Z', '2024-04-31 12:00:00', '2024-06-31T00:00:00+02:00']) {
      assert.equal(parseStart(text), null, text);
      assert.ok(Number.isNaN(parseIsoMs(text)), text);
    }
    assert.equal(parseStart('2024-02-29')?.toISOString(), '2024-02-29T00:00:00.000Z');

    const raw = Array.from({ length: 50_000 }, (_, j) => new Date(Date.UTC(2020, 0, 1) + j * 3_600_000).toISOString());
    raw[777] = 'not a date';
    let turns = 0;
    const tick = setInterval(() => turns++, 0);
    await parseTimestampsAhead({ requests: [{ inputs: [{ timestamps: raw }] }] });
    clearInterval(tick);
    assert.ok(turns >= 1, `${turns} turns`);
    const times = timesOf(raw);
    assert.equal(times.length, raw.length);
    assert.ok(Number.isNaN(times[777]));
    assert.equal(times[778], Date.UTC(2020, 0, 1) + 778 * 3_600_000);
    assert.equal(timesOf(raw), times, 'parsed ahead: the same array is returned, not parsed again');
    assert.equal(timesOf(sliceTimestamps(raw, 1000)).length, 1000);
  });

  test('timestamps as JSON text: the same strings as toISOString, written in slices with turns between them', async () => {
    const cases: [string, string, number, number][] = [
      ['2024-01-01T00:00:00Z', 'h', 0, 10_000],
      ['2023-12-31T23:59:59.250Z', '7s', 5, 9000],
      ['1969-12-31T22:00:00Z', '30min', 3, 500],
      ['9999-12-30T00:00:00Z', 'D', 0, 5],
      ['-000100-02-28T12:00:00Z', '2h', 0, 50],
      ['2024-01-05T09:30:00Z', 'B', 2, 300],
      ['2024-01-31T00:00:00Z', 'ME', 0, 40],
      ['2024-03-01T00:00:00Z', 'W', 1, 60],
    ];
    for (const [start, code, observed, horizon] of cases) {
      const freq = parseFrequency(code);
      assert.ok(freq, code);
      const s0 = new Date(start);
      const expected = Array.from({ length: horizon }, (_, h) => stepTime(s0, freq, observed + h).toISOString());
      assert.deepEqual(forecastTimestamps(s0, freq, observed, horizon), expected, `${start} ${code}`);
      let turns = 0;
      const tick = setInterval(() => turns++, 0);
      const raw = await timestampsJson(s0, freq, observed, horizon);
      clearInterval(tick);
      assert.deepEqual(JSON.parse(raw.parts.map((b) => Buffer.from(b).toString('utf8')).join('')), expected, `${start} ${code}`);
      if (horizon >= 9000) assert.ok(raw.parts.length >= 2 && turns >= 1, `${code}: ${raw.parts.length} slices, ${turns} turns`);
    }
    assert.equal(JSON.stringify(await timestampsJson(new Date(0), parseFrequency('h') as never, 0, 0)), '[]');
  });

  test('timestamps past the representable range are 422 at inputs.N.start, never a 500', async () => {
    const u = await registerUser(t);
    for (const frequency of ['100000W', '100000YS', '100000D', '100000Y', '100000QS', '100000B']) {
      const r = await fc(u, {
        model: 'echo-last',
        inputs: [{ target: series(10) }, { target: series(10), start: '2024-01-01' }],
        parameters: { prediction_length: 10000, frequency },
      });
      assert.equal(r.status, 422, `${frequency}: ${r.text}`);
      assert.deepEqual(r.body.detail[0].loc, ['body', 'inputs', 1, 'start'], frequency);
      assert.match(r.body.detail[0].msg, /representable/);
    }
    const late = await fc(u, {
      model: 'echo-last',
      inputs: [{ target: series(10), start: '275760-09-01' }],
      parameters: { prediction_length: 10, frequency: 'D' },
    });
    assert.equal(late.status, 422, late.text);
  });

  test('deeply nested metadata is 422 (no stack overflow) and costs nothing; large metadata too', async () => {
    const u = await registerUser(t);
    const before = await balanceOf(t, u.id);
    const deep = `${'{"a":'.repeat(20_000)}1${'}'.repeat(20_000)}`;
    const raw = `{"model":"echo-last","inputs":[{"target":[1,2,3]}],"metadata":${deep}}`;
    const r = await call(t, 'POST', '/v1/forecast', { token: u.token, raw, headers: { 'content-type': 'application/json' } });
    assert.equal(r.status, 422, r.text.slice(0, 300));
    assert.equal(r.body.detail[0].type, 'too_deep');
    assert.deepEqual(r.body.detail[0].loc.slice(0, 3), ['body', 'metadata', 'a']);
    // Within the request-wide depth but past the metadata bound.
    const nine = JSON.parse(`${'{"a":'.repeat(9)}1${'}'.repeat(9)}`);
    const r2 = await fc(u, { model: 'echo-last', inputs: [{ target: [1, 2, 3], metadata: nine }] });
    assert.equal(r2.status, 422, r2.text);
    assert.equal(r2.body.detail[0].loc[1], 'inputs');
    const big = await fc(u, { model: 'echo-last', inputs: [{ target: [1, 2, 3] }], metadata: { blob: 'x'.repeat(20_000) } });
    assert.equal(big.status, 422, big.text.slice(0, 300));
    assert.deepEqual(big.body.detail[0].loc, ['body', 'metadata']);
    assert.equal(await balanceOf(t, u.id), before);
  });

  test('more than 100 covariate names in a record is 422 too_big at the record, costs nothing; 100 are accepted', async () => {
    const u = await registerUser(t);
    const before = await balanceOf(t, u.id);
    const names = (n: number, value: unknown) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`c${i}`, value]));
    const target = [1, 2, 3];
    for (const [field, value] of [
      ['past_covariates', [1, 2, 3]],
      ['future_covariates', [1]],
      ['static_covariates', 1],
    ] as const) {
      const refused = await fc(u, { model: 'echo-last', inputs: [{ target }, { target, [field]: names(101, value) }], parameters: { prediction_length: 1 } });
      assert.equal(refused.status, 422, refused.text.slice(0, 300));
      assert.deepEqual(refused.body.detail[0].loc, ['body', 'inputs', 1, field]);
      assert.equal(refused.body.detail[0].type, 'too_big');
      assert.equal(refused.body.detail[0].ctx.maximum, 100);
      const ok = await fc(u, { model: 'echo-last', inputs: [{ target, [field]: names(100, value) }], parameters: { prediction_length: 1 } });
      assert.equal(ok.status, 200, ok.text.slice(0, 300));
      assert.equal(ok.body.outputs[0].metadata.covariates_ignored.length, 100);
    }
    // 400,000 names (4.4 MB): the same single issue, found after counting 101 of them.
    const raw = `{"model":"echo-last","inputs":[{"target":[1,2,3],"static_covariates":{${Array.from({ length: 400_000 }, (_, i) => `"n${i}":1`).join(',')}}}]}`;
    const many = await call(t, 'POST', '/v1/forecast', { token: u.token, raw, headers: { 'content-type': 'application/json' } });
    assert.equal(many.status, 422, many.text.slice(0, 300));
    assert.deepEqual(
      many.body.detail.map((d: { loc: unknown[]; type: string }) => [d.loc, d.type]),
      [[['body', 'inputs', 0, 'static_covariates'], 'too_big']],
    );
    const after = await balanceOf(t, u.id);
    assert.equal(before - after, 3 * creditsFor(priceOf('echo-last', 'statistical'), { input_tokens: 3, output_tokens: 3 }));
  });

  test('NUL and lone surrogates are 422 with loc in bodies, keys, path and query parameters', async () => {
    const u = await registerUser(t);
    const cases: { method: 'GET' | 'POST' | 'DELETE'; url: string; raw?: string; loc: (string | number)[] }[] = [
      { method: 'POST', url: '/api/account/keys', raw: '{"label":"a\\u0000b"}', loc: ['body', 'label'] },
      { method: 'POST', url: '/api/account/keys', raw: '{"label":"a\\ud800b"}', loc: ['body', 'label'] },
      { method: 'POST', url: '/api/auth/register', raw: '{"email":"x\\u0000@example.com","password":"correct horse"}', loc: ['body', 'email'] },
      { method: 'POST', url: '/api/contact', raw: '{"name":"n","email":"a@example.com","message":"\\u0000"}', loc: ['body', 'message'] },
      {
        method: 'POST',
        url: '/v1/forecast',
        raw: '{"model":"echo-last","inputs":[{"target":[1,2],"metadata":{"k\\u0000":1}}]}',
        loc: ['body', 'inputs', 0, 'metadata', 'k\u0000'],
      },
      { method: 'DELETE', url: '/api/account/keys/%00', loc: ['path', 'key_id'] },
      { method: 'GET', url: '/api/account/usage?start=%00', loc: ['query', 'start'] },
      { method: 'GET', url: '/api/models?q=a%00', loc: ['query', 'q'] },
    ];
    for (const c of cases) {
      const r = await call(t, c.method, c.url, { token: u.token, ...(c.raw ? { raw: c.raw, headers: { 'content-type': 'application/json' } } : {}) });
      assert.equal(r.status, 422, `${c.method} ${c.url}: ${r.status} ${r.text}`);
      assert.deepEqual(r.body.detail[0].loc, c.loc, `${c.method} ${c.url}`);
      assert.equal(r.body.detail[0].type, 'string_unstorable');
    }
    const form = await t.app.inject({
      method: 'POST',
      url: '/oauth/token',
      payload: 'grant_type=authorization_code&client_id=%00',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    assert.equal(form.statusCode, 400, form.body);
    assert.equal(JSON.parse(form.body).error, 'invalid_request');
  });

  test('a failure after the hold (serialising, debiting) releases it: the call costs nothing', async () => {
    const u = await registerUser(t);
    const principal = await principalFor(t, u.token);
    const before = await balanceOf(t, u.id);
    const plan = planForecast(t.deps, { model: 'echo-last', inputs: [{ target: [1, 2, 3] }] });
    await assert.rejects(
      runPlanned(t.deps, principal, plan, { requestId: 'req_finish_fails', source: 'api' }, () => {
        throw new Error('cannot serialise');
      }),
      /cannot serialise/,
    );
    assert.equal(await balanceOf(t, u.id), before);
    // A commit that fails (e.g. the database is gone) releases too.
    const released: string[] = [];
    const failingMeter: Meter = {
      checkModelAccess: async () => {},
      hold: async (): Promise<Hold> => ({
        commit: async () => {
          throw new Error('debit failed');
        },
        release: async (reason) => {
          released.push(reason);
        },
      }),
    };
    await assert.rejects(
      runPlanned({ ...t.deps, meter: failingMeter }, principal, plan, { requestId: 'req_commit_fails', source: 'api' }, (x) => x),
      /debit failed/,
    );
    assert.deepEqual(released, ['debit failed']);
    const books = await booksOf(t, u.id);
    assert.equal(books.events, 0);
  });
});
