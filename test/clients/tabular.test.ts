import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { forecastRows, frequencyOf, InputError, inferFrequency, parseSeries, quantileColumn, rowsToCsv } from '../../sdk/src/tabular.ts';

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
    assert.throws(() => parseSeries('unique_id,ds,y\na,yesterday,1\n'), /line 2: ds is not a date/);
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
    assert.equal(frequencyOf(['2024-01-01', '2024-01-02', '2024-01-04']), null);
    assert.equal(frequencyOf(['2024-01-01', '2024-01-02']), null);
    assert.equal(inferFrequency(parseSeries('unique_id,ds,y\na,2024-01-01,1\nb,2024-01-01,1\nb,2024-02-01,2\nb,2024-03-01,3\n')), 'MS');
    assert.equal(inferFrequency(parseSeries('[1,2,3]')), null);
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
