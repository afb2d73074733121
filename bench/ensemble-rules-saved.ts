/**
 * Combination rules scored offline on ensemble runs saved with --save, on several data sets at once:
 * every candidate's final forecast and one-window backtest score per series, as the service computed
 * them, re-combined under each rule and scored against what followed. Δ is the mean per-series
 * difference from combo (the equal mean of auto-ets, auto-arima and theta, as the ensemble derives it)
 * with its standard error; negative is better.
 *   SHARED_DIR=/work/shared npm run bench:ensemble -- --variants --save /tmp/ens-m3.json
 *   SHARED_DIR=/work/shared node bench/ett-ensemble.ts --daily --save /tmp/ens-daily.json
 *   SHARED_DIR=/work/shared node bench/ett-ensemble.ts --save /tmp/ens-hourly.json
 *   SHARED_DIR=/work/shared BENCH_MODELS_DIR=/work/shared/models node bench/ett-ensemble.ts --save /tmp/ens-hourly-ttm.json
 *   SHARED_DIR=/work/shared node bench/ensemble-rules-saved.ts M3=/tmp/ens-m3.json daily=/tmp/ens-daily.json ... [--out NAME]
 * M3 is scored by sMAPE and MASE, the ETT sets by MASE (scaled by the context's seasonal naive error).
 * Writes bench/results/NAME.md (default ensemble-rules-saved).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { selectMembers, shrunkWeights } from '../src/ensemble/service.ts';
import { loadM3, mase, repoRoot, smape } from './lib/m3.ts';

const { values, positionals } = parseArgs({
  options: { out: { type: 'string', default: 'ensemble-rules-saved' }, subsets: { type: 'boolean', default: false } },
  allowPositionals: true,
});
type D = { scores: Record<string, number>; means: Record<string, number[]>; yardstick: number };
const avg = (ms: number[][], w: number[]): number[] => ms[0]!.map((_, h) => ms.reduce((a, m, k) => a + w[k]! * m[h]!, 0));
const ranked = (d: D): string[] => Object.keys(d.scores).sort((a, b) => d.scores[a]! - d.scores[b]! || a.localeCompare(b));

/** The service's rule with a yardstick margin and a top_n: its weights (`shrunkWeights`: half 1/score, half equal). */
function serviceRule(d: D, top: number, margin: number): number[] {
  const ms = selectMembers(ranked(d), (m) => d.scores[m]!, d.yardstick, top, margin).members;
  return avg(
    ms.map((m) => d.means[m]!),
    shrunkWeights(ms.map((m) => d.scores[m]!)),
  );
}
const RULES: [string, (d: D) => number[]][] = [];
for (const top of [3, 99]) {
  for (const margin of [1, 1.25, 1.5, 2, Number.POSITIVE_INFINITY]) {
    RULES.push([
      `${top === 99 ? 'every candidate' : `top ${top}`}, yardstick ${Number.isFinite(margin) ? `x${margin}` : 'none'}`,
      (d) => serviceRule(d, top, margin),
    ]);
  }
}
RULES.push(['best candidate alone', (d) => d.means[ranked(d)[0]!]!]);
/** The equal mean of the named candidates' forecasts. */
const equalMean = (d: D, ms: string[]): number[] =>
  avg(
    ms.map((m) => d.means[m]!),
    ms.map(() => 1 / ms.length),
  );
