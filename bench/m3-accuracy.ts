/**
 * Accuracy of every built-in model on the M3 competition data (3003 series, official horizons),
 * through the engine's worker pool. Writes bench/results/m3-accuracy.{json,md}.
 *   SHARED_DIR=/work/shared npm run bench:m3               # all series, all built-ins
 *   SHARED_DIR=/work/shared npm run bench:m3 -- --every 10 # every 10th series (development)
 *   ... -- --models theta,auto-ets                         # a subset of models
 * BENCH_POOL sets the pool size (default 2).
 */
import { writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { BUILTIN_MODELS as MODEL_IMPLS } from '../src/engine/registry.ts';
import { deseasonalise } from '../src/engine/stats/season.ts';
import { FREQUENCIES, loadM3, mase, repoRoot, smape, type M3Series } from './lib/m3.ts';
import { benchEngine, forecastAll } from './lib/run.ts';
import { PUBLISHED, R_FORECAST, renderMarkdown, type Score } from './lib/m3-report.ts';

const { values } = parseArgs({ options: { every: { type: 'string', default: '1' }, models: { type: 'string' }, out: { type: 'string' } } });
const every = Number(values.every);
const wanted = values.models?.split(',');
const series = loadM3().filter((_, i) => i % every === 0);
const models = MODEL_IMPLS.map((m) => m.info.id).filter((id) => !wanted || wanted.includes(id));

function score(forecasts: number[][]): Score {
  const by: Score['byFrequency'] = {};
  let s = 0;
  let m = 0;
  for (const f of FREQUENCIES) {
    const idx = series.map((x, i) => (x.frequency === f ? i : -1)).filter((i) => i >= 0);
    if (idx.length === 0) continue;
    const sm = idx.map((i) => smape(series[i]!.test, forecasts[i]!));
    const ms = idx.map((i) => mase(series[i]!.train, series[i]!.test, forecasts[i]!, series[i]!.seasonality));
    by[f] = { n: idx.length, smape: mean(sm), mase: mean(ms) };
    s += sm.reduce((a, b) => a + b, 0);
    m += ms.reduce((a, b) => a + b, 0);
  }
  return { n: series.length, smape: s / series.length, mase: m / series.length, byFrequency: by };
}

function mean(v: readonly number[]): number {
  return v.reduce((a, b) => a + b, 0) / v.length;
}

/** NAIVE2 (naive on the seasonally adjusted series) recomputed here to check the metric code. */
function naive2(s: M3Series): number[] {
  const d = deseasonalise(s.train, s.seasonality);
  const n = s.train.length;
  return Array.from({ length: s.horizon }, (_, h) => d.reseasonalise(d.adjusted[n - 1]!, n + h));
}

const { engine, poolSize } = benchEngine();
const results: Record<string, Score & { seconds: number; seriesPerSecond: number }> = {};
try {
  const check = score(series.map(naive2));
  console.log(`naive2-check  sMAPE ${check.smape.toFixed(2)}  MASE ${check.mase.toFixed(3)}`);
  for (const model of models) {
    const { means, seconds } = await forecastAll(engine, poolSize, model, series);
    const sc = score(means);
    results[model] = { ...sc, seconds, seriesPerSecond: series.length / seconds };
    const parts = Object.entries(sc.byFrequency).map(([f, v]) => `${f} ${v?.smape.toFixed(2)}/${v?.mase.toFixed(3)}`);
    console.log(`${model.padEnd(14)} all ${sc.smape.toFixed(2)}/${sc.mase.toFixed(3)} | ${parts.join(' | ')} | ${seconds.toFixed(1)} s`);
  }
  const report = {
    generatedAt: new Date().toISOString(),
    every,
    series: series.length,
    poolSize,
    naive2Check: check,
    models: results,
    published: PUBLISHED,
    rForecast: R_FORECAST,
  };
  const dir = path.join(repoRoot, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const base = values.out ?? (every === 1 ? 'm3-accuracy' : `m3-accuracy-every${every}`);
  writeFileSync(path.join(dir, `${base}.json`), `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(path.join(dir, `${base}.md`), renderMarkdown(report));
  console.log(`wrote bench/results/${base}.{json,md}`);
} finally {
  await engine.close();
}
