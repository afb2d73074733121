/**
 * Speed of every built-in model on M3 monthly (1428 series, horizon 18) through the engine's
 * whole worker pool in one process: series per second. Writes bench/results/speed.{json,md}.
 *   SHARED_DIR=/work/shared npm run bench:speed               # all 1428 monthly series
 *   SHARED_DIR=/work/shared npm run bench:speed -- --limit 200 # the first 200
 * BENCH_POOL sets the pool size (default 2).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { BUILTIN_MODELS as MODEL_IMPLS } from '../src/engine/registry.ts';
import { loadM3, repoRoot } from './lib/m3.ts';
import { benchEngine, forecastAll } from './lib/run.ts';

const { values } = parseArgs({ options: { limit: { type: 'string' }, models: { type: 'string' } } });
const all = loadM3('monthly');
const series = values.limit ? all.slice(0, Number(values.limit)) : all;
const wanted = values.models?.split(',');
const { engine, poolSize } = benchEngine();
const rows: { model: string; series: number; seconds: number; seriesPerSecond: number }[] = [];
try {
  await forecastAll(engine, poolSize, 'naive', series.slice(0, 8)); // start the threads and their WASM
  for (const impl of MODEL_IMPLS) {
    if (wanted && !wanted.includes(impl.info.id)) continue;
    const { seconds } = await forecastAll(engine, poolSize, impl.info.id, series);
    rows.push({ model: impl.info.id, series: series.length, seconds, seriesPerSecond: series.length / seconds });
    console.log(`${impl.info.id.padEnd(14)} ${(series.length / seconds).toFixed(1)} series/s (${seconds.toFixed(1)} s)`);
  }
} finally {
  await engine.close();
}
const dir = path.join(repoRoot, 'bench', 'results');
mkdirSync(dir, { recursive: true });
const report = { generatedAt: new Date().toISOString(), poolSize, cores: availableParallelism(), node: process.version, rows };
writeFileSync(path.join(dir, 'speed.json'), `${JSON.stringify(report, null, 2)}\n`);
const md = [
  '# Speed of the built-in models on M3 monthly',
  '',
  `Generated ${report.generatedAt} by \`npm run bench:speed\`: ${series.length} monthly series (horizon 18), one process, the engine's pool of ${poolSize} worker threads on a ${report.cores}-core machine shared with other work, ${report.node}. Wall-clock, 4 series per job.`,
  '',
  '| model | series | seconds | series / second |',
  '|---|---|---|---|',
  ...rows.map((r) => `| ${r.model} | ${r.series} | ${r.seconds.toFixed(1)} | ${r.seriesPerSecond.toFixed(1)} |`),
  '',
  "For scale: R's forecast package on one core took 0.593 s per monthly series for ets, 2.908 s for auto.arima and 0.006 s for thetaf (shared/data/m3/README.md), i.e. 1.7, 0.34 and 167 series/s.",
  '',
].join('\n');
writeFileSync(path.join(dir, 'speed.md'), md);
