import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseFrequency, parseTime, stepTime } from '../../sdk/src/frequency.ts';
import {
  alignSeries,
  anomalyRows,
  forecastRows,
  frequencyOf,
  InputError,
  inferFrequency,
  parseSeries,
  quantileColumn,
  rowsToCsv,
} from '../../sdk/src/tabular.ts';
import { parseFrequency as serverParseFrequency, stepTime as serverStepTime } from '../../src/forecasting/frequency.ts';
import { GRID_CODES, GRID_STARTS } from './grid-cases.ts';

describe('tsfm input parsing (sdk/src/tabular.ts)', () => {
  test('long-format CSV: grouped by unique_id in first-seen order, sorted by ds, empty y is missing', () => {
    const s = parseSeries('unique_id,ds,y\nb,2024-01-02,6\na,2024-01-01,1\nb,2024-01-01,5\nb,2024-01-03,NA\n');
    assert.deepEqual(s.ids, ['b', 'a']);
    assert.deepEqual(s.inputs[0], { target: [5, 6, null], item_id: 'b', start: '2024-01-01' });
    assert.deepEqual(s.inputs[1], { target: [1], item_id: 'a', start: '2024-01-01' });
    assert.equal(s.dateOnly, true);
  });

  test('one series: a headerless column, ds,y, a JSON array, {target}, JSON records, {inputs}', () => {
    assert.deepEqual(parseSeries('1\n2\n\n3\n').inputs, [{ target: [1, 2, 3], item_id: 'series' }]);
    assert.deepEqual(parseSeries('ds,y\n2024-01-01T00:00:00Z,1\n').inputs[0]?.start, '2024-01-01T00:00:00Z');
    assert.deepEqual(parseSeries('[1, null, 3]').inputs, [{ target: [1, null, 3], item_id: 'series' }]);
    assert.deepEqual(parseSeries('{"target": [1, 2], "start": "2024-01-01", "item_id": 7}').ids, ['7']);
    assert.deepEqual(
      parseSeries('[{"unique_id": "x", "ds": "2024-01-02", "y": 2}, {"unique_id": "x", "ds": "2024-01-01", "y": "1"}]', 'json').inputs[0]?.target,
      [1, 2],
    );
    assert.deepEqual(parseSeries('{"inputs": [{"target": [1], "item_id": "k"}, {"target": [2]}]}').ids, ['k', 'series_2']);
  });

  test('bad input is an InputError naming the line', () => {
    assert.throws(
      () => parseSeries('ds,y\n2024-01-01,1\n2024-01-02,abc\n'),
      (e: unknown) => e instanceof InputError && /line 3: y is not a number: "abc"/.test(e.message),
    );
    assert.throws(() => parseSeries('unique_id,ds,y\na,2024-01-01,1\na,2024-01-01,2\n'), /ds 2024-01-01 appears twice \(line 2 and line 3\)/);
    assert.throws(() => parseSeries('unique_id,ds,y\na,yesterday,1\n'), /line 2: ds is not an ISO 8601 date/);
    assert.throws(() => parseSeries('a,b\n1,2\n'), /needs a y column/);
    assert.throws(() => parseSeries('1,2\n3,4\n'), /one column of numbers/);
    assert.throws(() => parseSeries('{"x": 1}'), /JSON input must be/);
    assert.throws(() => parseSeries('[1, 2'), /^InputError: JSON/);
    assert.throws(() => parseSeries(''), /empty/);
  });

  test('the frequency is inferred from regular ds', () => {
    assert.equal(frequencyOf(['2024-01-01', '2024-01-02', '2024-01-03']), 'D');
    assert.equal(frequencyOf(['2024-07-01', '2024-08-01', '2024-09-01']), 'MS');
    assert.equal(frequencyOf(['2024-01-31', '2024-02-29', '2024-03-31']), 'M');
    assert.equal(frequencyOf(['2024-01-01', '2024-04-01', '2024-07-01']), 'QS');
    assert.equal(frequencyOf(['2022-01-01', '2023-01-01', '2024-01-01']), 'YS');
    assert.equal(frequencyOf(['2024-01-01', '2024-03-01', '2024-05-01']), '2MS');
    assert.equal(frequencyOf(['2024-01-01T00:00:00Z', '2024-01-01T00:15:00Z', '2024-01-01T00:30:00Z']), '15min');
    assert.equal(frequencyOf(['2024-01-01T00:00:00Z', '2024-01-01T02:00:00Z', '2024-01-01T04:00:00Z']), '2h');
    assert.equal(frequencyOf(['2024-01-01', '2024-01-08', '2024-01-15']), 'W');
    assert.equal(frequencyOf(['2024-01-01', '2024-01-02', '2024-01-05']), 'D', 'a missing date does not make the steps irregular');
    assert.equal(frequencyOf(['2024-01-01', '2024-01-03', '2024-01-04']), 'D');
    assert.equal(frequencyOf(['2024-01-01', '2024-01-03', '2024-01-06']), null, 'steps of 2 and 3 days are irregular');
    assert.equal(frequencyOf(['2024-01-01', '2024-01-02']), null);
    assert.equal(inferFrequency(parseSeries('unique_id,ds,y\na,2024-01-01,1\nb,2024-01-01,1\nb,2024-02-01,2\nb,2024-03-01,3\n')), 'MS');
    assert.equal(inferFrequency(parseSeries('[1,2,3]')), null);
  });

  test('anchored quarters and years are inferred with their anchor (fiscal years, quarters off January)', () => {
    assert.equal(frequencyOf(['2020-07-01', '2021-07-01', '2022-07-01', '2023-07-01']), 'YS-JUL');
    assert.equal(frequencyOf(['2021-02-01', '2021-05-01', '2021-08-01', '2021-11-01']), 'QS-FEB');
    assert.equal(frequencyOf(['2021-03-01', '2021-06-01', '2021-09-01']), 'QS-MAR');
    assert.equal(frequencyOf(['2021-06-30', '2022-06-30', '2023-06-30']), 'Y-JUN');
    assert.equal(frequencyOf(['2021-12-31', '2022-12-31', '2023-12-31']), 'Y');
    assert.equal(frequencyOf(['2021-02-28', '2021-05-31', '2021-08-31']), 'Q-NOV');
    assert.equal(frequencyOf(['2021-01-31', '2021-04-30', '2021-07-31']), 'Q-OCT');
    assert.equal(frequencyOf(['2021-03-31', '2021-06-30', '2021-09-30']), 'Q');
    assert.equal(frequencyOf(['2020-07-01', '2022-07-01', '2024-07-01']), '2YS-JUL');
    assert.equal(frequencyOf(['2020-07-01', '2021-07-01', '2023-07-01']), 'YS-JUL', 'a missing year');
    // Years starting in different months in different series: 12 months from each series' own start.
    assert.equal(inferFrequency(parseSeries('unique_id,ds,y\na,2020-01-01,1\na,2021-01-01,2\na,2022-01-01,3\nb,2020-07-01,1\nb,2021-07-01,2\n')), '12MS');
    // Weekdays only, across weekends: business days.
    assert.equal(frequencyOf(['2024-01-04', '2024-01-05', '2024-01-08', '2024-01-09']), 'B');
    assert.equal(frequencyOf(['2024-01-01', '2024-01-02', '2024-01-03']), 'D', 'Mon, Tue, Wed');
    // Every code inferred is one the service reads the same way.
    for (const code of ['YS-JUL', 'QS-FEB', 'QS-MAR', 'Y-JUN', 'Q-NOV', 'Q-OCT', '2YS-JUL', '12MS', 'B']) assert.ok(serverParseFrequency(code), code);
  });

  test("the grid stepped here is the service's (so the forecast continues the filled series)", () => {
    const codes = GRID_CODES;
    const starts = GRID_STARTS;
    for (const code of codes) {
      const mine = parseFrequency(code);
      const theirs = serverParseFrequency(code);
      assert.ok(mine && theirs, code);
      assert.equal(mine.anchor, theirs.anchor, code);
      for (const start of starts) {
        const t = parseTime(start);
        for (const k of [0, 1, 2, 5, 13, 40]) {
          assert.equal(new Date(stepTime(t, mine, k)).toISOString(), serverStepTime(new Date(t), theirs, k).toISOString(), `${code} from ${start}, step ${k}`);
        }
      }
    }
    for (const bad of ['W-XYZ', 'M-JAN', 'XYZ', 'MS-JAN']) assert.equal(parseFrequency(bad), null, bad);
  });

  test('missing dates become nulls on the grid, per series, whatever series comes first', () => {
    const set = parseSeries('unique_id,ds,y\na,2024-01-01,1\na,2024-01-02,2\na,2024-01-03,3\nb,2024-01-01,1\nb,2024-01-03,3\nb,2024-01-04,4\n');
    const a = alignSeries(set);
    assert.equal(a.frequency, 'D');
    assert.equal(a.inferred, true);
    assert.deepEqual(
      a.set.inputs.map((x) => x.target),
      [
        [1, 2, 3],
        [1, null, 3, 4],
      ],
    );
    assert.deepEqual(a.filled, [{ id: 'b', count: 1, total: 4 }]);
    // The first series has a gap: the frequency still comes from all of them.
    const first = alignSeries(parseSeries('unique_id,ds,y\na,2024-01-01,1\na,2024-01-03,3\na,2024-01-04,4\nb,2024-01-01,1\n'));
    assert.equal(first.frequency, 'D');
    assert.deepEqual(first.set.inputs[0]?.target, [1, null, 3, 4]);
    // A given frequency: the gap is filled; a ds off its grid is refused, naming the series and the date.
    const given = alignSeries(parseSeries('ds,y\n2024-01-01,1\n2024-01-02,2\n2024-01-03,3\n2024-01-05,5\n'), 'D');
    assert.deepEqual(given.set.inputs[0]?.target, [1, 2, 3, null, 5]);
    assert.equal(given.inferred, false);
    assert.throws(
      () => alignSeries(parseSeries('ds,y\n2024-01-01,1\n2024-01-02,2\n'), 'MS'),
      (e: unknown) => e instanceof InputError && /series series: ds 2024-01-02 is off the grid .*frequency MS, from --freq/.test(e.message),
    );
    assert.throws(() => alignSeries(parseSeries('ds,y\n2024-01-01,1\n2025-01-01,2\n'), 's'), /would add more than 100000 empty values/);
    // Irregular dates without a frequency: sent as they are (rows get step numbers).
    const irregular = alignSeries(parseSeries('ds,y\n2024-01-01,1\n2024-01-03,2\n2024-01-06,3\n'));
    assert.equal(irregular.irregular, true);
    assert.equal(irregular.frequency, null);
    assert.deepEqual(irregular.set.inputs[0]?.target, [1, 2, 3]);
  });

  test('whole-number ds (Nixtla/M4 style) are step numbers: no start, gaps filled, the forecast continues them', () => {
    const set = parseSeries(`unique_id,ds,y\n${Array.from({ length: 20 }, (_, i) => `m1,${i + 1},${i}`).join('\n')}\nm2,1,5\nm2,3,7\n`);
    assert.deepEqual(set.steps?.[1], [1, 3]);
    assert.equal(set.inputs[0]?.start, undefined);
    const a = alignSeries(set);
    assert.equal(a.frequency, null);
    assert.deepEqual(a.set.inputs[1]?.target, [5, null, 7]);
    assert.deepEqual(a.set.index, [
      { first: 1, step: 1, length: 20 },
      { first: 1, step: 1, length: 3 },
    ]);
    const response = {
      quantile_levels: [],
      outputs: [1, 2].map(() => ({ mean: [[0], [0]], quantile_predictions: null, samples: null, timestamps: null, metadata: null })),
    };
    assert.deepEqual(
      forecastRows(a.set.ids, response, false, a.set.index).map((r) => [r.unique_id, r.ds]),
      [
        ['m1', 21],
        ['m1', 22],
        ['m2', 4],
        ['m2', 5],
      ],
    );
    const tens = alignSeries(parseSeries('ds,y\n10,1\n20,2\n40,4\n'));
    assert.deepEqual(tens.set.inputs[0]?.target, [1, 2, null, 4]);
    assert.equal(forecastRows(tens.set.ids, { quantile_levels: [], outputs: response.outputs.slice(0, 1) }, false, tens.set.index)[0]?.ds, 50);
    const scored = {
      outputs: [{ start_index: 1, anomaly: [[false]], value: [[2]], expected: [[2]], lower: [[1]], upper: [[3]], score: [[0]], timestamps: null }],
    };
    assert.equal(anomalyRows(tens.set.ids, scored as never, false, tens.set.index)[0]?.ds, 20);
    assert.throws(() => parseSeries('ds,y\n1,1\n2024-01-01,2\n'), /ds mixes whole numbers \(line 2: 1\) and dates \(line 3/);
    assert.throws(() => parseSeries('ds,y\n01/02/2024,1\n'), /line 2: ds is not an ISO 8601 date/);
  });

  test('rows out: quantile columns, dates kept as dates, step numbers without timestamps', () => {
    assert.equal(quantileColumn(0.1), 'q10');
    assert.equal(quantileColumn(0.025), 'q2.5');
    const response = {
      quantile_levels: [0.1, 0.9],
      outputs: [
        {
          mean: [[1], [2]],
          quantile_predictions: [
            { level: 0.1, values: [[0.5], [1.5]] },
            { level: 0.9, values: [[1.5], [2.5]] },
          ],
          samples: null,
          timestamps: ['2024-01-04T00:00:00.000Z', '2024-01-05T00:00:00.000Z'],
          metadata: null,
        },
        { mean: [[7]], quantile_predictions: null, samples: null, timestamps: null, metadata: null },
      ],
    };
    const rows = forecastRows(['a', 'b'], response, true);
    assert.deepEqual(rows, [
      { unique_id: 'a', ds: '2024-01-04', mean: 1, q10: 0.5, q90: 1.5 },
      { unique_id: 'a', ds: '2024-01-05', mean: 2, q10: 1.5, q90: 2.5 },
      { unique_id: 'b', ds: 1, mean: 7, q10: null, q90: null },
    ]);
    assert.equal(forecastRows(['a'], { ...response, outputs: response.outputs.slice(0, 1) })[0]?.ds, '2024-01-04T00:00:00.000Z');
    assert.equal(rowsToCsv(rows, [0.1, 0.9]), 'unique_id,ds,mean,q10,q90\na,2024-01-04,1,0.5,1.5\na,2024-01-05,2,1.5,2.5\nb,1,7,,\n');
  });
});
