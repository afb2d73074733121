/**
 * The ensemble (the code behind POST /v1/forecast/ensemble, default candidates and settings) on long
 * hourly series: ETTh1/ETTh2, every column, 1,000-point contexts at the origins of
 * bench/ett-hourly.ts (rows 11,520 + k·1,000), horizon 48, frequency "h" (season 24). Each candidate's
 * own forecast of the whole input comes back in `ranked_results`, so the single models are scored on
 * the same cases from the same run. MASE scaled by the context's seasonal-naive in-sample error.
 *   SHARED_DIR=/work/shared node bench/ett-ensemble.ts [--origins 6]
 *   ... --daily [--origins 8]     # the daily cases of bench/ett-daily.ts (season 7, horizon 14)
 *   ... --save /tmp/ett-ens.json  # also keep every candidate's forecast and backtest score per case
 * Writes bench/results/ett-ensemble.{json,md} (ett-ensemble-daily with --daily).
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Catalog } from '../src/catalog/catalog.ts';
import { executeEnsemble, planEnsemble, seasonalNaive } from '../src/ensemble/service.ts';
import { smape as ensembleSmape } from '../src/ensemble/metrics.ts';
import { EnsembleForecastRequest } from '../src/ensemble/schemas.ts';
import { unmeteredMeter } from '../src/forecasting/metering.ts';
import { type EttCase, ettDailyCases, readEttColumns } from './lib/ett.ts';
import { mase, repoRoot } from './lib/m3.ts';
import { benchEngine, modelsVerified } from './lib/run.ts';

const { values } = parseArgs({
  options: {
    origins: { type: 'string' },
    concurrency: { type: 'string', default: '2' },
    daily: { type: 'boolean', default: false },
    save: { type: 'string' },
  },
});
const DAILY = values.daily;
const ORIGINS = Number(values.origins ?? (DAILY ? 8 : 6));
const H = DAILY ? 14 : 48;
const M = DAILY ? 7 : 24;
const FREQUENCY = DAILY ? 'D' : 'h';
const OUT = DAILY ? 'ett-ensemble-daily' : 'ett-ensemble';
const cases: EttCase[] = DAILY ? ettDailyCases(ORIGINS, H) : [];
if (!DAILY) {
  for (const file of ['ETTh1.csv', 'ETTh2.csv']) {
    for (const col of readEttColumns(file)) {
      for (let k = 0; k < ORIGINS; k++) {
        const o = 11_520 + k * 1_000;
        cases.push({ id: `${col.name}@${o}`, context: col.values.slice(o - 1000, o), actual: col.values.slice(o, o + H) });
      }
    }
  }
}
/** Per case (--save): each candidate's backtest score and final mean, seasonal naive's backtest score. */
const detail: { scores: Record<string, number>; means: Record<string, number[]>; yardstick: number }[] = new Array(cases.length);

