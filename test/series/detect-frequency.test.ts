import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseFrequency, stepTime } from '../../src/forecasting/frequency.ts';
import { detectFrequency } from '../../src/series/shape.ts';

const grid = (start: string, code: string, n: number): number[] => {
  const f = parseFrequency(code);
  assert.ok(f, code);
  return Array.from({ length: n }, (_, k) => stepTime(new Date(start), f, k).getTime());
};

test('detectFrequency names calendar and fixed grids, before and after 1970, with and without weekends', () => {
  const cases: [string, string, number, string][] = [
    ['2024-01-01T00:00:00Z', 'MS', 40, 'MS'],
    ['1950-01-31T00:00:00Z', 'ME', 40, 'M'],
    ['2001-01-01T00:00:00Z', 'QS', 20, 'QS'],
    ['1961-03-31T00:00:00Z', 'QE', 20, 'Q'],
    ['1900-01-01T00:00:00Z', 'YS', 30, 'YS'],
    ['1999-12-31T00:00:00Z', 'YE', 30, 'Y'],
    ['2024-01-01T00:00:00Z', 'D', 400, 'D'],
    ['1969-06-02T00:00:00Z', 'B', 400, 'B'],
    ['2024-01-05T00:00:00Z', 'B', 300, 'B'],
    ['2024-01-01T00:00:00Z', 'W', 100, 'W'],
    ['1969-12-31T22:00:00Z', 'h', 1000, 'h'],
    ['2024-01-01T00:00:00Z', '15min', 1000, '15min'],
    ['2024-01-01T00:00:00Z', 's', 500, 's'],
    ['2024-01-01T06:00:00Z', 'D', 60, 'D'],
  ];
  for (const [start, code, n, expected] of cases) {
    const f = detectFrequency([grid(start, code, n)]);
    assert.equal(f === null ? null : parseFrequency(f)?.code, parseFrequency(expected)?.code, `${code} from ${start}`);
  }
  // Daily data that includes weekends is not business days, even with a missing Friday → Monday step.
  const daily = grid('2024-01-01T00:00:00Z', 'D', 60);
  daily.splice(4, 2);
  assert.equal(detectFrequency([daily]), 'D');
  assert.equal(detectFrequency([[Date.UTC(2024, 0, 1)]]), null);
});
