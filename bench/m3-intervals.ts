/**
 * Interval calibration study on M3: for each model and series, the model's own (uncalibrated)
 * forecast of the test part and the standardised errors |z| of its backtests at up to --windows
 * origins (stats/calibrate.ts `backtestZ`, the refits the service runs). Calibration rules are then
 * applied offline to the same numbers, so rules are compared on identical fits:
 * 80% coverage and WQL over the deciles (as bench/m3-accuracy.ts scores them) per frequency.
 *   SHARED_DIR=/work/shared nice -n 15 node bench/m3-intervals.ts --every 10 [--models naive,theta] [--windows 5]
 *   ... --from /tmp/z.json          # re-score saved backtests (written with --save /tmp/z.json)
 * Writes bench/results/m3-intervals.{json,md}. In-process, one thread (a study, not a speed figure).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { FitContext } from '../src/engine/models/common.ts';
import { calibrationMinTrain, CALIBRATION_WINDOWS } from '../src/engine/models/common.ts';
import { arimaForecast } from '../src/engine/models/arima.ts';
import { comboForecast } from '../src/engine/models/combo.ts';
import { etsForecast } from '../src/engine/models/ets.ts';
import { mstlForecast } from '../src/engine/models/mstl.ts';
import { driftForecast, naiveForecast, seasonalNaiveForecast } from '../src/engine/models/simple.ts';
import { thetaForecast } from '../src/engine/models/theta.ts';
import { backtestZ, factorFromZ } from '../src/engine/stats/calibrate.ts';
import type { GaussianForecast } from '../src/engine/stats/distribution.ts';
import { qnorm } from '../src/engine/stats/normal.ts';
import { FREQUENCIES, loadM3, repoRoot } from './lib/m3.ts';

const FITTERS: Record<string, (y: readonly number[], ctx: FitContext) => GaussianForecast> = {
  naive: naiveForecast,
  'seasonal-naive': seasonalNaiveForecast,
  drift: driftForecast,
  'auto-ets': etsForecast,
  'auto-arima': arimaForecast,
  theta: (y, ctx) => thetaForecast(y, ctx),
  mstl: mstlForecast,
  combo: comboForecast,
};

const { values } = parseArgs({
  options: {
    every: { type: 'string', default: '10' },
    models: { type: 'string' },
    windows: { type: 'string', default: '5' },
    save: { type: 'string' },
    from: { type: 'string' },
    out: { type: 'string', default: 'm3-intervals' },
  },
});
const every = Number(values.every);
const series = loadM3().filter((_, i) => i % every === 0);
const DECILES = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9];

interface Case {
  /** Uncalibrated forecast of the test part. */
  mean: number[];
  sdLow: number[];
  sdHigh: number[];
  /** |z| per backtest window (newest first), per step. */
  z: number[][];
}
type Data = Record<string, Case[]>;