const { engine } = benchEngine();
await modelsVerified(engine);
const ctx = {
  engine,
  catalog: new Catalog(engine),
  meter: unmeteredMeter,
  config: { forecast: { maxOutputValues: 2_000_000, maxJobWorkMs: Number.POSITIVE_INFINITY } },
};
const caseMase = (c: (typeof cases)[number], f: readonly number[]): number => mase(c.context, c.actual, f, M);
const scores: Record<string, number[]> = {};
const picks = new Map<string, number>();
let credits = 0;
const t0 = performance.now();
let next = 0;
async function lane(): Promise<void> {
  while (next < cases.length) {
    const i = next++;
    const c = cases[i]!;
    const req = EnsembleForecastRequest.parse({ inputs: [{ target: c.context }], parameters: { prediction_length: H, frequency: FREQUENCY } });
    const plan = await planEnsemble(ctx, req, async () => true);
    const out = await executeEnsemble(ctx, plan);
    const put = (name: string, v: number): void => {
      scores[name] ??= new Array<number>(cases.length).fill(Number.NaN);
      scores[name][i] = v;
    };
    put(
      'ensemble',
      caseMase(
        c,
        out.response.ensemble_result.outputs[0]!.mean.map((r) => r[0]!),
      ),
    );
    const means = out.response.ranked_results.map((r) => r.result.outputs[0]!.mean.map((row) => row[0]!));
    if (values.save) {
      let yardstick = 0;
      for (let k = 0; k < plan.windows; k++) {
        const end = c.context.length - k * plan.heldOut;
        const bt = c.context.slice(0, end - plan.heldOut);
        yardstick += ensembleSmape(c.context.slice(end - plan.heldOut, end), seasonalNaive(bt, plan.heldOut, M)) / plan.windows;
      }
      detail[i] = {
        scores: Object.fromEntries(out.response.ranked_results.map((r) => [r.model, r.score])),
        means: Object.fromEntries(out.response.ranked_results.map((r, k) => [r.model, means[k]!])),
        yardstick,
      };
    }
    out.response.ranked_results.forEach((r, k) => {
      put(r.model, caseMase(c, means[k]!));
    });
    put(
      'equal mean of every candidate (offline)',
      caseMase(
        c,
        means[0]!.map((_, h) => means.reduce((a, m) => a + m[h]!, 0) / means.length),
      ),
    );
    put(
      'seasonal-naive',
      caseMase(
        c,
        Array.from({ length: H }, (_, h) => c.context[c.context.length - M + (h % M)]!),
      ),
    );
    credits += out.credits;
    for (const m of out.response.ensemble_metadata.models_in_ensemble) picks.set(m, (picks.get(m) ?? 0) + 1);
    if ((i + 1) % 14 === 0) console.log(`${i + 1}/${cases.length} cases, ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  }
}
try {
  await Promise.all(Array.from({ length: Number(values.concurrency) }, lane));
} finally {
  await engine.close();
}
const seconds = (performance.now() - t0) / 1000;
const rows = Object.entries(scores)
  .map(([name, v]) => {
    const ok = v.filter((x) => Number.isFinite(x));
    const sorted = ok.slice().sort((a, b) => a - b);
    return { name, n: ok.length, mean: ok.reduce((a, b) => a + b, 0) / ok.length, median: sorted[Math.floor(sorted.length / 2)]! };
  })
  .sort((a, b) => a.mean - b.mean);
const result = { date: new Date().toISOString(), cases: cases.length, horizon: H, seconds, credits, picks: Object.fromEntries(picks), rows };
writeFileSync(path.join(repoRoot, `bench/results/${OUT}.json`), `${JSON.stringify(result, null, 2)}\n`);
if (values.save) writeFileSync(values.save, JSON.stringify({ cases, seasonLength: M, detail }));
const md = [
  DAILY ? '# The ensemble on daily series (ETTh1, ETTh2 averaged per day)' : '# The ensemble on long hourly series (ETTh1, ETTh2)',
  '',
  `Generated ${result.date} by \`node bench/ett-ensemble.ts ${process.argv.slice(2).join(' ')}\`: ${cases.length} cases (${DAILY ? `14 columns × ${ORIGINS} origins 28 days apart from day 480, every earlier day as context, bench/ett-daily.ts), horizon 14, frequency "D" (season 7)` : `14 columns × ${ORIGINS} origins from row 11,520, 1,000 apart), 1,000-point contexts, horizon 48, frequency "h" (season 24)`}; the ensemble with its default candidates and settings (top_n 3, one backtest window of ${H} points, sMAPE scoring), the single models from the same runs (ranked_results). MASE scaled by the context's seasonal-naive in-sample error. ${seconds.toFixed(0)} s on 2 threads, ${(credits / cases.length).toFixed(1)} credits per case.`,
  '',
  '| forecast | cases | MASE (mean) | MASE (median) |',
  '|---|---|---|---|',
  ...rows.map((r) => `| ${r.name} | ${r.n} | ${r.mean.toFixed(3)} | ${r.median.toFixed(3)} |`),
  '',
  `Members picked: ${[...picks.entries()]
    .sort((a, b) => b[1] - a[1])
    .map(([m, n]) => `${m} ${n}`)
    .join(', ')}.`,
  '',
];
writeFileSync(path.join(repoRoot, `bench/results/${OUT}.md`), md.join('\n'));
console.log(md.join('\n'));
