/**
 * The ensemble (the code behind POST /v1/forecast/ensemble, default candidates and settings) on long
 * hourly series: ETTh1/ETTh2, every column, 1,000-point contexts at the origins of
 * bench/ett-hourly.ts (rows 11,520 + k·1,000), horizon 48, frequency "h" (season 24). Each candidate's
 * own forecast of the whole input comes back in `ranked_results`, so the single models are scored on
 * the same cases from the same run. MASE scaled by the context's seasonal-naive in-sample error.
 *   SHARED_DIR=/work/shared node bench/ett-ensemble.ts [--origins 6]
 * Writes bench/results/ett-ensemble.{json,md}.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Catalog } from '../src/catalog/catalog.ts';
import { executeEnsemble, planEnsemble } from '../src/ensemble/service.ts';
import { EnsembleForecastRequest } from '../src/ensemble/schemas.ts';
import { unmeteredMeter } from '../src/forecasting/metering.ts';
import { readEttColumns } from './lib/ett.ts';
import { repoRoot } from './lib/m3.ts';
import { benchEngine } from './lib/run.ts';

const { values } = parseArgs({ options: { origins: { type: 'string', default: '6' }, concurrency: { type: 'string', default: '2' } } });
const H = 48;
const M = 24;
const cases: { id: string; context: number[]; actual: number[] }[] = [];
for (const file of ['ETTh1.csv', 'ETTh2.csv']) {
  for (const col of readEttColumns(file)) {
    for (let k = 0; k < Number(values.origins); k++) {
      const o = 11_520 + k * 1_000;
      cases.push({ id: `${col.name}@${o}`, context: col.values.slice(o - 1000, o), actual: col.values.slice(o, o + H) });
    }
  }
}

const { engine } = benchEngine();
const ctx = { engine, catalog: new Catalog(engine), meter: unmeteredMeter, config: { forecast: { maxOutputValues: 2_000_000 } } };
const mase = (c: (typeof cases)[number], f: readonly number[]): number => {
  let s = 0;
  for (let t = M; t < c.context.length; t++) s += Math.abs(c.context[t]! - c.context[t - M]!);
  s /= c.context.length - M;
  return c.actual.reduce((q, y, i) => q + Math.abs(y - f[i]!), 0) / H / s;
};
const scores: Record<string, number[]> = {};
const picks = new Map<string, number>();
let credits = 0;
const t0 = performance.now();
let next = 0;
async function lane(): Promise<void> {
  while (next < cases.length) {
    const i = next++;
    const c = cases[i]!;
    const req = EnsembleForecastRequest.parse({ inputs: [{ target: c.context }], parameters: { prediction_length: H, frequency: 'h' } });
    const plan = await planEnsemble(ctx, req, async () => true);
    const out = await executeEnsemble(ctx, plan);
    const put = (name: string, v: number): void => {
      scores[name] ??= new Array<number>(cases.length).fill(Number.NaN);
      scores[name][i] = v;
    };
    put(
      'ensemble',
      mase(
        c,
        out.response.ensemble_result.outputs[0]!.mean.map((r) => r[0]!),
      ),
    );
    const means = out.response.ranked_results.map((r) => r.result.outputs[0]!.mean.map((row) => row[0]!));
    out.response.ranked_results.forEach((r, k) => {
      put(r.model, mase(c, means[k]!));
    });
    put(
      'equal mean of every candidate (offline)',
      mase(
        c,
        means[0]!.map((_, h) => means.reduce((a, m) => a + m[h]!, 0) / means.length),
      ),
    );
    put(
      'seasonal-naive',
      mase(
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
writeFileSync(path.join(repoRoot, 'bench/results/ett-ensemble.json'), `${JSON.stringify(result, null, 2)}\n`);
const md = [
  '# The ensemble on long hourly series (ETTh1, ETTh2)',
  '',
  `Generated ${result.date} by \`node bench/ett-ensemble.ts --origins ${values.origins}\`: ${cases.length} cases (14 columns × ${values.origins} origins from row 11,520, 1,000 apart), 1,000-point contexts, horizon 48, frequency "h" (season 24); the ensemble with its default candidates and settings (top_n 3, one backtest window of 48 points, sMAPE scoring), the single models from the same runs (ranked_results). MASE scaled by the context's seasonal-naive in-sample error. ${seconds.toFixed(0)} s on 2 threads, ${(credits / cases.length).toFixed(1)} credits per case.`,
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
writeFileSync(path.join(repoRoot, 'bench/results/ett-ensemble.md'), md.join('\n'));
console.log(md.join('\n'));
