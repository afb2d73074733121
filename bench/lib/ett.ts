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
