import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { SeriesIngestResponse } from '../../src/series/schemas.ts';
import { call, createTestApp, DB_KIND, expectSchema, registerUser, type TestApp, type TestUser } from '../helpers/app.ts';

const ingest = (t: TestApp, u: TestUser, body: unknown) => call(t, 'POST', '/v1/series/ingest', { token: u.token, body });

/** 20 series of 3 rows at t0, t0 + 1 min and t0 + 99,999 min: 2 KB of text that were a 10 MB answer of nulls at frequency min. */
const SPARSE = `unique_id,ds,y\n${Array.from({ length: 20 }, (_, i) =>
  [0, 1, 99_999].map((m) => `s${i},${new Date(Date.UTC(2024, 0, 1) + m * 60_000).toISOString()},${m}`).join('\n'),
).join('\n')}\n`;

describe(`POST /v1/series/ingest (${DB_KIND})`, () => {
  let t: TestApp;
  let u: TestUser;
  let server: Server;
  let base = '';
  let hits = 0;
  before(async () => {
    t = await createTestApp({ env: { OUTBOUND_ALLOW_HTTP: 'true', OUTBOUND_ALLOW_LOOPBACK: 'true', INGEST_MAX_ROWS: '1000' } });
    u = await registerUser(t);
    server = createServer((req, res) => {
      hits += 1;
      if (req.url === '/data.csv') {
        res.writeHead(200, { 'content-type': 'text/csv' });
        res.end('date,sales\n2024-01-01,10\n2024-02-01,12\n2024-03-01,11\n');
      } else if (req.url === '/sparse.csv') {
        res.writeHead(200, { 'content-type': 'text/csv' });
        res.end(SPARSE);
      } else if (req.url === '/page.html') {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end('<html></html>');
      } else {
        res.writeHead(404);
        res.end();
      }
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server.close();
    await t.close();
  });

  it('reads long format unique_id, ds, y: one input per series, frequency and gaps', async () => {
    const text = 'unique_id,ds,y\na,2024-01-01,1\na,2024-01-02,2\na,2024-01-04,4\nb,2024-01-01,7\nb,2024-01-02,\nb,2024-01-03,9\n';
    const r = await ingest(t, u, { text });
    assert.equal(r.status, 200, r.text);
    const body = expectSchema(SeriesIngestResponse, r.body);
    assert.deepEqual(body.columns, { time: 'ds', value: ['y'], id: 'unique_id', ignored: [] });
    assert.equal(body.frequency, 'D');
    assert.equal(body.format, 'csv');
    assert.deepEqual(body.inputs, [
      { target: [1, 2, null, 4], start: '2024-01-01T00:00:00.000Z', item_id: 'a' },
      { target: [7, null, 9], start: '2024-01-01T00:00:00.000Z', item_id: 'b' },
    ]);
    assert.deepEqual(body.gaps, [{ unique_id: 'a', after: '2024-01-02T00:00:00.000Z', missing: 1 }]);
    assert.equal(body.series[1]?.missing, 1);
  });

  it('the output feeds POST /v1/forecast as it is', async () => {
    const r = await ingest(t, u, { text: 'ds,y\n2024-01-01,1\n2024-01-02,2\n2024-01-03,3\n' });
    const f = await call(t, 'POST', '/v1/forecast', {
      token: u.token,
      body: { model: 'echo-last', inputs: r.body.inputs, parameters: { prediction_length: 2, frequency: r.body.frequency } },
    });
    assert.equal(f.status, 200, f.text);
    assert.deepEqual(f.body.outputs[0].timestamps, ['2024-01-04T00:00:00.000Z', '2024-01-05T00:00:00.000Z']);
  });

  it('wide format: one series per numeric column; month starts detected; TSV and semicolons', async () => {
    const r = await ingest(t, u, { text: 'month\tnorth\tsouth\n2024-01\t1\t2\n2024-02\t3\t4\n2024-03\t5\t6\n' });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.format, 'tsv');
    assert.equal(r.body.frequency, 'MS');
    assert.deepEqual(
      r.body.inputs.map((i: any) => [i.item_id, i.target]),
      [
        ['north', [1, 3, 5]],
        ['south', [2, 4, 6]],
      ],
    );
    const semi = await ingest(t, u, { text: 'ds;y\n2024-01-01T00:00:00Z;1,5\n2024-01-01T01:00:00Z;2\n' });
    // 1,5 is not a number in this service (decimal point only): the error names the line.
    assert.equal(semi.status, 422);
    assert.match(semi.body.detail[0].msg, /line 2, column 'y': '1,5' is not a number/);
  });

  it('JSON records and JSON columns', async () => {
    const recs = await ingest(t, u, {
      text: JSON.stringify([
        { ds: '2024-01-01T00:00:00Z', y: 1 },
        { ds: '2024-01-01T01:00:00Z', y: 2 },
      ]),
    });
    assert.equal(recs.status, 200, recs.text);
    assert.equal(recs.body.frequency, 'h');
    const cols = await ingest(t, u, { text: JSON.stringify({ timestamp: ['2024-01-05', '2024-01-12', '2024-01-19'], value: [1, 2, null] }) });
    assert.equal(cols.status, 200, cols.text);
    assert.equal(cols.body.frequency, 'W');
    assert.deepEqual(cols.body.inputs[0].target, [1, 2, null]);
    const bad = await ingest(t, u, {
      text: JSON.stringify([
        { ds: '2024-01-01', y: 1 },
        { ds: 'yesterday', y: 2 },
      ]),
    });
    assert.equal(bad.status, 422);
    assert.match(bad.body.detail[0].msg, /record 1, column 'ds': 'yesterday' is not a timestamp/);
    assert.deepEqual(bad.body.detail[0].loc, ['body', 'text']);
  });

  it('duplicates: 422 naming both lines by default; first, last or mean on request', async () => {
    const text = 'ds,y\n2024-01-01,1\n2024-01-02,2\n2024-01-02,4\n';
    const r = await ingest(t, u, { text });
    assert.equal(r.status, 422);
    assert.match(r.body.detail[0].msg, /line 3 and line 4: series 'series_1' has two values for 2024-01-02/);
    const mean = await ingest(t, u, { text, duplicates: 'mean' });
    assert.equal(mean.status, 200, mean.text);
    assert.deepEqual(mean.body.inputs[0].target, [1, 3]);
    assert.deepEqual(mean.body.duplicates[0].rows, [3, 4]);
    const last = await ingest(t, u, { text, duplicates: 'last' });
    assert.deepEqual(last.body.inputs[0].target, [1, 4]);
  });

  it('gaps: error on request, naming the line; off-grid timestamps name the line', async () => {
    const r = await ingest(t, u, { text: 'ds,y\n2024-01-01,1\n2024-01-02,2\n2024-01-05,5\n2024-01-06,6\n', gaps: 'error' });
    assert.equal(r.status, 422);
    assert.match(r.body.detail[0].msg, /line 4: series 'series_1' misses 2 step\(s\)/);
    const off = await ingest(t, u, { text: 'ds,y\n2024-01-01T00:00:00Z,1\n2024-01-01T01:00:00Z,2\n2024-01-01T02:00:00Z,2\n2024-01-01T02:30:00Z,5\n' });
    assert.equal(off.status, 422);
    assert.match(off.body.detail[0].msg, /line 5: .* is off the h grid/);
  });

  it('explicit columns; unknown column names the field; ragged CSV names the line', async () => {
    const r = await ingest(t, u, { text: 'when,a,b\n2024-01-01,1,2\n2024-01-02,3,4\n', time_column: 'when', value_column: 'b' });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.inputs[0].target, [2, 4]);
    assert.deepEqual(r.body.columns.ignored, ['a']);
    const missing = await ingest(t, u, { text: 'ds,y\n2024-01-01,1\n', value_column: 'sales' });
    assert.equal(missing.status, 422);
    assert.deepEqual(missing.body.detail[0].loc, ['body', 'value_column']);
    const ragged = await ingest(t, u, { text: 'ds,y\n2024-01-01,1\n2024-01-02,2,9\n' });
    assert.equal(ragged.status, 422, ragged.text);
    assert.match(ragged.body.detail[0].msg, /line 3/);
  });

  it('input errors: neither or both of text and url, unknown fields, no credential', async () => {
    assert.equal((await ingest(t, u, {})).status, 422);
    assert.equal((await ingest(t, u, { text: 'ds,y', url: 'https://example.com/x' })).status, 422);
    const unknown = await ingest(t, u, { txt: 'ds,y' });
    assert.equal(unknown.status, 422);
    assert.match(unknown.body.detail[0].msg, /Unknown field 'txt'/);
    assert.equal((await call(t, 'POST', '/v1/series/ingest', { body: { text: 'ds,y\n2024-01-01,1\n' } })).status, 400);
    const empty = await ingest(t, u, { text: '' });
    assert.equal(empty.status, 422);
  });

  it('caps rows, columns and series (413 request_too_large naming the limit) and bytes (413 payload_too_large)', async () => {
    const rows = Array.from({ length: 1001 }, (_, i) => `${new Date(Date.UTC(2020, 0, 1 + i)).toISOString().slice(0, 10)},${i}`);
    const r = await ingest(t, u, { text: `ds,y\n${rows.join('\n')}\n` });
    assert.equal(r.status, 413, r.text);
    assert.equal(r.body.code, 'request_too_large');
    assert.match(r.body.error, /1000 rows/);
    const small = await createTestApp({ env: { INGEST_MAX_BYTES: '1024', INGEST_MAX_COLUMNS: '3', INGEST_MAX_SERIES: '2' } });
    const su = await registerUser(small);
    const big = await ingest(small, su, { text: `ds,y\n${rows.slice(0, 100).join('\n')}\n` });
    assert.equal(big.status, 413);
    assert.equal(big.body.code, 'payload_too_large');
    assert.match(big.body.error, /INGEST_MAX_BYTES/);
    const wide = await ingest(small, su, { text: 'ds,a,b,c\n2024-01-01,1,2,3\n' });
    assert.equal(wide.status, 413, wide.text);
    assert.equal(wide.body.code, 'request_too_large');
    assert.match(wide.body.error, /at most 3 are read \(INGEST_MAX_COLUMNS\)/);
    const many = await ingest(small, su, { text: 'unique_id,ds,y\na,2024-01-01,1\nb,2024-01-01,2\nc,2024-01-01,3\n' });
    assert.equal(many.status, 413, many.text);
    assert.equal(many.body.code, 'request_too_large');
    assert.match(many.body.error, /INGEST_MAX_SERIES/);
    await small.close();
  });

  it('bounds the answer by the data read: gaps fill at most INGEST_GAP_FILL_RATIO nulls per point read (plus 1000), INGEST_MAX_POINTS in all', async () => {
    assert.ok(SPARSE.length < 2100);
    for (const body of [
      { text: SPARSE, frequency: 'min' },
      { url: `${base}/sparse.csv`, frequency: 'min' },
    ]) {
      const r = await ingest(t, u, body);
      assert.equal(r.status, 413, r.text.slice(0, 300));
      assert.equal(r.body.code, 'request_too_large');
      assert.match(r.body.error, /more than 1600 nulls \(60 points read, frequency min\).*INGEST_GAP_FILL_RATIO/);
      assert.ok(r.text.length < 1000);
    }
    // Within the budget the gaps are filled as before: 3 rows a year apart, monthly; 2 values and 25 nulls daily.
    const year = await ingest(t, u, { text: 'ds,y\n2022-01-01,1\n2023-01-01,2\n2024-01-01,3\n', frequency: 'MS' });
    assert.equal(year.status, 200, year.text);
    assert.equal(year.body.inputs[0].target.length, 25);
    const tight = await createTestApp({ env: { INGEST_GAP_FILL_RATIO: '0', INGEST_MAX_POINTS: '1200' } });
    const tu = await registerUser(tight);
    const days = (n: number, step = 1) => Array.from({ length: n }, (_, i) => `${new Date(Date.UTC(2020, 0, 1 + i * step)).toISOString().slice(0, 10)},${i}`);
    // Ratio 0: the floor of 1000 nulls remains; one more is refused.
    const floor = await ingest(tight, tu, { text: `ds,y\n${days(2, 1001).join('\n')}\n`, frequency: 'D' });
    assert.equal(floor.status, 200, floor.text.slice(0, 300));
    assert.equal(floor.body.series[0].missing, 1000);
    const over = await ingest(tight, tu, { text: `ds,y\n${days(2, 1002).join('\n')}\n`, frequency: 'D' });
    assert.equal(over.status, 413, over.text);
    assert.match(over.body.error, /INGEST_GAP_FILL_RATIO/);
    // INGEST_MAX_POINTS counts the points read and the nulls filled.
    const read = await ingest(tight, tu, { text: `ds,y\n${days(1201).join('\n')}\n` });
    assert.equal(read.status, 413, read.text.slice(0, 300));
    assert.match(read.body.error, /at most 1200 are returned \(INGEST_MAX_POINTS\)/);
    // 300 points and 949 nulls: within the fill budget, past the points.
    const late = `${new Date(Date.UTC(2020, 0, 1 + 299 + 950)).toISOString().slice(0, 10)},1`;
    const both = await ingest(tight, tu, { text: `ds,y\n${[...days(300), late].join('\n')}\n`, frequency: 'D' });
    assert.equal(both.status, 413, both.text.slice(0, 300));
    assert.match(both.body.error, /INGEST_MAX_POINTS/);
    await tight.close();
  });

  it('raw text/csv and text/tab-separated-values uploads; other routes refuse text/csv with 415', async () => {
    const r = await call(t, 'POST', '/v1/series/ingest', {
      token: u.token,
      raw: 'ds,y\n2024-01-01,1\n2024-01-02,2\n',
      headers: { 'content-type': 'text/csv' },
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.format, 'csv');
    const tsv = await call(t, 'POST', '/v1/series/ingest', {
      token: u.token,
      raw: 'ds\ty\n2024-01-01\t1\n',
      headers: { 'content-type': 'text/tab-separated-values' },
    });
    assert.equal(tsv.status, 200, tsv.text);
    assert.equal(tsv.body.format, 'tsv');
    const other = await call(t, 'POST', '/v1/forecast', { token: u.token, raw: 'ds,y\n', headers: { 'content-type': 'text/csv' } });
    assert.equal(other.status, 415, other.text);
  });

  it('fetches a url through the outbound fetcher; refuses private targets and non-data answers', async () => {
    const r = await ingest(t, u, { url: `${base}/data.csv` });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.columns.value, ['sales']);
    assert.equal(r.body.frequency, 'MS');
    const before = hits;
    const refused = await ingest(t, u, { url: 'http://169.254.169.254/latest/meta-data/' });
    assert.equal(refused.status, 422);
    assert.deepEqual(refused.body.detail[0].loc, ['body', 'url']);
    assert.match(refused.body.detail[0].msg, /linkLocal/);
    assert.equal((await ingest(t, u, { url: 'http://10.0.0.1/x.csv' })).status, 422);
    assert.equal(hits, before);
    const html = await ingest(t, u, { url: `${base}/page.html` });
    assert.equal(html.status, 400, html.text);
    const notFound = await ingest(t, u, { url: `${base}/nope.csv` });
    assert.equal(notFound.status, 400);
    assert.match(notFound.body.error, /HTTP 404/);
  });

  it('refuses loopback URLs unless the operator allows them', async () => {
    const strict = await createTestApp();
    const su = await registerUser(strict);
    const r = await ingest(strict, su, { url: `${base}/data.csv` });
    assert.equal(r.status, 422);
    assert.match(r.body.detail[0].msg, /https/);
    await strict.close();
  });
});
