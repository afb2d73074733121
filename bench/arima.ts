/**
 * auto-arima speed on one core: the first 50 M3 monthly series (horizon 18), fitted one after
 * the other in this process (no worker pool), as the issue measured R's auto.arima (1.73
 * series/s on one core). Reports series per CPU-second of this process (the figure that
 * compares with R's one-core time on a machine shared with other work) and per wall-second,
 * and the sMAPE of those series as an accuracy check. Writes bench/results/arima.{json,md}.
 *   SHARED_DIR=/work/shared npm run bench:arima                 # first 50 monthly series
 *   SHARED_DIR=/work/shared npm run bench:arima -- --limit 200  # the first 200
 *   ... -- --rounds 3                                            # best of 3 passes
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { arimaForecast } from '../src/engine/models/arima.ts';
import { loadM3, repoRoot, smape } from './lib/m3.ts';

const R_SERIES_PER_SECOND = 1.73;
const { values } = parseArgs({
  options: { limit: { type: 'string', default: '50' }, rounds: { type: 'string', default: '3' }, out: { type: 'string' } },
});
const limit = Number(values.limit);
const rounds = Math.max(1, Number(values.rounds));
const series = loadM3('monthly').slice(0, limit);

interface Pass {
  cpuSeconds: number;
  wallSeconds: number;
}
const passes: Pass[] = [];
let smapes: number[] = [];
let models: string[] = [];
// One warm-up series so the first pass does not pay the JIT alone.
arimaForecast(series[0]!.train, { seasonLength: series[0]!.seasonality, horizon: series[0]!.horizon });
for (let r = 0; r < rounds; r++) {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const s: number[] = [];
  const m: string[] = [];
  for (const x of series) {
    const fc = arimaForecast(x.train, { seasonLength: x.seasonality, horizon: x.horizon });
    s.push(smape(x.test, fc.mean));
    m.push(String(fc.info?.model ?? ''));
  }
  const wallSeconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  passes.push({ cpuSeconds: (cpu.user + cpu.system) / 1e6, wallSeconds });
  smapes = s;
  models = m;
  console.log(
    `pass ${r + 1}: ${(series.length / passes.at(-1)!.cpuSeconds).toFixed(1)} series/CPU-s, ${(series.length / wallSeconds).toFixed(1)} series/wall-s`,
  );
}
const best = passes.reduce((a, b) => (b.cpuSeconds < a.cpuSeconds ? b : a));
const perCpu = series.length / best.cpuSeconds;
const meanSmape = smapes.reduce((a, b) => a + b, 0) / smapes.length;
console.log(
  `auto-arima: ${perCpu.toFixed(1)} series/CPU-s (best of ${rounds}), ${(perCpu / R_SERIES_PER_SECOND).toFixed(1)}x R; sMAPE ${meanSmape.toFixed(3)} on ${series.length} series`,
);
const report = {
  generatedAt: new Date().toISOString(),
  node: process.version,
  series: series.length,
  rounds,
  passes,
  seriesPerCpuSecond: perCpu,
  seriesPerWallSecond: series.length / best.wallSeconds,
  rSeriesPerSecond: R_SERIES_PER_SECOND,
  ratioToR: perCpu / R_SERIES_PER_SECOND,
  smape: meanSmape,
  models,
};
const dir = path.join(repoRoot, 'bench', 'results');
mkdirSync(dir, { recursive: true });
const base = path.resolve(dir, values.out ?? 'arima');
writeFileSync(`${base}.json`, `${JSON.stringify(report, null, 2)}\n`);
writeFileSync(
  `${base}.md`,
  [
    '# auto-arima speed on one core',
    '',
    `Generated ${report.generatedAt} by \`npm run bench:arima\` (${report.node}): the first ${series.length} M3 monthly series (horizon 18), fitted one after the other on the main thread, best of ${rounds} passes.`,
    '',
    '| measure | value |',
    '|---|---|',
    `| series per CPU-second | ${perCpu.toFixed(1)} |`,
    `| series per wall-second | ${report.seriesPerWallSecond.toFixed(1)} |`,
    `| R's auto.arima, one core (issue #14) | ${R_SERIES_PER_SECOND} |`,
    `| ratio to R | ${report.ratioToR.toFixed(1)}× |`,
    `| sMAPE on these series | ${meanSmape.toFixed(3)} |`,
    '',
    'CPU seconds (user + system of this process) are the one-core figure: the machine is shared with',
    'other work, so wall time includes waiting for a core. R is not installed here; its figure is the',
    "issue's measurement on the same 50 series on one core.",
    '',
  ].join('\n'),
);
