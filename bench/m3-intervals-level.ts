/**
 * Interval calibration study on M3 (issue #15): backtest errors standardised by the final
 * forecast's sd, with and without rescaling each window's errors to the level at the forecast
 * origin, against the service's rule (stats/calibrate.ts: each error over its own forecast's sd).
 *
 * The idea tested: on positive data whose errors grow with the level, a backtest window at an
 * earlier origin under-states the errors at the last origin. Rescaling the window's errors by
 * (L_n / L_o)^p, L_t the mean of the max(m, 3) points before t, and dividing them by the final
 * forecast's sd asks directly "what multiple of the final sd would have covered the backtests at
 * today's level". Series with a non-positive value keep the service's rule.
 *
 *   SHARED_DIR=/work/shared node bench/m3-intervals-level.ts [--models drift,naive,theta,ces] [--every 1] [--cache /tmp/study]
 *
 * The model's fit and backtests (the refits or, where the model has one, the search again, as the
 * service) are cached per model in --cache (lib/backtests.ts); every rule is applied to the same numbers. Writes
 * bench/results/m3-intervals-level.{md,json}. In-process, one thread.
 */
import { parseArgs } from 'node:util';
import { type BacktestWindow, factorFromWindows } from '../src/engine/stats/calibrate.ts';
import { type Case, fitCases, serviceFactor } from './lib/backtests.ts';
import { intervalScore, loadM3, type M3Series, scoreByFrequency, subsetLabel, writeStudy } from './lib/m3.ts';

const { values } = parseArgs({
  options: {
    models: { type: 'string', default: 'naive,drift,theta,ces' },
    every: { type: 'string', default: '1' },
    cache: { type: 'string', default: '/tmp/m3-intervals-level' },
    out: { type: 'string', default: 'm3-intervals-level' },
  },
});
const every = Number(values.every);
const series = loadM3().filter((_, i) => i % every === 0);

type Rule = (s: M3Series, c: Case) => number;
const factorOf = (ws: BacktestWindow[], h: number): number => factorFromWindows(ws, h)?.factor ?? 1;
const finalSd = (c: Case, e: number, t: number): number => (e >= 0 ? c.sdHigh[t]! : c.sdLow[t]!);
const usable = (z: number): number => (Number.isFinite(z) ? z : Number.NaN);
const service: Rule = (s, c) => serviceFactor(c, s.horizon);
function levelAt(y: readonly number[], t: number, k: number): number {
  let sum = 0;
  for (let i = t - k; i < t; i++) sum += y[i]!;
  return sum / k;
}
/**
 * How the series' step-to-step changes grow with its level: the least-squares slope b of
 * log |y_t - y_{t-1}| on log L_t (L_t the mean of the k points before t), kept in [0, 1]
 * (Taylor's power law: sd proportional to level^b; 1 for errors proportional to the level, 0 for
 * errors that do not grow with it). Zero changes are left out; too few points give 0.
 */
function levelPower(y: readonly number[], k: number): number {
  const pts: [number, number][] = [];
  for (let t = k; t < y.length; t++) {
    const d = Math.abs(y[t]! - y[t - 1]!);
    const l = levelAt(y, t, k);
    if (d > 0 && l > 0) pts.push([Math.log(l), Math.log(d)]);
  }
  if (pts.length < 4) return 0;
  const mx = pts.reduce((a, p) => a + p[0], 0) / pts.length;
  const my = pts.reduce((a, p) => a + p[1], 0) / pts.length;
  const sxx = pts.reduce((a, p) => a + (p[0] - mx) ** 2, 0);
  const sxy = pts.reduce((a, p) => a + (p[0] - mx) * (p[1] - my), 0);
  return sxx > 0 ? Math.min(1, Math.max(0, sxy / sxx)) : 0;
}
/** Errors over the final forecast's sd, each window's rescaled by (L_n / L_o)^pow (pow 0: none; 'data': levelPower). */
function rescaled(pow: number | 'data', by: 'final' | 'own'): Rule {
  return (s, c) => {
    const y = s.train;
    if (pow !== 0 && !y.every((v) => v > 0)) return service(s, c);
    const k = Math.max(s.seasonality, 3);
    const ln = levelAt(y, y.length, k);
    const b = pow === 'data' ? levelPower(y, k) : pow;
    return factorOf(
      c.w.map((w) => {
        const r = b === 0 ? 1 : (ln / levelAt(y, w.o, Math.min(k, w.o))) ** b;
        return { origin: w.o, z: w.e.map((e, t) => usable(Math.abs((e * r) / (by === 'final' ? finalSd(c, e, t) : w.sdo[t]!)))) };
      }),
      s.horizon,
    );
  };
}
const RULES: Record<string, Rule> = {
  "the service's (each error over its own forecast's sd)": service,
  'over the final sd': rescaled(0, 'final'),
  'rescaled to the last level, over the final sd': rescaled(1, 'final'),
  'rescaled by the square root of the level ratio, over the final sd': rescaled(0.5, 'final'),
  'rescaled to the last level, over its own sd': rescaled(1, 'own'),
  "rescaled by the level ratio to the power the series' changes show, over the final sd": rescaled('data', 'final'),
  "geometric mean of the service's and the square-root rule's factors": (s, c) => Math.sqrt(service(s, c) * rescaled(0.5, 'final')(s, c)),
};

function score(cases: Case[], rule: Rule, idx: readonly number[]): { coverage: number; wql: number } {
  return intervalScore(series, cases, (i) => rule(series[i]!, cases[i]!), idx);
}

const table: Record<string, Record<string, Record<string, { coverage: number; wql: number }>>> = {};
const lines: string[] = [];
for (const model of values.models.split(',')) {
  const cases = fitCases(model, series, values.cache, `every${every}`);
  table[model] = {};
  lines.push(`### ${model}`, '', '| rule | yearly | quarterly | monthly | other | all |', '|---|---|---|---|---|---|');
  for (const [name, rule] of Object.entries(RULES)) {
    const { row, cells } = scoreByFrequency(series, (idx) => score(cases, rule, idx));
    table[model][name] = row;
    lines.push(`| ${name} | ${cells} |`);
  }
  lines.push('');
}
console.log(lines.join('\n'));
writeStudy(
  values.out,
  { every, series: series.length, table },
  'M3: backtest errors rescaled to the last level (calibration study)',
  `by \`node bench/m3-intervals-level.ts ${process.argv.slice(2).join(' ')}\` over ${series.length} M3 series (${subsetLabel(every)}), official horizons. Each cell: share of test values inside the 80% interval (target 77-83%) / weighted quantile loss over the nine deciles (lower is better). Every rule is applied to the same fits and backtests; the first row is the service's (on all of M3 it reproduces bench/results/m3-accuracy.md).`,
  lines,
);