RULES.push([
  'median of every candidate, step by step',
  (d) => {
    const ms = Object.values(d.means);
    return ms[0]!.map((_, h) => {
      const v = ms.map((m) => m[h]!).sort((a, b) => a - b);
      const k = v.length;
      return k % 2 === 1 ? v[(k - 1) / 2]! : (v[k / 2 - 1]! + v[k / 2]!) / 2;
    });
  },
]);
// Forecast pooling (Kourentzes, Barrow & Petropoulos 2019, simplified to a fixed gap): the candidates
// whose backtest score is within a share of the best one's, equal weights.
for (const gap of [0.1, 0.25, 0.5, 1]) {
  RULES.push([
    `pool: within ${gap * 100}% of the best backtest score, equal weights`,
    (d) => {
      const r = ranked(d);
      return equalMean(
        d,
        r.filter((m) => d.scores[m]! <= (1 + gap) * d.scores[r[0]!]!),
      );
    },
  ]);
}
RULES.push([
  'every candidate but the worst on the backtest, equal weights',
  (d) => equalMean(d, ranked(d).slice(0, Math.max(1, Object.keys(d.scores).length - 1))),
]);
if (values.subsets) {
  // --subsets: every fixed set of three candidates, blended whole (no ranking, no yardstick, the
  // service's weights): could a smaller default candidate set make top 3 blend everything?
  const TTM = 'ibm-granite/granite-timeseries-ttm-r2';
  const pool = ['auto-ets', 'auto-arima', 'theta', 'mstl', 'combo', TTM];
  for (let a = 0; a < pool.length; a++) {
    for (let b = a + 1; b < pool.length; b++) {
      for (let c = b + 1; c < pool.length; c++) {
        const set = [pool[a]!, pool[b]!, pool[c]!];
        const label = set.map((m) => (m === TTM ? 'ttm' : m)).join(', ');
        RULES.push([
          `fixed set: ${label} (TTM absent where padded)`,
          (d) => {
            const present = set.filter((m) => d.means[m]);
            return serviceRule({ ...d, scores: Object.fromEntries(present.map((m) => [m, d.scores[m]!])) }, 3, Number.POSITIVE_INFINITY);
          },
        ]);
      }
    }
  }
}

interface Set {
  name: string;
  det: D[];
  score: (i: number, f: number[]) => number;
}
const sets: Set[] = [];
for (const arg of positionals) {
  const [name, file] = arg.split('=') as [string, string];
  const j = JSON.parse(readFileSync(file, 'utf8'));
  if (j.cases) {
    const M = j.seasonLength as number;
    const cases = j.cases as { context: number[]; actual: number[] }[];
    sets.push({
      name: `${name} MASE (${cases.length})`,
      det: j.detail,
      score: (i, fc) => mase(cases[i]!.context, cases[i]!.actual, fc, M),
    });
  } else {
    const series = loadM3().filter((_, i) => i % j.every === 0);
    sets.push({ name: `${name} sMAPE (${series.length})`, det: j.detail, score: (i, fc) => smape(series[i]!.test, fc) });
    sets.push({ name: `${name} MASE`, det: j.detail, score: (i, fc) => mase(series[i]!.train, series[i]!.test, fc, series[i]!.seasonality) });
  }
}
const mean = (v: number[]): number => v.reduce((a, b) => a + b, 0) / v.length;
const base = sets.map((s) => s.det.map((d, i) => s.score(i, d.means.combo!)));
const lines = [
  '# Ensemble combination rules on saved runs, several data sets',
  '',
  `Generated ${new Date().toISOString()} by \`node bench/ensemble-rules-saved.ts ${process.argv.slice(2).join(' ')}\` (commands in the file's header). Each cell: the rule's mean score, then Δ against combo (derived from its members in the same runs) ± its standard error, paired over the series; negative Δ is better than combo.`,
  '',
  `| rule | ${sets.map((s) => s.name).join(' | ')} |`,
  `|---|${sets.map(() => '---').join('|')}|`,
  `| combo | ${sets.map((_, k) => mean(base[k]!).toFixed(4)).join(' | ')} |`,
];
for (const [name, f] of RULES) {
  const cells = sets.map((s, k) => {
    const v = s.det.map((d, i) => s.score(i, f(d)));
    const dv = v.map((x, i) => x - base[k]![i]!);
    const m = mean(dv);
    const se = Math.sqrt(dv.reduce((a, b) => a + (b - m) ** 2, 0) / (dv.length - 1) / dv.length);
    return `${mean(v).toFixed(4)} (${m >= 0 ? '+' : ''}${m.toFixed(4)} ± ${se.toFixed(4)})`;
  });
  lines.push(`| ${name} | ${cells.join(' | ')} |`);
}
lines.push('');
writeFileSync(path.join(repoRoot, 'bench', 'results', `${values.out}.md`), lines.join('\n'));
console.log(lines.join('\n'));
