/**
 * A frequency the models were never tuned on: ETTh1/ETTh2 (shared/data/ett) averaged to daily
 * values (725 days per column, 14 columns), season length 7, horizon 14, forecast from 8 origins
 * 28 days apart starting at day 480, each with all the days before it as context (480 to 676
 * points). Every built-in statistical model at default settings through the engine's worker pool.
 * Scores MASE (scaled by the context's mean |y_t - y_{t-7}|), sMAPE, 80% interval coverage, the
 * weighted quantile loss over the deciles (as bench/m3-accuracy.ts), and the share of cases whose
 * MASE exceeds seasonal naive's by more than 10%. Writes bench/results/ett-daily.{json,md}.
 *   SHARED_DIR=/work/shared node bench/ett-daily.ts [--models theta,mstl] [--origins 8]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createEngine } from '../src/engine/engine.ts';
import { ETT_DAILY_FIRST as FIRST, ETT_DAILY_STEP as STEP, ettDailyCases } from './lib/ett.ts';
import { mase, repoRoot, smape } from './lib/m3.ts';
import { weightedQuantileLoss } from '../src/ensemble/metrics.ts';

const { values } = parseArgs({ options: { models: { type: 'string' }, origins: { type: 'string', default: '8' } } });
const HORIZON = 14;
const M = 7;
const ORIGINS = Number(values.origins);
const LEVELS = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9];
const wanted = values.models?.split(',') ?? ['seasonal-naive', 'naive', 'drift', 'theta', 'auto-ets', 'auto-arima', 'mstl', 'ces', 'combo'];

const cases = ettDailyCases(ORIGINS, HORIZON);

const poolSize = Number(process.env.BENCH_POOL ?? 2);
const engine = createEngine({ poolSize, timeoutMs: 600_000, maxQueue: 1000, modelsDir: '/nonexistent', threads: 1 });
interface Row {
  mase: number;
  medianMase: number;
  smape: number;
  coverage80: number;
  wql: number;
  worseThanSnaive: number;
  seconds: number;
}
const results: Record<string, Row> = {};
let snaive: number[] | undefined;
for (const id of wanted) {
  const t0 = performance.now();
  const outs = new Array<{ mean: number[]; quantiles: number[][] }>(cases.length);
  let next = 0;
  async function lane(): Promise<void> {
    while (next < cases.length) {
      const i = next++;
      const [fc] = await engine.forecast({
        model: id,
        series: [cases[i]!.context],
        horizon: HORIZON,
        quantileLevels: LEVELS,
        numSamples: 0,
        seasonLength: M,
        seed: 1,
      });
      outs[i] = fc!;
    }
  }
  await Promise.all(Array.from({ length: 2 * poolSize }, lane));
  const seconds = (performance.now() - t0) / 1000;
  const mases = cases.map((c, i) => mase(c.context, c.actual, outs[i]!.mean, M));
  const smapes = cases.map((c, i) => smape(c.actual, outs[i]!.mean));
  // Pooled over every case: the WQL of all actuals at once (sum of pinball losses / sum of |actual|).
  const actuals = cases.flatMap((c) => c.actual);
  const pooled = LEVELS.map((_, j) => cases.flatMap((_, i) => outs[i]!.quantiles[j]!));
  const inside = actuals.filter((y, k) => y >= pooled[0]![k]! && y <= pooled[LEVELS.length - 1]![k]!).length;
  if (id === 'seasonal-naive') snaive = mases;
  const sorted = mases.slice().sort((a, b) => a - b);
  results[id] = {
    mase: mases.reduce((a, b) => a + b, 0) / mases.length,
    medianMase: sorted[Math.floor(sorted.length / 2)]!,
    smape: smapes.reduce((a, b) => a + b, 0) / smapes.length,
    coverage80: inside / actuals.length,
    wql: weightedQuantileLoss(actuals, LEVELS, pooled),
    worseThanSnaive: snaive ? mases.filter((v, i) => v > snaive![i]! * 1.1).length / mases.length : Number.NaN,
    seconds,
  };
  const r = results[id]!;
  console.log(
    `${id.padEnd(15)} MASE ${r.mase.toFixed(3)} (median ${r.medianMase.toFixed(3)}) sMAPE ${r.smape.toFixed(2)} cov80 ${(100 * r.coverage80).toFixed(1)}% WQL ${r.wql.toFixed(4)} >1.1x snaive ${(100 * r.worseThanSnaive).toFixed(0)}% ${r.seconds.toFixed(1)} s`,
  );
}
await engine.close();

const dir = path.join(repoRoot, 'bench', 'results');
mkdirSync(dir, { recursive: true });
const generatedAt = new Date().toISOString();
writeFileSync(
  path.join(dir, 'ett-daily.json'),
  `${JSON.stringify({ generatedAt, cases: cases.length, horizon: HORIZON, seasonLength: M, models: results }, null, 2)}\n`,
);
const md = [
  '# Statistical models on daily data (ETTh1, ETTh2 averaged per day)',
  '',
  `Generated ${generatedAt} by \`node bench/ett-daily.ts\`: ${cases.length} cases (14 columns x ${ORIGINS} origins, day ${FIRST} onward, ${STEP} days apart; context = every day before the origin, ${FIRST} to ${FIRST + (ORIGINS - 1) * STEP} points), horizon ${HORIZON}, season length ${M}, default model settings (including the backtest calibration of the intervals), ${poolSize} worker threads. No model or rule in the service was chosen on this data: it is a check that what was tuned on M3 (yearly, quarterly, monthly) and ETT hourly carries over to a frequency it was not tuned on. MASE scaled by the context's seasonal-naive in-sample error; WQL over the nine deciles (2 x pinball / sum |actual|, averaged over the levels); ">1.1x snaive": share of cases whose MASE exceeds seasonal naive's by more than 10%. Seconds are wall-clock for all cases on a shared machine.`,
  '',
  '| model | MASE (mean) | MASE (median) | sMAPE | 80% coverage | WQL | >1.1x snaive | seconds |',
  '|---|---|---|---|---|---|---|---|',
  ...Object.entries(results).map(
    ([id, r]) =>
      `| ${id} | ${r.mase.toFixed(3)} | ${r.medianMase.toFixed(3)} | ${r.smape.toFixed(2)} | ${(100 * r.coverage80).toFixed(1)}% | ${r.wql.toFixed(4)} | ${Number.isFinite(r.worseThanSnaive) ? `${(100 * r.worseThanSnaive).toFixed(0)}%` : ''} | ${r.seconds.toFixed(1)} |`,
  ),
  '',
];
writeFileSync(path.join(dir, 'ett-daily.md'), md.join('\n'));
console.log('wrote bench/results/ett-daily.{json,md}');
process.exit(0);
