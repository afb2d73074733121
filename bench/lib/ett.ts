import { readFileSync } from 'node:fs';
import path from 'node:path';
import { sharedDir } from './m3.ts';

/** Every value column of an ETT file (ETTh1.csv, ETTh2.csv, … under shared/data/ett), named `ETTh1:OT`. */
export function readEttColumns(file: string): { name: string; values: number[] }[] {
  const lines = readFileSync(path.join(sharedDir(), 'data', 'ett', file), 'utf8')
    .trim()
    .split('\n');
  const header = (lines[0] ?? '').split(',').slice(1);
  const rows = lines.slice(1).map((l) => l.split(',').slice(1).map(Number));
  return header.map((h, j) => ({ name: `${file.replace('.csv', '')}:${h}`, values: rows.map((r) => r[j] as number) }));
}

/** One forecasting case: the context, the values that followed it, and a name. */
export interface EttCase {
  id: string;
  context: number[];
  actual: number[];
}

/**
 * ETTh1/ETTh2 averaged per day (725 days per column, 14 columns); `origins` forecast origins 28 days
 * apart from day 480, each with every day before it as context; `horizon` days ahead.
 */
export function ettDailyCases(origins: number, horizon: number): EttCase[] {
  const cases: EttCase[] = [];
  for (const file of ['ETTh1.csv', 'ETTh2.csv']) {
    for (const col of readEttColumns(file)) {
      const days: number[] = [];
      for (let d = 0; (d + 1) * 24 <= col.values.length; d++) {
        days.push(col.values.slice(d * 24, (d + 1) * 24).reduce((a, b) => a + b, 0) / 24);
      }
      for (let k = 0; k < origins; k++) {
        const origin = ETT_DAILY_FIRST + k * ETT_DAILY_STEP;
        if (origin + horizon > days.length) break;
        cases.push({ id: `${col.name}@day${origin}`, context: days.slice(0, origin), actual: days.slice(origin, origin + horizon) });
      }
    }
  }
  return cases;
}
export const ETT_DAILY_FIRST = 480;
export const ETT_DAILY_STEP = 28;
