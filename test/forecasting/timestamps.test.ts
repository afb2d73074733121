import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { checkTimestamps, parseFrequency, parseStart, stepTime } from '../../src/forecasting/frequency.ts';
import { call, createKey, DB_KIND, registerUser } from '../helpers/app.ts';
import { createListeningApp, type ListeningApp } from '../helpers/listen.ts';

const dates = (xs: string[]) => xs.map((x) => parseStart(x) as Date);
const inferred = (xs: string[]) => {
  const r = checkTimestamps(dates(xs), null);
  assert.ok(r.ok, JSON.stringify(r));
  return r.frequency.code;
};
const fault = (xs: string[], given: string | null = null) => {
  const r = checkTimestamps(dates(xs), given === null ? null : parseFrequency(given));
  assert.ok(!r.ok, `expected a fault in ${xs.join(', ')}`);
  return r;
};
/** n ISO times, `step` apart in ms from `start`. */
const every = (start: string, stepMs: number, n: number) => Array.from({ length: n }, (_, k) => new Date(Date.parse(start) + k * stepMs).toISOString());
const DAY = 86_400_000;

describe('frequency inferred from timestamps', () => {
  test('fixed steps: seconds to weeks, with multiples', () => {
    assert.equal(inferred(every('2024-01-01T00:00:00Z', 1000, 5)), 's');
    assert.equal(inferred(every('2024-01-01T00:00:00Z', 15 * 60_000, 5)), '15min');
    assert.equal(inferred(every('2024-01-01T00:00:00Z', 3_600_000, 50)), 'h');
    assert.equal(inferred(every('2024-01-01T06:00:00Z', 6 * 3_600_000, 9)), '6h');
    assert.equal(inferred(every('2024-01-01', DAY, 40)), 'D');
    assert.equal(inferred(every('2024-01-07', 7 * DAY, 10)), 'W');
    assert.equal(inferred(every('2024-01-07', 14 * DAY, 10)), '2W');
    assert.equal(parseFrequency(inferred(every('2024-01-01', DAY, 40)))?.seasonLength, 7);
  });

  test('calendar frequencies: months, quarters, years at either end of the period, business days', () => {
    assert.equal(inferred(['2023-11-01', '2023-12-01', '2024-01-01', '2024-02-01', '2024-03-01']), 'MS');
    assert.equal(inferred(['2023-11-30', '2023-12-31', '2024-01-31', '2024-02-29', '2024-03-31']), 'M');
    assert.equal(inferred(['2023-01-01', '2023-04-01', '2023-07-01', '2023-10-01', '2024-01-01']), 'QS');
    assert.equal(inferred(['2023-03-31', '2023-06-30', '2023-09-30', '2023-12-31']), 'Q');
    // Quarterly but not on calendar quarters: every third month.
    assert.equal(inferred(['2023-02-01', '2023-05-01', '2023-08-01', '2023-11-01']), '3MS');
    assert.equal(inferred(['2020-01-01', '2021-01-01', '2022-01-01']), 'YS');
    assert.equal(inferred(['2020-12-31', '2021-12-31', '2022-12-31']), 'Y');
    assert.equal(inferred(['1949-01-01T00:00:00Z', '1949-02-01T00:00:00Z', '1949-03-01T00:00:00Z']), 'MS');
    // Thu, Fri, Mon, Tue: business days; a week of weekdays only is daily.
    assert.equal(inferred(['2024-01-04', '2024-01-05', '2024-01-08', '2024-01-09']), 'B');
    assert.equal(inferred(['2024-01-05', '2024-01-08', '2024-01-09', '2024-01-10']), 'B');
    assert.equal(inferred(['2024-01-01', '2024-01-02', '2024-01-03']), 'D');
  });

  test('duplicates, steps back and gaps are faults at the first index concerned', () => {
    let r = fault(['2024-01-01', '2024-01-02', '2024-01-02', '2024-01-03']);
    assert.equal(r.index, 2);
    assert.match(r.msg, /Duplicate/);
    r = fault(['2024-01-03', '2024-01-02']);
    assert.equal(r.index, 1);
    assert.match(r.msg, /Not increasing/);
    r = fault(['2024-01-01', '2024-01-02', '2024-01-03', '2024-01-05', '2024-01-06']);
    assert.equal(r.index, 3);
    assert.match(r.msg, /Irregular.*'D'.*2024-01-04T00:00:00\.000Z/);
    // A month skipped.
    r = fault(['2024-01-01', '2024-02-01', '2024-04-01']);
    assert.equal(r.index, 2);
    r = fault(['2024-01-01']);
    assert.equal(r.index, 0);
    assert.match(r.msg, /at least two/);
    r = fault(['2024-01-01T00:00:00.000Z', '2024-01-01T00:00:00.500Z']);
    assert.match(r.msg, /No supported frequency/);
  });

  test('anchored codes step as pandas does; an unknown anchor is no frequency', () => {
    const steps = (code: string, start: string, n = 3) => {
      const f = parseFrequency(code);
      assert.ok(f, code);
      return Array.from({ length: n }, (_, k) => stepTime(new Date(start), f, k).toISOString().slice(0, 10));
    };
    // pandas.date_range('2024-01-15', periods=3, freq=…)
    assert.deepEqual(steps('Q-NOV', '2024-01-15'), ['2024-02-29', '2024-05-31', '2024-08-31']);
    assert.deepEqual(steps('QE-DEC', '2024-01-15'), steps('Q', '2024-01-15'));
    assert.deepEqual(steps('QS-FEB', '2024-01-15'), ['2024-02-01', '2024-05-01', '2024-08-01']);
    assert.deepEqual(steps('A-JUN', '2024-01-15'), ['2024-06-30', '2025-06-30', '2026-06-30']);
    assert.deepEqual(steps('YS-JUL', '2024-01-15'), ['2024-07-01', '2025-07-01', '2026-07-01']);
    assert.deepEqual(steps('W-SUN', '2024-01-03'), ['2024-01-07', '2024-01-14', '2024-01-21']);
    assert.deepEqual(steps('2W-MON', '2024-01-03'), ['2024-01-08', '2024-01-22', '2024-02-05']);
    // W alone steps 7 days from the start (what inference names a weekly series on any weekday).
    assert.deepEqual(steps('W', '2024-01-03'), ['2024-01-03', '2024-01-10', '2024-01-17']);
    for (const code of ['W-XYZ', 'Y-QQQ', 'W-FOOBAR', 'M-JAN', 'D-MON', 'QS-SUN']) assert.equal(parseFrequency(code), null, code);
    // Timestamps must sit on the anchor's grid.
    const sundays = dates(['2024-01-07', '2024-01-14', '2024-01-21']);
    assert.ok(checkTimestamps(sundays, parseFrequency('W-SUN')).ok);
    assert.equal(checkTimestamps(sundays, parseFrequency('W-MON')).ok, false);
  });

  test('with parameters.frequency the timestamps must follow it; one timestamp is then enough', () => {
    assert.ok(checkTimestamps(dates(['2024-01-01']), parseFrequency('D')).ok);
    assert.ok(checkTimestamps(dates(['2024-01-01', '2024-01-02']), parseFrequency('D')).ok);
    const r = fault(['2024-01-01', '2024-01-02'], 'h');
    assert.equal(r.index, 1);
    assert.match(r.msg, /parameters\.frequency 'h'.*expected 2024-01-01T01:00:00\.000Z/);
  });
});