let data: Data;
if (values.from) data = JSON.parse(readFileSync(values.from, 'utf8')) as Data;
else {
  data = {};
  const models = values.models?.split(',') ?? Object.keys(FITTERS);
  for (const model of models) {
    const fit = FITTERS[model];
    if (!fit) throw new Error(`unknown model ${model}`);
    const t0 = performance.now();
    data[model] = series.map((s) => {
      const ctx = { horizon: s.horizon, seasonLength: s.seasonality };
      const fc = fit(s.train, ctx);
      const refit = fc.refit ?? ((train: number[], h: number) => fit(train, { horizon: h, seasonLength: s.seasonality }));
      const windows = Number(values.windows);
      const z = backtestZ(s.train, s.horizon, refit, { windows, minTrain: calibrationMinTrain(4, s.seasonality) });
      return { mean: fc.mean, sdLow: fc.sdLow, sdHigh: fc.sdHigh, z };
    });
    console.log(`${model}: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
  if (values.save) writeFileSync(values.save, JSON.stringify(data));
}

/** A calibration rule: the factor (or one per step) from a series' backtest windows (null = leave as is). */
type Rule = (z: number[][], horizon: number) => number | number[] | null;
const Z80 = qnorm(0.9);
function typeSeven(sorted: readonly number[], p: number): number {
  const h = (sorted.length - 1) * p;
  const lo = Math.floor(h);
  const hi = Math.min(sorted.length - 1, lo + 1);
  return sorted[lo]! + (h - lo) * (sorted[hi]! - sorted[lo]!);
}
/** Variants: `windows` used, |z| quantile `level`, shrink weight k / (k + `shrink`) in log scale. */
function variant(windows: number, level: number, shrink: number): Rule {
  return (zw) => {
    const use = zw.slice(0, windows);
    const z = use
      .flat()
      .filter((v) => Number.isFinite(v))
      .sort((a, b) => a - b);
    if (z.length === 0) return null;
    const raw = Math.min(5, Math.max(0.2, typeSeven(z, level) / Z80));
    const w = use.length / (use.length + shrink);
    return Math.exp(w * Math.log(raw));
  };
}
/**
 * Per-step factors: the growth of |z| with the step, b in |z_h| ~ (h + 1)^b (least squares of
 * log |z| on log(h + 1) over all windows, b clamped to [lo, hi]), taken out before the quantile
 * and put back per step.
 */
function sloped(windows: number, level: number, lo: number, hi: number): Rule {
  return (zw, horizon) => {
    const pts: [number, number][] = [];
    for (const w of zw.slice(0, windows)) {
      w.forEach((v, h) => {
        if (Number.isFinite(v) && v > 0) pts.push([Math.log(h + 1), Math.log(v)]);
      });
    }
    if (pts.length === 0) return null;
    const mx = pts.reduce((a, p) => a + p[0], 0) / pts.length;
    const my = pts.reduce((a, p) => a + p[1], 0) / pts.length;
    const sxx = pts.reduce((a, p) => a + (p[0] - mx) ** 2, 0);
    const sxy = pts.reduce((a, p) => a + (p[0] - mx) * (p[1] - my), 0);
    const b = sxx > 0 ? Math.min(hi, Math.max(lo, sxy / sxx)) : 0;
    const g = (h: number): number => Math.exp(b * (Math.log(h + 1) - mx));
    const z: number[] = [];
    for (const w of zw.slice(0, windows)) {
      w.forEach((v, h) => {
        if (Number.isFinite(v)) z.push(v / g(h));
      });
    }
    z.sort((x, y) => x - y);
    const base = typeSeven(z, level) / Z80;
    return Array.from({ length: horizon }, (_, h) => Math.min(5, Math.max(0.2, base * g(h))));
  };
}
const RULES: Record<string, Rule> = {
  none: () => 1,
  [`the service's (${CALIBRATION_WINDOWS} windows, Q0.85, no shrinking)`]: (z) => factorFromZ(z.slice(0, CALIBRATION_WINDOWS))?.factor ?? null,
  ...(process.env.RULES === 'all'
    ? {
        'before 2026-11-26: w3 q0.85, log c shrunk by k/(k+0.5)': variant(3, 0.85, 0.5),
        'w5 q0.85 shrink 0.5': variant(5, 0.85, 0.5),
        'w5 q0.85 no shrink': variant(5, 0.85, 0),
        'w3 q0.9 shrink 0.5': variant(3, 0.9, 0.5),
        'w5 q0.9 shrink 0.5': variant(5, 0.9, 0.5),
        'w5 q0.8 no shrink': variant(5, 0.8, 0),
        'w3 q0.85 per-step slope in [0, 1]': sloped(3, 0.85, 0, 1),
        'w3 q0.85 per-step slope in [-0.5, 1]': sloped(3, 0.85, -0.5, 1),
        'w3 q0.8 per-step slope in [0, 1]': sloped(3, 0.8, 0, 1),
        'w5 q0.8 per-step slope in [0, 1]': sloped(5, 0.8, 0, 1),
      }
    : {}),
};

const z80 = qnorm(0.9);
function score(model: string, rule: Rule, idx: readonly number[]): { coverage: number; wql: number } {
  let inside = 0;
  let count = 0;
  let absSum = 0;
  const loss = new Array<number>(DECILES.length).fill(0);
  const zq = DECILES.map((p) => qnorm(p));
  for (const i of idx) {
    const s = series[i]!;
    const c = data[model]![i]!;
    const r = rule(c.z, s.horizon) ?? 1;
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

const table: Record<string, Record<string, Record<string, { coverage: number; wql: number }>>> = {};
const lines: string[] = [];
for (const [name, rule] of Object.entries(RULES)) {
  table[name] = {};
  lines.push(`### rule: ${name}`, '', '| model | yearly | quarterly | monthly | other | all |', '|---|---|---|---|---|---|');
  for (const model of Object.keys(data)) {
    const row: Record<string, { coverage: number; wql: number }> = {};
    for (const f of FREQUENCIES)
      row[f] = score(
        model,
        rule,
        series.map((s, i) => (s.frequency === f ? i : -1)).filter((i) => i >= 0),
      );
    row.all = score(
      model,
      rule,
      series.map((_, i) => i),
    );
    table[name][model] = row;
    lines.push(`| ${model} | ${[...FREQUENCIES, 'all'].map((f) => `${(100 * row[f]!.coverage).toFixed(1)}% / ${row[f]!.wql.toFixed(4)}`).join(' | ')} |`);
  }
  lines.push('');
}
console.log(lines.join('\n'));
const dir = path.join(repoRoot, 'bench', 'results');
writeFileSync(
  path.join(dir, `${values.out}.json`),
  `${JSON.stringify({ generatedAt: new Date().toISOString(), every, series: series.length, table }, null, 2)}\n`,
);
writeFileSync(
  path.join(dir, `${values.out}.md`),
  [
    '# M3: 80% interval coverage / WQL per calibration rule',
    '',
    `Generated ${new Date().toISOString()} by \`node bench/m3-intervals.ts ${process.argv.slice(2).join(' ')}\` over ${series.length} M3 series (every ${every}th), official horizons. Each cell: share of test values inside the 80% interval (target 77-83%) / weighted quantile loss over the nine deciles (lower is better). Every rule is applied to the same fits and backtests.`,
    '',
    ...lines,
  ].join('\n'),
);
