/**
 * Statistical models on long hourly series: ETTh1/ETTh2 (shared/data/ett), every column, a
 * 1,000-point context ending at several origins in the test part (rows 11,520 onward), horizon 48,
 * season length 24. Scores MASE (scaled by the context's mean |y_t - y_{t-24}|), sMAPE, the share
 * of negative point forecasts on columns whose context is never negative, the 80% interval's
 * coverage, and the slowest single series in seconds (the service's default inference timeout is
 * 30 s). Writes bench/results/ett-hourly.{json,md}.
 *   SHARED_DIR=/work/shared node bench/ett-hourly.ts [--models mstl,seasonal-naive] [--origins 4]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { BUILTIN_MODELS } from '../src/engine/registry.ts';
import { repoRoot, smape } from './lib/m3.ts';
import { readEttColumns } from './lib/ett.ts';

const { values } = parseArgs({
  options: { models: { type: 'string' }, origins: { type: 'string', default: '4' }, context: { type: 'string', default: '1000' } },
});
const HORIZON = 48;
const M = 24;
const CONTEXT = Number(values.context);
const ORIGINS = Number(values.origins);
const wanted = values.models?.split(',') ?? ['seasonal-naive', 'naive', 'theta', 'auto-ets', 'mstl', 'auto-arima', 'ces', 'combo'];

interface Case {
  id: string;
  context: number[];
  actual: number[];
}
const cases: Case[] = [];
for (const file of ['ETTh1.csv', 'ETTh2.csv']) {
  for (const col of readEttColumns(file)) {
    for (let k = 0; k < ORIGINS; k++) {
      const origin = 11_520 + k * 1_000;
      cases.push({ id: `${col.name}@${origin}`, context: col.values.slice(origin - CONTEXT, origin), actual: col.values.slice(origin, origin + HORIZON) });
    }
  }
}

const env = { modelsDir: '/nonexistent', threads: 1 };
const results: Record<
  string,
  {
    mase: number;
    medianMase: number;
    smape: number;
    coverage80: number;
    negativeShare: number;
    worseThanSnaive: number;
    maxSeconds: number;
    meanSeconds: number;
  }
> = {};
const snaiveMase: number[] = [];
for (const id of wanted) {
  const impl = BUILTIN_MODELS.find((m) => m.info.id === id);
  if (!impl) throw new Error(`unknown model ${id}`);
  const mases: number[] = [];
  const smapes: number[] = [];
  let inside = 0;
  let points = 0;
  let negative = 0;
  let nonNegCases = 0;
  let maxSeconds = 0;
  let total = 0;
  for (const c of cases) {
    const t0 = performance.now();
    const [fc] = await impl.forecast(
      { model: id, series: [c.context], horizon: HORIZON, quantileLevels: [0.1, 0.5, 0.9], numSamples: 0, seasonLength: M, seed: 1 },
      env,
    );
    const sec = (performance.now() - t0) / 1000;
    maxSeconds = Math.max(maxSeconds, sec);
    total += sec;
    let scale = 0;
    for (let t = M; t < c.context.length; t++) scale += Math.abs(c.context[t]! - c.context[t - M]!);
    scale /= c.context.length - M;
    const err = c.actual.reduce((s, y, h) => s + Math.abs(y - fc!.mean[h]!), 0) / HORIZON;
    mases.push(err / scale);
    smapes.push(smape(c.actual, fc!.mean));
    c.actual.forEach((y, h) => {
      if (y >= fc!.quantiles[0]![h]! && y <= fc!.quantiles[2]![h]!) inside++;
      points++;
    });
    if (c.context.every((v) => v >= 0)) {
      nonNegCases++;
      if (fc!.mean.some((v) => v < 0)) negative++;
    }
  }
  if (id === 'seasonal-naive') snaiveMase.push(...mases);
  const sorted = mases.slice().sort((a, b) => a - b);
  const worse = snaiveMase.length === mases.length ? mases.filter((v, i) => v > snaiveMase[i]! * 1.1).length / mases.length : NaN;
  results[id] = {
    mase: mases.reduce((a, b) => a + b, 0) / mases.length,
    medianMase: sorted[Math.floor(sorted.length / 2)]!,
    smape: smapes.reduce((a, b) => a + b, 0) / smapes.length,
    coverage80: inside / points,
    negativeShare: nonNegCases > 0 ? negative / nonNegCases : 0,
    worseThanSnaive: worse,
    maxSeconds,
    meanSeconds: total / cases.length,
  };
  const r = results[id]!;
  console.log(
    `${id.padEnd(15)} MASE ${r.mase.toFixed(3)} (median ${r.medianMase.toFixed(3)}) sMAPE ${r.smape.toFixed(2)} cov80 ${(100 * r.coverage80).toFixed(1)}% negative ${(100 * r.negativeShare).toFixed(0)}% >1.1x snaive ${(100 * r.worseThanSnaive).toFixed(0)}% max ${r.maxSeconds.toFixed(1)} s mean ${r.meanSeconds.toFixed(2)} s`,
  );
}

const dir = path.join(repoRoot, 'bench', 'results');
mkdirSync(dir, { recursive: true });
writeFileSync(
  path.join(dir, 'ett-hourly.json'),
  `${JSON.stringify(
    { generatedAt: new Date().toISOString(), cases: cases.length, context: CONTEXT, horizon: HORIZON, seasonLength: M, models: results },
    null,
    2,
  )}\n`,
);
const md = [
  '# Statistical models on long hourly series (ETTh1, ETTh2)',
  '',
  `Generated ${new Date().toISOString()} by \`node bench/ett-hourly.ts\`: ${cases.length} cases (14 columns x ${ORIGINS} origins from row 11,520, 1,000 apart), ${CONTEXT}-point context, horizon ${HORIZON}, season length ${M}, one thread, default model settings (including the backtest calibration of the intervals). MASE scaled by the context's seasonal-naive in-sample error. "negative": share of cases whose context is never negative that got a negative point forecast. ">1.1x snaive": share of cases whose MASE exceeds seasonal-naive's by more than 10%. Seconds are wall-clock per series on a shared machine (load varies).`,
  '',
  '| model | MASE (mean) | MASE (median) | sMAPE | 80% coverage | negative | >1.1x snaive | max s | mean s |',
  '|---|---|---|---|---|---|---|---|---|',
  ...Object.entries(results).map(
    ([id, r]) =>
      `| ${id} | ${r.mase.toFixed(3)} | ${r.medianMase.toFixed(3)} | ${r.smape.toFixed(2)} | ${(100 * r.coverage80).toFixed(1)}% | ${(100 * r.negativeShare).toFixed(0)}% | ${Number.isFinite(r.worseThanSnaive) ? `${(100 * r.worseThanSnaive).toFixed(0)}%` : ''} | ${r.maxSeconds.toFixed(1)} | ${r.meanSeconds.toFixed(2)} |`,
  ),
  '',
];
writeFileSync(path.join(dir, 'ett-hourly.md'), md.join('\n'));
console.log('wrote bench/results/ett-hourly.{json,md}');
