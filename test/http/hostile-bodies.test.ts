import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { call, createKey, createTestApp, DB_KIND, registerUser, type TestApp, type TestUser } from '../helpers/app.ts';
import { createListeningApp, type ListeningApp } from '../helpers/listen.ts';

/**
 * Hostile inputs to the operations merged with the sliced parser, the fast target check and the
 * analytics and ingest endpoints: each gets a 4xx in the documented shape, never a 5xx.
 */
describe(`hostile bodies (${DB_KIND})`, () => {
  let t: TestApp;
  let u: TestUser;
  before(async () => {
    t = await createTestApp();
    u = await registerUser(t);
  });
  after(() => t.close());

  test('an ingest whose two rows are millennia apart is refused as too long before any gap is filled', async () => {
    // Two rows, 40 bytes: at a fixed frequency the gap was filled with nulls first and measured
    // after (5 billion minutes: gigabytes and seconds on the event loop, then a 500).
    const text = 'ds,y\n0001-01-01,1\n9999-12-31,2\n';
    for (const frequency of ['s', 'min', 'h', 'D', 'MS']) {
      const r = await call(t, 'POST', '/v1/series/ingest', { token: u.token, body: { text, frequency } });
      assert.equal(r.status, 413, `${frequency}: ${r.text.slice(0, 300)}`);
      assert.equal(r.body.code, 'request_too_large', frequency);
      assert.match(r.body.error, /longer than 100000 steps/, frequency);
    }
    // The same rows close enough together are filled as before.
    const near = await call(t, 'POST', '/v1/series/ingest', {
      token: u.token,
      body: { text: 'ds,y\n2024-01-01,1\n2024-01-01T00:05:00Z,2\n', frequency: 'min' },
    });
    assert.equal(near.status, 200, near.text);
    assert.deepEqual(near.body.inputs[0].target, [1, null, null, null, null, 2]);
  });

  test('a NUL in a CSV upload, a JSON body, a query or a path is a 422 naming its place, with the request id like every error', async () => {
    const cases = [
      ['POST', '/v1/series/ingest', { raw: 'ds,y\n2024-01-01,1\u0000\n', headers: { 'content-type': 'text/csv' } }, ['body', 'text']],
      ['POST', '/v1/forecast', { body: { model: 'a\u0000', inputs: [] } }, ['body', 'model']],
      ['GET', '/api/account/usage?start=a%00', {}, ['query', 'start']],
      ['GET', '/api/models/a%00', {}, ['path', 'modelId']],
    ] as const;
    for (const [method, url, opts, loc] of cases) {
      const r = await call(t, method, url, { token: u.token, ...opts, headers: { ...('headers' in opts ? opts.headers : {}), 'x-request-id': 'nul-1' } });
      assert.equal(r.status, 422, `${url}: ${r.text}`);
      assert.deepEqual(r.body.detail[0].loc, loc, url);
      assert.equal(r.body.detail[0].type, 'string_unstorable', url);
      assert.equal(r.body.request_id, 'nul-1', url);
    }
  });

  test('detect-anomalies refuses a start and frequency whose timestamps run past the dates a Date holds, and a start that is no date, as forecasts do', async () => {
    const target = Array.from({ length: 30 }, (_, i) => i % 5);
    for (const method of ['zscore', 'forecast']) {
      const far = await call(t, 'POST', '/v1/detect-anomalies', {
        token: u.token,
        body: { method, model: 'echo-last', window: 4, inputs: [{ target, start: '2024-01-01' }], frequency: '100000YS' },
      });
      assert.equal(far.status, 422, `${method}: ${far.text.slice(0, 300)}`);
      assert.deepEqual(far.body.detail[0].loc, ['body', 'inputs', 0, 'start'], method);
      assert.match(far.body.detail[0].msg, /representable range of dates/);
    }
    const notADate = await call(t, 'POST', '/v1/detect-anomalies', {
      token: u.token,
      body: { method: 'zscore', window: 4, inputs: [{ target, start: 'x' }], frequency: 'D' },
    });
    assert.equal(notADate.status, 422, notADate.text.slice(0, 300));
    assert.deepEqual(notADate.body.detail[0].loc, ['body', 'inputs', 0, 'start']);
    const fine = await call(t, 'POST', '/v1/detect-anomalies', {
      token: u.token,
      body: { method: 'zscore', window: 4, inputs: [{ target, start: '2024-01-01' }], frequency: 'D' },
    });
    assert.equal(fine.status, 200, fine.text.slice(0, 300));
    assert.equal(fine.body.outputs[0].timestamps.at(-1), '2024-01-30T00:00:00.000Z');
  });

  test('a schedule whose forecast or ingest frequency is no frequency code is refused when created or updated, not failed at every run', async () => {
    const base = {
      name: 'x',
      model: 'echo-last',
      cron_expression: '0 6 * * *',
      source_url: 'https://example.com/a.csv',
      callback_url: 'https://example.com/cb',
    };
    const cases: [Record<string, unknown>, string[]][] = [
      [{ parameters: { frequency: '1e9D' } }, ['body', 'parameters', 'frequency']],
      [{ parameters: { freq: 'fortnightly' } }, ['body', 'parameters', 'freq']],
      [{ ingest: { frequency: '1e9D' } }, ['body', 'ingest', 'frequency']],
    ];
    for (const [extra, loc] of cases) {
      const r = await call(t, 'POST', '/v1/schedules', { token: u.token, body: { ...base, ...extra } });
      assert.equal(r.status, 422, `${JSON.stringify(extra)}: ${r.text.slice(0, 300)}`);
      assert.deepEqual(r.body.detail[0].loc, loc);
      assert.match(r.body.detail[0].msg, /Unknown frequency/);
    }
    const ok = await call(t, 'POST', '/v1/schedules', { token: u.token, body: { ...base, parameters: { frequency: '15min' }, ingest: { frequency: 'h' } } });
    assert.equal(ok.status, 200, ok.text.slice(0, 300));
    for (const [extra, loc] of cases) {
      const r = await call(t, 'PATCH', `/v1/schedules/${ok.body.id}`, { token: u.token, body: extra });
      assert.equal(r.status, 422, `update ${JSON.stringify(extra)}: ${r.text.slice(0, 300)}`);
      assert.deepEqual(r.body.detail[0].loc, loc);
    }
  });

  test('static covariates with more names than a call takes arguments are a 422 at the record, not a 500 (a spread into push)', async () => {
    const names = 150_000;
    const text = `{"model":"echo-last","inputs":[{"target":[1,2,3],"static_covariates":{${Array.from({ length: names }, (_, i) => `"s${i}":1`).join(',')}}}],"parameters":{"prediction_length":1}}`;
    const r = await call(t, 'POST', '/v1/forecast', { token: u.token, raw: text, headers: { 'content-type': 'application/json' } });
    assert.equal(r.status, 422, r.text.slice(0, 300));
    assert.deepEqual(r.body.detail[0].loc, ['body', 'inputs', 0, 'static_covariates']);
    assert.equal(r.body.detail[0].type, 'too_big');
  });

  test('a large body (sliced parser, fast target check) answers as the same body made small: status, code, error locations', async () => {
    // Targets of 95,000 values (570 KB, over the 64 KiB from which bodies are parsed in slices) and of 50.
    const values = (k: number) => Array.from({ length: k }, (_, i) => (i % 7) + 0.125).join(',');
    const body = (g: string) => [
      ['valid', `{"model":"echo-last","inputs":[{"target":[${g}]}]}`],
      ['bad first', `{"model":"echo-last","inputs":[{"target":["x",${g}]}]}`],
      ['bad last', `{"model":"echo-last","inputs":[{"target":[${g},true]}]}`],
      ['object in target', `{"model":"echo-last","inputs":[{"target":[${g},{"a":1}]}]}`],
      ['1e400', `{"model":"echo-last","inputs":[{"target":[${g},1e400]}]}`],
      ['-0 and 1e-400', `{"model":"echo-last","inputs":[{"target":[-0,1e-400,${g}]}]}`],
      ['NaN literal', `{"model":"echo-last","inputs":[{"target":[${g},NaN]}]}`],
      ['scalar among steps', `{"model":"echo-last","inputs":[{"target":[[1],2,${g}]}]}`],
      ['duplicate key', `{"model":"echo-last","inputs":[{"target":[1,"x"],"target":[${g}]}]}`],
      ['NUL escape in a key', `{"model":"echo-last","inputs":[{"target":[${g}],"a\\u0000":1}]}`],
      ['lone surrogate', `{"model":"\\ud800","inputs":[{"target":[${g}]}]}`],
      ['constructor.prototype', `{"model":"echo-last","inputs":[{"target":[${g}],"metadata":{"constructor":{"prototype":{"a":1}}}}]}`],
      ['BOM', `\ufeff{"model":"echo-last","inputs":[{"target":[${g}]}]}`],
      ['trailing garbage', `{"model":"echo-last","inputs":[{"target":[${g}]}]}x`],
      ['two documents', `{"model":"echo-last","inputs":[{"target":[${g}]}]}{}`],
      ['truncated', `{"model":"echo-last","inputs":[{"target":[${g}]}]`],
      ['nested 40 deep', `{"model":"echo-last","inputs":[{"target":[${g}]}],"metadata":{"a":${'['.repeat(40)}${']'.repeat(40)}}}`],
    ];
    const big = body(values(95_000));
    const small = body(values(50));
    const answer = async (text: string) => {
      const r = await call(t, 'POST', '/v1/forecast', { token: u.token, raw: text, headers: { 'content-type': 'application/json' } });
      const loc = r.body?.detail?.[0]?.loc?.map((x: unknown) => (x === 95_000 + 2 || x === 50 + 2 ? 'end' : x === 95_000 || x === 50 ? 'last' : x));
      return { status: r.status, code: r.body?.code ?? r.body?.detail?.[0]?.type, loc };
    };
    for (let i = 0; i < big.length; i++) {
      const [name, text] = big[i] as [string, string];
      assert.ok(text.length >= 512 * 1024, name);
      const a = await answer(text);
      const b = await answer((small[i] as [string, string])[1]);
      assert.ok(a.status < 500, `${name}: ${a.status}`);
      assert.deepEqual(a, b, name);
    }
  });
});

