/**
 * Log-scale candidates for combo and the ensemble (issue #15), offline on M3 point forecasts.
 *
 * The ensemble cannot beat combo on M3 by choosing among auto-ets, auto-arima, theta, mstl and
 * their mean: they err alike (docs/ensemble.md). This study tries candidates that err differently:
 * theta and auto-arima fitted to log(y) and transformed back (R forecast's `lambda = 0`,
 * `biasadj = FALSE`: the back-transformed point forecast is the median, which is what absolute-error
 * measures such as sMAPE and MASE reward on right-skewed data). Series with a value at or below 0
 * are fitted as they are.
 *
 * For each series and model: the point forecast of the test part, and of one backtest window
 * (held-out length min(H, floor(n / 2)), as the ensemble's default), from the raw fits
 * (bench/lib/fitters.ts; calibration does not move point forecasts). Then:
 * - each model alone and equal-weight means (combo = auto-ets, auto-arima, theta);
 * - the service's ensemble rule (src/ensemble/service.ts: sMAPE on the window, candidates more than
 *   25% worse than seasonal naive left out, the best top_n blended with shrunk inverse-score
 *   weights) on the default candidates, with and without the log-scale ones.
 *
 *   SHARED_DIR=/work/shared node bench/m3-log-candidates.ts [--every 3] [--offset 0] [--cache /tmp/m3-log-candidates]
 *
 * Fits are cached per model and subset in --cache (auto-ets takes about 10 minutes for a third of
 * M3 on one thread). Writes bench/results/m3-log-candidates[-o<offset>].{md,json}.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { FitContext } from '../src/engine/models/common.ts';
import { smape as windowSmape } from '../src/ensemble/metrics.ts';
import { heldOutLength, seasonalNaive, selectMembers, shrunkWeights } from '../src/ensemble/service.ts';
import { FITTERS } from './lib/fitters.ts';
import { FREQUENCIES, loadM3, mase, smape, subsetLabel, writeStudy } from './lib/m3.ts';

const { values } = parseArgs({
  options: {
    every: { type: 'string', default: '3' },
    offset: { type: 'string', default: '0' },
    cache: { type: 'string', default: '/tmp/m3-log-candidates' },
  },
});
const every = Number(values.every);
const offset = Number(values.offset);
const series = loadM3().filter((_, i) => i % every === offset);

type PointFit = (y: number[], ctx: FitContext) => number[];
const plain =
  (id: string): PointFit =>
  (y, ctx) =>
    FITTERS[id]!(y, ctx).mean;
/** The model on log(y), its forecast exponentiated (the median); as it is when a value is at or below 0. */
const onLog =
  (id: string): PointFit =>
  (y, ctx) =>
    y.every((v) => v > 0)
      ? FITTERS[id]!(
          y.map((v) => Math.log(v)),
          ctx,
        ).mean.map((v) => Math.exp(v))
      : FITTERS[id]!(y, ctx).mean;
const MODELS: Record<string, PointFit> = {
  'auto-ets': plain('auto-ets'),
  'auto-arima': plain('auto-arima'),
  theta: plain('theta'),
  mstl: plain('mstl'),
  'theta on log': onLog('theta'),
  'auto-arima on log': onLog('auto-arima'),
};

