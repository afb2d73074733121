/**
 * Where TinyTimeMixer R2's MASE comes from on long hourly series: ETTh1/ETTh2, every column,
 * contexts ending at several origins in the test part (rows 11,520 onward, 1,000 apart), horizons
 * 48, 96 and 192 (rolled out), through forecastTtm as served (80% interval from the conformal
 * backtests). MASE is scaled by the context's mean |y_t − y_{t−24}|; seasonal-naive (m = 24) on the
 * same cases. Lists the worst cases with their context statistics (level shift in the last window,
 * near-constant windows). Writes bench/results/ttm-worst.{json,md}.
 *   SHARED_DIR=/work/shared nice -n 10 node bench/ttm-worst.ts [--origins 4] [--context 1000]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { forecastTtm, loadTtmRuntime, TTM_R2_ID } from '../src/engine/neural/ttm/model.ts';
import { readEttColumns } from './lib/ett.ts';
import { repoRoot, sharedDir, smape } from './lib/m3.ts';

const { values } = parseArgs({
  options: { origins: { type: 'string', default: '4' }, context: { type: 'string', default: '1000' }, out: { type: 'string', default: 'ttm-worst' } },
});
const ORIGINS = Number(values.origins);
const CONTEXT = Number(values.context);
const M = 24;
const modelsDir = path.join(sharedDir(), 'models');
const rt = loadTtmRuntime(modelsDir);
const load = [loadavg()[0]!];
const started = Date.now();

interface Case {
  id: string;
  context: number[];
  future: number[];
}
const cases: Case[] = [];
for (const file of ['ETTh1.csv', 'ETTh2.csv']) {
  for (const col of readEttColumns(file)) {
    for (let k = 0; k < ORIGINS; k++) {
      const origin = 11_520 + k * 1_000;
      cases.push({ id: `${col.name}@${origin}`, context: col.values.slice(origin - CONTEXT, origin), future: col.values.slice(origin, origin + 192) });
    }
  }
}
const mean = (v: readonly number[]) => v.reduce((a, b) => a + b, 0) / v.length;
const std = (v: readonly number[]) => {
  const m = mean(v);
  return Math.sqrt(mean(v.map((x) => (x - m) ** 2)));
};
function maseScale(ctx: readonly number[]): number {
  let s = 0;
  for (let t = M; t < ctx.length; t++) s += Math.abs(ctx[t]! - ctx[t - M]!);
  return s / (ctx.length - M);
}

const rows: Record<string, unknown>[] = [];
const md: string[] = [];
for (const h of [48, 96, 192]) {
  const out = forecastTtm(
    { model: TTM_R2_ID, series: cases.map((c) => c.context), horizon: h, quantileLevels: [0.1, 0.9], numSamples: 0, seasonLength: M, seed: 1 },
    { modelsDir, threads: 1 },
    rt,
  );
  let inside = 0;
  let count = 0;
  const per = cases.map((c, i) => {
    const f = out[i]!;
    const y = c.future.slice(0, h);
    const sn = y.map((_, t) => c.context[c.context.length - M + (t % M)]!);
    const scale = maseScale(c.context);
    const mae = (fc: readonly number[]) => mean(y.map((v, t) => Math.abs(v - fc[t]!)));
    for (let t = 0; t < h; t++) {
      if (y[t]! >= f.quantiles[0]![t]! && y[t]! <= f.quantiles[1]![t]!) inside++;
      count++;
    }
    const last = c.context.slice(-512);
    // Level shift: the last day's mean against the 512-point window's mean, in window standard deviations.
    const shift = (mean(last.slice(-24)) - mean(last)) / std(last);
    // and the test period against the context's last day, in the same units
    const futureShift = (mean(y) - mean(last.slice(-24))) / std(last);
    return { id: c.id, h, mase: mae(f.mean) / scale, snaive: mae(sn) / scale, smape: smape(y, f.mean), shift, futureShift, std512: std(last) };
  });
  const sorted = [...per].sort((a, b) => b.mase - a.mase);
  const med = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;
  const summary = {
    h,
    cases: per.length,
    mase: mean(per.map((p) => p.mase)),
    maseMedian: med(per.map((p) => p.mase)),
    snaive: mean(per.map((p) => p.snaive)),
    snaiveMedian: med(per.map((p) => p.snaive)),
    worse: per.filter((p) => p.mase > 1.1 * p.snaive).length,
    coverage80: inside / count,
  };
  rows.push({ ...summary, worst: sorted.slice(0, 6) });
  md.push(
    `## Horizon ${h}${h > 96 ? ' (rolled out)' : ''}`,
    '',
    `TTM MASE mean ${summary.mase.toFixed(3)} (median ${summary.maseMedian.toFixed(3)}); seasonal-naive ${summary.snaive.toFixed(3)} (median ${summary.snaiveMedian.toFixed(3)}); ` +
      `TTM worse than 1.1 × seasonal-naive on ${summary.worse} of ${per.length} cases; 80% interval coverage ${(100 * summary.coverage80).toFixed(1)}%.`,
    '',
    '| case | TTM MASE | seasonal-naive MASE | sMAPE | last-day shift (σ of window) | test-period shift (σ) | σ of window |',
    '|---|---|---|---|---|---|---|',
    ...sorted
      .slice(0, 6)
      .map(
        (p) =>
          `| ${p.id} | ${p.mase.toFixed(2)} | ${p.snaive.toFixed(2)} | ${p.smape.toFixed(1)} | ${p.shift.toFixed(2)} | ${p.futureShift.toFixed(2)} | ${p.std512.toFixed(3)} |`,
      ),
    '',
  );
}
load.push(loadavg()[0]!);
const head = [
  '# TinyTimeMixer R2: worst cases on long hourly series (ETTh1, ETTh2)',
  '',
  `Generated ${new Date().toISOString()} by \`SHARED_DIR=/work/shared nice -n 10 node bench/ttm-worst.ts --origins ${ORIGINS} --context ${CONTEXT}\` on the ${rt.kind} runtime, ` +
    `${((Date.now() - started) / 1000).toFixed(0)} s, load average ${load.map((l) => l.toFixed(2)).join(' → ')} (2 cores shared). ${cases.length} cases (14 columns × ${ORIGINS} origins), ${CONTEXT}-point contexts, season 24.`,
  '',
];
mkdirSync(path.join(repoRoot, 'bench', 'results'), { recursive: true });
writeFileSync(path.join(repoRoot, 'bench', 'results', `${values.out}.json`), `${JSON.stringify({ rows, load }, null, 1)}\n`);
writeFileSync(path.join(repoRoot, 'bench', 'results', `${values.out}.md`), `${[...head, ...md].join('\n')}\n`);
console.log([...head, ...md].join('\n'));