describe(`hostile tool arguments over MCP (${DB_KIND})`, () => {
  let t: ListeningApp;
  let client: Client;
  before(async () => {
    t = await createListeningApp();
    const u = await registerUser(t);
    const key = (await createKey(t, u, 'mcp')).key;
    client = new Client({ name: 'hostile', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${t.baseUrl}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
  });
  after(async () => {
    await client.close();
    await t.close();
  });

  test('the same inputs through the SDK client are tool errors with their 4xx, not internal errors', async () => {
    const text = (r: unknown) => JSON.stringify((r as { content: unknown }).content);
    const ingest = (await client.callTool({ name: 'ingestSeries', arguments: { text: 'ds,y\n0001-01-01,1\n9999-12-31,2\n', frequency: 'min' } })) as {
      isError?: boolean;
    };
    assert.equal(ingest.isError, true);
    assert.match(text(ingest), /request_too_large \(HTTP 413\)/);
    const target = Array.from({ length: 30 }, (_, i) => i % 5);
    const anomalies = (await client.callTool({
      name: 'detectAnomalies',
      arguments: { method: 'zscore', window: 4, inputs: [{ target, start: '2024-01-01' }], frequency: '100000YS' },
    })) as { isError?: boolean };
    assert.equal(anomalies.isError, true);
    assert.match(text(anomalies), /HTTP 422/);
    assert.doesNotMatch(text(anomalies), /internal_error/);
  });
});