describe(`inputs[].timestamps over REST and MCP (${DB_KIND})`, () => {
  let t: ListeningApp;
  let key: string;
  let mcp: Client;
  before(async () => {
    t = await createListeningApp({ env: { RATE_LIMIT_FREE_PER_MINUTE: '500' } });
    key = (await createKey(t, await registerUser(t))).key;
    mcp = new Client({ name: 'test', version: '1' });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${t.baseUrl}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
  });
  after(async () => {
    await mcp.close();
    await t.close();
  });
  const MONTHS = ['2023-09-01', '2023-10-01', '2023-11-01', '2023-12-01', '2024-01-01', '2024-02-01', '2024-03-01', '2024-04-01'];
  const TARGET = [1, 2, 3, 4, 5, 6, 7, 8];
  const forecast = (body: unknown) => call(t, 'POST', '/v1/forecast', { token: key, body });

  test('forecast: the frequency is inferred, output timestamps continue from the last one', async () => {
    const r = await forecast({ model: 'echo-last', inputs: [{ target: TARGET, timestamps: MONTHS }], parameters: { prediction_length: 2 } });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.outputs[0].timestamps, ['2024-05-01T00:00:00.000Z', '2024-06-01T00:00:00.000Z']);
    // The same with start and the same frequency sent: they agree, so it is accepted.
    const both = await forecast({
      model: 'echo-last',
      inputs: [{ target: TARGET, timestamps: MONTHS, start: '2023-09-01T00:00:00Z' }],
      parameters: { prediction_length: 2, freq: 'MS' },
    });
    assert.equal(both.status, 200, both.text);
    assert.deepEqual(both.body.outputs[0].timestamps, r.body.outputs[0].timestamps);
    // An input with only a start gets timestamps from the inferred frequency too.
    const mixed = await forecast({
      model: 'echo-last',
      inputs: [
        { target: [1, 2], start: '2020-01-01' },
        { target: TARGET, timestamps: MONTHS },
      ],
      parameters: { prediction_length: 1 },
    });
    assert.equal(mixed.status, 200, mixed.text);
    assert.deepEqual(mixed.body.outputs[0].timestamps, ['2020-03-01T00:00:00.000Z']);
  });

  const bad: Array<[string, Record<string, unknown>, unknown, (string | number)[], RegExp]> = [
    ['a duplicate', { target: [1, 2, 3], timestamps: ['2024-01-01', '2024-01-02', '2024-01-02'] }, null, ['inputs', 0, 'timestamps', 2], /Duplicate/],
    ['a step back', { target: [1, 2, 3], timestamps: ['2024-01-01', '2024-01-03', '2024-01-02'] }, null, ['inputs', 0, 'timestamps', 2], /Not increasing/],
    [
      'a gap',
      { target: [1, 2, 3, 4], timestamps: ['2024-01-01', '2024-01-02', '2024-01-03', '2024-01-07'] },
      null,
      ['inputs', 0, 'timestamps', 3],
      /Irregular/,
    ],
    ['not a date', { target: [1, 2], timestamps: ['2024-01-01', 'yesterday'] }, null, ['inputs', 0, 'timestamps', 1], /ISO 8601/],
    [
      'a length mismatch',
      { target: [1, 2, 3], timestamps: ['2024-01-01', '2024-01-02'] },
      null,
      ['inputs', 0, 'timestamps'],
      /one timestamp per target step \(3\)/,
    ],
    ['a disagreeing start', { target: [1, 2], timestamps: ['2024-01-01', '2024-01-02'], start: '2024-01-02' }, null, ['inputs', 0, 'start'], /timestamps\[0\]/],
    ['a disagreeing frequency', { target: [1, 2], timestamps: ['2024-01-01', '2024-01-02'] }, 'h', ['inputs', 0, 'timestamps', 1], /parameters\.frequency 'h'/],
  ];
  for (const [what, input, freq, loc, msg] of bad) {
    test(`forecast, batch, ensemble and MCP refuse ${what} with a 422 naming the place`, async () => {
      const parameters = { prediction_length: 1, ...(freq ? { frequency: freq } : {}) };
      const r = await forecast({ model: 'echo-last', inputs: [input], parameters });
      assert.equal(r.status, 422, r.text);
      assert.deepEqual(r.body.detail[0].loc, ['body', ...loc]);
      assert.match(r.body.detail[0].msg, msg);
      const batch = await call(t, 'POST', '/v1/forecast/batch', { token: key, body: { requests: [{ model: 'echo-last', inputs: [input], parameters }] } });
      assert.equal(batch.status, 200, batch.text);
      assert.equal(batch.body.data[0].error.status, 422);
      assert.deepEqual(batch.body.data[0].error.detail[0].loc, ['body', ...loc]);
      const ens = await call(t, 'POST', '/v1/forecast/ensemble', {
        token: key,
        body: { inputs: [input], models: ['echo-last', 'echo-short'], parameters },
      });
      assert.equal(ens.status, 422, ens.text);
      assert.deepEqual(ens.body.detail[0].loc, ['body', ...loc]);
      const m = (await mcp.callTool({ name: 'forecast', arguments: { model: 'echo-last', inputs: [input], parameters } })) as {
        isError?: boolean;
        content: { text: string }[];
      };
      assert.equal(m.isError, true);
      assert.match(m.content[0]?.text ?? '', new RegExp(`${loc.join('\\.').replace(/\[|\]/g, '\\$&')}: `));
    });
  }

  test('ensemble and MCP forecasts with timestamps carry the continued timestamps', async () => {
    const ens = await call(t, 'POST', '/v1/forecast/ensemble', {
      token: key,
      body: { inputs: [{ target: TARGET, timestamps: MONTHS }], models: ['echo-last', 'echo-short'], parameters: { prediction_length: 2 } },
    });
    assert.equal(ens.status, 200, ens.text);
    assert.deepEqual(ens.body.ensemble_result.outputs[0].timestamps, ['2024-05-01T00:00:00.000Z', '2024-06-01T00:00:00.000Z']);
    const m = (await mcp.callTool({
      name: 'forecast',
      arguments: { model: 'echo-last', inputs: [{ target: TARGET, timestamps: MONTHS }], parameters: { prediction_length: 1 } },
    })) as unknown as { isError?: boolean; structuredContent: { outputs: { timestamps: string[] }[] } };
    assert.notEqual(m.isError, true);
    assert.deepEqual(m.structuredContent.outputs[0]?.timestamps, ['2024-05-01T00:00:00.000Z']);
    const tools = (await mcp.listTools()).tools;
    const forecastTool = tools.find((x) => x.name === 'forecast') as { inputSchema: any };
    assert.ok(JSON.stringify(forecastTool.inputSchema).includes('"timestamps"'), 'the lean tool schema advertises inputs[].timestamps');
  });
});