interface Row {
  final: number[];
  back: number[];
}
function fits(model: string): Row[] {
  mkdirSync(values.cache, { recursive: true });
  const file = path.join(values.cache, `${model.replaceAll(' ', '-')}-every${every}-o${offset}.json`);
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as Row[];
  const t0 = performance.now();
  const rows = series.map((s): Row => {
    const ho = heldOutLength(s.horizon, s.train.length);
    return {
      final: MODELS[model]!(s.train, { horizon: s.horizon, seasonLength: s.seasonality }),
      back: MODELS[model]!(s.train.slice(0, s.train.length - ho), { horizon: ho, seasonLength: s.seasonality }),
    };
  });
  writeFileSync(file, JSON.stringify(rows));
  console.error(`${model}: ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  return rows;
}
const rows: Record<string, Row[]> = Object.fromEntries(Object.keys(MODELS).map((m) => [m, fits(m)]));
const mean = (ms: readonly string[], pick: (r: Row) => number[], i: number): number[] =>
  pick(rows[ms[0]!]![i]!).map((_, h) => ms.reduce((a, m) => a + pick(rows[m]![i]!)[h]!, 0) / ms.length);
// combo as the ensemble derives it beside its members: their mean.
const COMBO = ['auto-ets', 'auto-arima', 'theta'];
rows.combo = series.map((_, i) => ({ final: mean(COMBO, (r) => r.final, i), back: mean(COMBO, (r) => r.back, i) }));

/** sMAPE / MASE per frequency and over all series of a forecast per series (floored at 0 for series never negative). */
function scores(forecast: (i: number) => number[]): { cells: string; all: { smape: number; mase: number } } {
  const per: Record<string, { s: number; m: number; n: number }> = {};
  const total = { s: 0, m: 0, n: 0 };
  series.forEach((s, i) => {
    const nonNeg = s.train.every((v) => v >= 0);
    const f = forecast(i).map((v) => (nonNeg ? Math.max(0, v) : v));
    const a = smape(s.test, f);
    const b = mase(s.train, s.test, f, s.seasonality);
    per[s.frequency] ??= { s: 0, m: 0, n: 0 };
    for (const acc of [per[s.frequency]!, total]) {
      acc.s += a;
      acc.m += b;
      acc.n++;
    }
  });
  const cell = (acc: { s: number; m: number; n: number } | undefined): string => (acc ? `${(acc.s / acc.n).toFixed(2)} / ${(acc.m / acc.n).toFixed(3)}` : '-');
  return { cells: [...FREQUENCIES.map((f) => cell(per[f])), `**${cell(total)}**`].join(' | '), all: { smape: total.s / total.n, mase: total.m / total.n } };
}

/** The service's default ensemble rule on raw point forecasts (one window, sMAPE, 25% yardstick margin, top_n, shrunk weights). */
function ensemble(candidates: readonly string[], topN: number): (i: number) => number[] {
  return (i) => {
    const s = series[i]!;
    const ho = heldOutLength(s.horizon, s.train.length);
    const history = s.train.slice(0, s.train.length - ho);
    const actual = s.train.slice(s.train.length - ho);
    const yardstick = windowSmape(actual, seasonalNaive(history, ho, s.seasonality));
    const ranked = candidates
      .map((m) => ({ m, score: windowSmape(actual, rows[m]![i]!.back) }))
      .filter((c) => Number.isFinite(c.score))
      .sort((a, b) => a.score - b.score || a.m.localeCompare(b.m));
    const top = selectMembers(ranked, (c) => c.score, yardstick, topN).members;
    const w = shrunkWeights(top.map((c) => c.score));
    return s.test.map((_, h) => top.reduce((a, c, k) => a + w[k]! * rows[c.m]![i]!.final[h]!, 0));
  };
}

const DEFAULT = ['auto-arima', 'combo', 'theta', 'auto-ets', 'mstl'];
const LOG = ['theta on log', 'auto-arima on log'];
const figures: Record<string, { smape: number; mase: number }> = {};
const header = `| forecast | ${FREQUENCIES.join(' | ')} | all |`;
const rule = `|---|${FREQUENCIES.map(() => '---|').join('')}---|`;
const lines: string[] = ['## Single models and equal-weight means (sMAPE / MASE)', '', header, rule];
const add = (label: string, f: (i: number) => number[]): void => {
  const r = scores(f);
  figures[label] = r.all;
  lines.push(`| ${label} | ${r.cells} |`);
};
for (const m of [...Object.keys(MODELS), 'combo']) add(m, (i) => rows[m]![i]!.final);
for (const set of [
  [...COMBO, 'theta on log'],
  [...COMBO, 'auto-arima on log'],
  [...COMBO, ...LOG],
  ['auto-ets', 'theta', ...LOG],
])
  add(`mean of ${set.join(', ')}`, (i) => mean(set, (r) => r.final, i));
lines.push('', "## The service's ensemble rule (one window, sMAPE, 25% yardstick margin, shrunk weights)", '', header, rule);
for (const [label, cands] of [
  ['default candidates', DEFAULT],
  ['default candidates and theta on log', [...DEFAULT, 'theta on log']],
  ['default candidates and both log-scale ones', [...DEFAULT, ...LOG]],
  ['combo, theta on log, auto-arima on log', ['combo', ...LOG]],
] as const) {
  add(`${label}: top 3 (the default top_n)`, ensemble(cands, 3));
  add(`${label}: every candidate (top_n 10)`, ensemble(cands, 10));
}
console.log(lines.join('\n'));
writeStudy(
  offset === 0 ? 'm3-log-candidates' : `m3-log-candidates-o${offset}`,
  { every, offset, series: series.length, figures },
  'M3: log-scale candidates for combo and the ensemble (point forecasts)',
  `by \`node bench/m3-log-candidates.ts ${process.argv.slice(2).join(' ')}\` over ${series.length} M3 series (${subsetLabel(every)}${offset ? `, offset ${offset}` : ''}), official horizons, raw point forecasts (calibration moves no point forecast). Cells: sMAPE / MASE as bench/m3-accuracy.ts scores them.`,
  lines,
);
