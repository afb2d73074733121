/**
 * Accuracy of every built-in model on the M3 competition data (3003 series, official horizons),
 * through the engine's worker pool. Writes bench/results/m3-accuracy.{json,md}.
 *   SHARED_DIR=/work/shared npm run bench:m3               # all series, all built-ins
 *   SHARED_DIR=/work/shared npm run bench:m3 -- --every 10 # every 10th series (development)
 *   ... -- --models theta,auto-ets                         # a subset of models
 *   ... -- --merge                                         # keep the other models' rows of the existing report
 * BENCH_POOL sets the pool size (default 2). Besides sMAPE/MASE it scores the intervals: the share
 * of test values inside the 80% interval (the 0.1 and 0.9 quantiles) and the weighted quantile
 * loss over the nine deciles (WQL: 2 * sum of pinball losses / sum of |actual|, per level, averaged
 * over the levels; GluonTS's mean_wQuantileLoss), both per frequency.
 */
import { existsSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { BUILTIN_MODELS as MODEL_IMPLS } from '../src/engine/registry.ts';
import { deseasonalise } from '../src/engine/stats/season.ts';
import { FREQUENCIES, loadM3, mase, repoRoot, smape, type M3Series } from './lib/m3.ts';
import { benchEngine, forecastAll } from './lib/run.ts';
import { PUBLISHED, R_FORECAST, renderMarkdown, type Score } from './lib/m3-report.ts';

const { values } = parseArgs({
  options: { every: { type: 'string', default: '1' }, models: { type: 'string' }, out: { type: 'string' }, merge: { type: 'boolean', default: false } },
});
const every = Number(values.every);
const wanted = values.models?.split(',');
const series = loadM3().filter((_, i) => i % every === 0);
const models = MODEL_IMPLS.map((m) => m.info.id).filter((id) => !wanted || wanted.includes(id));

const DECILES = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9];

/** Coverage of the 80% interval and WQL over the deciles, for the series `idx`. */
function intervalScore(idx: readonly number[], quantiles: number[][][]): { coverage80: number; wql: number } {
  let inside = 0;
  let count = 0;
  const loss = new Array<number>(DECILES.length).fill(0);
  let absSum = 0;
  for (const i of idx) {
    const test = series[i]!.test;
    const q = quantiles[i]!;
    for (let h = 0; h < test.length; h++) {
      const y = test[h]!;
      absSum += Math.abs(y);
      if (y >= q[0]![h]! && y <= q[DECILES.length - 1]![h]!) inside++;
      count++;
      DECILES.forEach((p, k) => {
        const d = y - q[k]![h]!;
        loss[k]! += 2 * Math.max(p * d, (p - 1) * d);
      });
    }
  }
  return { coverage80: inside / count, wql: loss.reduce((a, b) => a + b / absSum, 0) / DECILES.length };
}

function score(forecasts: number[][], quantiles?: number[][][]): Score {
  const by: Score['byFrequency'] = {};
  let s = 0;
  let m = 0;
  for (const f of FREQUENCIES) {
    const idx = series.map((x, i) => (x.frequency === f ? i : -1)).filter((i) => i >= 0);
    if (idx.length === 0) continue;
    const sm = idx.map((i) => smape(series[i]!.test, forecasts[i]!));
    const ms = idx.map((i) => mase(series[i]!.train, series[i]!.test, forecasts[i]!, series[i]!.seasonality));
    by[f] = { n: idx.length, smape: mean(sm), mase: mean(ms), ...(quantiles ? intervalScore(idx, quantiles) : {}) };
    s += sm.reduce((a, b) => a + b, 0);
    m += ms.reduce((a, b) => a + b, 0);
  }
  const all = quantiles
    ? intervalScore(
        series.map((_, i) => i),
        quantiles,
      )
    : {};
  return { n: series.length, smape: s / series.length, mase: m / series.length, ...all, byFrequency: by };
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
const base = values.out ?? (every === 1 ? 'm3-accuracy' : `m3-accuracy-every${every}`);
const dir = path.join(repoRoot, 'bench', 'results');
type ModelScore = Score & { seconds: number; seriesPerSecond: number };
const previous =
  values.merge && existsSync(path.join(dir, `${base}.json`))
    ? (JSON.parse(readFileSync(path.join(dir, `${base}.json`), 'utf8')) as { models: Record<string, ModelScore> })
    : null;
const results: Record<string, ModelScore> = { ...(previous?.models ?? {}) };
try {
  const check = score(series.map(naive2));
  console.log(`naive2-check  sMAPE ${check.smape.toFixed(2)}  MASE ${check.mase.toFixed(3)}`);
  for (const model of models) {
    const { means, quantiles, seconds } = await forecastAll(engine, poolSize, model, series, 4, DECILES);
    const sc = score(means, quantiles);
    results[model] = { ...sc, seconds, seriesPerSecond: series.length / seconds };
    const parts = Object.entries(sc.byFrequency).map(
      ([f, v]) => `${f} ${v?.smape.toFixed(2)}/${v?.mase.toFixed(3)} cov ${((v?.coverage80 ?? NaN) * 100).toFixed(1)}% wql ${v?.wql?.toFixed(4)}`,
    );
    console.log(
      `${model.padEnd(14)} all ${sc.smape.toFixed(2)}/${sc.mase.toFixed(3)} cov ${((sc.coverage80 ?? NaN) * 100).toFixed(1)}% | ${parts.join(' | ')} | ${seconds.toFixed(1)} s`,
    );
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
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, `${base}.json`), `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(path.join(dir, `${base}.md`), renderMarkdown(report));
  console.log(`wrote bench/results/${base}.{json,md}`);
} finally {
  await engine.close();
}
