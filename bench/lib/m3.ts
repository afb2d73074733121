import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export interface M3Series {
  id: string;
  frequency: 'yearly' | 'quarterly' | 'monthly' | 'other';
  seasonality: number;
  horizon: number;
  train: number[];
  test: number[];
}

export const FREQUENCIES = ['yearly', 'quarterly', 'monthly', 'other'] as const;

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Shared data lives beside the repository; SHARED_DIR overrides (worktrees sit elsewhere). */
export function sharedDir(): string {
  return process.env.SHARED_DIR ?? path.resolve(repoRoot, '..', 'shared');
}

export function loadM3(part: 'all' | (typeof FREQUENCIES)[number] = 'all'): M3Series[] {
  const file = path.join(sharedDir(), 'data', 'm3', part === 'all' ? 'm3.jsonl' : `m3_${part}.jsonl`);
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as M3Series);
}

/** sMAPE of one series as the M3 README defines it (percent). */
export function smape(actual: readonly number[], forecast: readonly number[]): number {
  let s = 0;
  for (let h = 0; h < actual.length; h++) {
    const y = actual[h]!;
    const f = forecast[h]!;
    const d = Math.abs(y) + Math.abs(f);
    s += d === 0 ? 0 : (200 * Math.abs(y - f)) / d;
  }
  return s / actual.length;
}

/** MASE of one series: mean absolute error over the in-sample mean |y_t - y_{t-m}|. */
export function mase(train: readonly number[], actual: readonly number[], forecast: readonly number[], m: number): number {
  let scale = 0;
  for (let t = m; t < train.length; t++) scale += Math.abs(train[t]! - train[t - m]!);
  scale /= train.length - m;
  let err = 0;
  for (let h = 0; h < actual.length; h++) err += Math.abs(actual[h]! - forecast[h]!);
  return err / actual.length / scale;
}
