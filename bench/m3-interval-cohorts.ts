/**
 * How much of a model's 80% coverage on an M3 frequency is the calendar (issue #15).
 *
 * M3's series share calendar periods: hundreds of quarterly series have their test period in the
 * same years, so a shock in those years is in every one of their test periods and in none of
 * their backtests. Coverage per frequency then moves with a handful of cohorts, not 756
 * independent series. This study scores the service's calibration (the same fits and backtests
 * as bench/m3-intervals-level.ts, cached there) per cohort (the year the test period starts, and
 * the M3 category), and gives each cell a 95% interval by a cluster bootstrap: clusters are
 * (category, test start year), resampled with replacement 2,000 times (seeded).
 *
 *   SHARED_DIR=/work/shared node bench/m3-interval-cohorts.ts [--models naive,drift,theta,mstl,ces] [--every 1] [--cache /tmp/m3-intervals-level]
 *
 * Writes bench/results/m3-interval-cohorts.{md,json}. In-process, one thread.
 */
import { parseArgs } from 'node:util';
import { mulberry32 } from '../src/engine/stats/prng.ts';
import { type Case, fitCases, serviceFactor } from './lib/backtests.ts';
import { FREQUENCIES, intervalScore, loadM3, type M3Series, subsetLabel, writeStudy } from './lib/m3.ts';

const { values } = parseArgs({
  options: {
    models: { type: 'string', default: 'naive,seasonal-naive,drift,theta,mstl,ces' },
    every: { type: 'string', default: '1' },
    cache: { type: 'string', default: '/tmp/m3-intervals-level' },
    out: { type: 'string', default: 'm3-interval-cohorts' },
  },
});
const every = Number(values.every);
const series = loadM3().filter((_, i) => i % every === 0);
const models = values.models.split(',');
const PER_YEAR: Record<string, number> = { yearly: 1, quarterly: 4, monthly: 12, other: 1 };

/** The year the test period starts (M3's `start` is [year, period]). */
function testStartYear(s: M3Series & { start?: number[] }): number {
  const [year, period] = s.start ?? [0, 1];
  const per = PER_YEAR[s.frequency]!;
  return year! + Math.floor((period! - 1 + s.train.length) / per);
}
const category = (s: M3Series): string => (s as M3Series & { category?: string }).category ?? '?';

/** Test values inside the calibrated 80% interval, per series. */
function insidePerSeries(cases: Case[]): number[] {
  return series.map((s, i) => intervalScore(series, cases, (k) => serviceFactor(cases[k]!, series[k]!.horizon), [i]).coverage * s.test.length);
}

/** 2.5% and 97.5% quantiles of the coverage when the clusters of `idx` are resampled with replacement. */
function clusterInterval(inside: number[], idx: number[], reps = 2000): [number, number] {
  const clusters = new Map<string, { inside: number; count: number }>();
  for (const i of idx) {
    const s = series[i]!;
    const key = `${category(s)} ${testStartYear(s)}`;
    const c = clusters.get(key) ?? { inside: 0, count: 0 };
    c.inside += inside[i]!;
    c.count += s.test.length;
    clusters.set(key, c);
  }
  const list = [...clusters.values()];
  const draw = mulberry32(20261127);
  const out: number[] = [];
  for (let r = 0; r < reps; r++) {
    let a = 0;
    let b = 0;
    for (let k = 0; k < list.length; k++) {
      const c = list[Math.floor(draw() * list.length)]!;
      a += c.inside;
      b += c.count;
    }
    out.push(a / b);
  }
  out.sort((x, y) => x - y);
  return [out[Math.floor(0.025 * reps)]!, out[Math.floor(0.975 * reps)]!];
}

const pct = (v: number): string => `${(100 * v).toFixed(1)}`;
const inside = Object.fromEntries(models.map((m) => [m, insidePerSeries(fitCases(m, series, values.cache, `every${every}`))]));
const coverageOf = (m: string, idx: readonly number[]): number =>
  idx.reduce((a, i) => a + inside[m]![i]!, 0) / idx.reduce((a, i) => a + series[i]!.test.length, 0);

const figures: Record<string, unknown> = {};
const lines: string[] = [
  '## Coverage per frequency with a 95% cluster-bootstrap interval',
  '',
  `Clusters: (category, year the test period starts). Cells: coverage [2.5%, 97.5%]; (clusters).`,
  '',
  `| model | ${FREQUENCIES.join(' | ')} |`,
  `|---|${FREQUENCIES.map(() => '---|').join('')}`,
];
for (const m of models) {
  const cells = FREQUENCIES.map((f) => {
    const idx = series.flatMap((s, i) => (s.frequency === f ? [i] : []));
    const [lo, hi] = clusterInterval(inside[m]!, idx);
    const clusters = new Set(idx.map((i) => `${category(series[i]!)} ${testStartYear(series[i]!)}`)).size;
    figures[`${m} ${f}`] = { coverage: coverageOf(m, idx), lo, hi, clusters, series: idx.length };
    return `${pct(coverageOf(m, idx))} [${pct(lo)}, ${pct(hi)}] (${clusters})`;
  });
  lines.push(`| ${m} | ${cells.join(' | ')} |`);
}
for (const f of FREQUENCIES) {
  lines.push(
    '',
    `## ${f}: coverage per cohort (cohorts of at least 15 series)`,
    '',
    `| cohort | series | ${models.join(' | ')} |`,
    `|---|---|${models.map(() => '---|').join('')}`,
  );
  const groups = new Map<string, number[]>();
  series.forEach((s, i) => {
    if (s.frequency !== f) return;
    for (const key of [`test starts ${testStartYear(s)}`, `category ${category(s)}`]) groups.set(key, [...(groups.get(key) ?? []), i]);
  });
  for (const [key, idx] of [...groups.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    if (idx.length < 15) continue;
    lines.push(`| ${key} | ${idx.length} | ${models.map((m) => pct(coverageOf(m, idx))).join(' | ')} |`);
  }
}
console.log(lines.join('\n'));
writeStudy(
  values.out,
  { every, series: series.length, figures },
  'M3: 80% coverage per calendar cohort (calibration study)',
  `by \`node bench/m3-interval-cohorts.ts ${process.argv.slice(2).join(' ')}\` over ${series.length} M3 series (${subsetLabel(every)}), the service's calibration (each model's fits and backtests as bench/m3-intervals-level.ts caches them). Coverage: share of test values inside the 80% interval (target 77-83%).`,
  lines,
);
