import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { qnorm } from '../../src/engine/stats/normal.ts';

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

/** The nine deciles the WQL is averaged over. */
export const DECILES = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9];

/** An uncalibrated Gaussian forecast of a series' test part (sd below and above the mean). */
export interface TestForecast {
  mean: readonly number[];
  sdLow: readonly number[];
  sdHigh: readonly number[];
}

/**
 * 80% coverage and WQL over the deciles of forecasts whose sds are multiplied by a calibration
 * factor (one, or one per step), scored as bench/m3-accuracy.ts scores the service: quantiles of
 * series that are never negative floored at 0; WQL = 2 x pinball summed over series and steps /
 * sum |actual|, averaged over the levels.
 */
export function intervalScore(
  series: readonly M3Series[],
  forecasts: readonly TestForecast[],
  factor: (i: number) => number | readonly number[],
  idx: readonly number[],
): { coverage: number; wql: number } {
  const zq = DECILES.map((p) => qnorm(p));
  const z80 = qnorm(0.9);
  let inside = 0;
  let count = 0;
  let absSum = 0;
  const loss = new Array<number>(DECILES.length).fill(0);
  for (const i of idx) {
    const s = series[i]!;
    const c = forecasts[i]!;
    const r = factor(i);
    const fAt = (h: number): number => (typeof r === 'number' ? r : r[h]!);
    const nonNeg = s.train.every((v) => v >= 0);
    const floor = (v: number): number => (nonNeg ? Math.max(0, v) : v);
    s.test.forEach((y, h) => {
      const f = fAt(h);
      const lo = floor(c.mean[h]! - z80 * f * c.sdLow[h]!);
      const hi = floor(c.mean[h]! + z80 * f * c.sdHigh[h]!);
      if (y >= lo && y <= hi) inside++;
      count++;
      absSum += Math.abs(y);
      zq.forEach((z, k) => {
        const q = floor(c.mean[h]! + z * f * (z < 0 ? c.sdLow[h]! : c.sdHigh[h]!));
        const d = y - q;
        loss[k]! += 2 * Math.max(DECILES[k]! * d, (DECILES[k]! - 1) * d);
      });
    });
  }
  return { coverage: inside / count, wql: loss.reduce((a, b) => a + b / absSum, 0) / DECILES.length };
}

/**
 * An interval score per frequency and over every series (`score` of the indices), and the table
 * cells "coverage% / WQL" in the order yearly, quarterly, monthly, other, all.
 */
export function scoreByFrequency(
  series: readonly M3Series[],
  score: (idx: readonly number[]) => { coverage: number; wql: number },
): { row: Record<string, { coverage: number; wql: number }>; cells: string } {
  const row: Record<string, { coverage: number; wql: number }> = {};
  for (const f of FREQUENCIES) row[f] = score(series.flatMap((s, i) => (s.frequency === f ? [i] : [])));
  row.all = score(series.map((_, i) => i));
  const cells = [...FREQUENCIES, 'all'].map((f) => `${(100 * row[f]!.coverage).toFixed(1)}% / ${row[f]!.wql.toFixed(4)}`).join(' | ');
  return { row, cells };
}

/** Writes bench/results/<name>.json (the figures, with when they were made) and <name>.md (a title, a paragraph, the lines). */
export function writeStudy(name: string, figures: Record<string, unknown>, title: string, intro: string, lines: readonly string[]): void {
  const at = new Date().toISOString();
  const dir = path.join(repoRoot, 'bench', 'results');
  writeFileSync(path.join(dir, `${name}.json`), `${JSON.stringify({ generatedAt: at, ...figures }, null, 2)}\n`);
  writeFileSync(path.join(dir, `${name}.md`), [`# ${title}`, '', `Generated ${at} ${intro}`, '', ...lines].join('\n'));
}

/** "all of M3", "every 2nd series", "every 3rd series", "every 10th series". */
export function subsetLabel(every: number): string {
  if (every === 1) return 'all of M3';
  const suffix =
    every % 10 === 1 && every % 100 !== 11 ? 'st' : every % 10 === 2 && every % 100 !== 12 ? 'nd' : every % 10 === 3 && every % 100 !== 13 ? 'rd' : 'th';
  return `every ${every}${suffix} series`;
}
