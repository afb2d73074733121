/**
 * CPU seconds per credit of every built-in model on representative shapes, against the README's
 * example (auto-ets on the 144 monthly airline passengers, 12 steps, three quantile levels) measured
 * in the same run: the machine is shared, so ratios within one run are what to compare (ADR 0039).
 *   SHARED_DIR=/work/shared nice -n 5 node bench/work-price.ts [--only auto-arima] [--limit 120] [--out work-price]
 * Each shape is planned by the service's own code (planForecast: price, and the 413 of work past
 * INFERENCE_MAX_JOB_WORK_MS, 15 s by default) and, when accepted, run once through the engine's
 * worker pool (one thread, a `--limit` s time limit so that a slow job is measured rather than cut at
 * 30 s; refused shapes are run too, to show what they would have cost). CPU = the process's CPU time
 * (the main thread idles meanwhile): one core's work, whatever else the machine runs.
 * Synthetic series are the costliest kind found for the season searches (a sine of the season's period,
 * a trend and noise); the ETT rows are real hourly data. Writes bench/results/<out>.{json,md}.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Catalog } from '../src/catalog/catalog.ts';
import { createEngine } from '../src/engine/engine.ts';
import { unmeteredMeter } from '../src/forecasting/metering.ts';
import type { ForecastRequestT } from '../src/forecasting/schemas.ts';
import { jobOf, planForecast } from '../src/forecasting/service.ts';
import { AppError } from '../src/shared/errors.ts';
import { readEttColumns } from './lib/ett.ts';
import { repoRoot } from './lib/m3.ts';

const { values } = parseArgs({
  options: {
    only: { type: 'string' },
    limit: { type: 'string', default: '120' },
    out: { type: 'string', default: 'work-price' },
  },
});

const AIRLINE = [
  112, 118, 132, 129, 121, 135, 148, 148, 136, 119, 104, 118, 115, 126, 141, 135, 125, 149, 170, 170, 158, 133, 114, 140, 145, 150, 178, 163, 172, 178, 199,
  199, 184, 162, 146, 166, 171, 180, 193, 181, 183, 218, 230, 242, 209, 191, 172, 194, 196, 196, 236, 235, 229, 243, 264, 272, 237, 211, 180, 201, 204, 188,
  235, 227, 234, 264, 302, 293, 259, 229, 203, 229, 242, 233, 267, 269, 270, 315, 364, 347, 312, 274, 237, 278, 284, 277, 317, 313, 318, 374, 413, 405, 355,
  306, 271, 306, 315, 301, 356, 348, 355, 422, 465, 467, 404, 347, 305, 336, 340, 318, 362, 348, 363, 435, 491, 505, 404, 359, 310, 337, 360, 342, 406, 396,
  420, 472, 548, 559, 463, 407, 362, 405, 417, 391, 419, 461, 472, 535, 622, 606, 508, 461, 390, 432,
];

/** A seeded series with a season of `period` steps, a trend and noise: the costliest kind for the season searches measured. */
function seasonal(n: number, period: number, seed = 12345): number[] {
  let s = seed;
  const rnd = () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return s / 2147483648;
  };
  const gauss = () => Math.sqrt(-2 * Math.log(rnd() + 1e-12)) * Math.cos(2 * Math.PI * rnd());
  return Array.from({ length: n }, (_, t) => 100 + 10 * Math.sin((2 * Math.PI * t) / period) + 0.01 * t + gauss());
}

interface Shape {
  name: string;
  model: string;
  target: number[];
  frequency: string | null;
  horizon: number;
  quantiles: number[];
  context?: number;
}

const Q3 = [0.1, 0.5, 0.9];
const ett = readEttColumns('ETTh1.csv')[0]!.values.slice(11520 - 1000, 11520);
const BUILTINS = ['naive', 'seasonal-naive', 'drift', 'theta', 'auto-ets', 'auto-arima', 'ces', 'mstl', 'combo'];
const shapes: Shape[] = [
  { name: 'README example (airline, 144 monthly)', model: 'auto-ets', target: AIRLINE, frequency: 'MS', horizon: 12, quantiles: Q3 },
  ...BUILTINS.filter((m) => m !== 'auto-ets').map((model) => ({
    name: 'airline, 144 monthly',
    model,
    target: AIRLINE,
    frequency: 'MS',
    horizon: 12,
    quantiles: Q3,
  })),
  ...BUILTINS.map((model) => ({ name: 'ETTh1 HUFL, 1000 hourly', model, target: ett, frequency: 'h', horizon: 48, quantiles: Q3 })),
  { name: '144 hourly (short, season 24)', model: 'auto-ets', target: seasonal(144, 24), frequency: 'h', horizon: 24, quantiles: Q3 },
  { name: '144 hourly (short, season 24)', model: 'combo', target: seasonal(144, 24), frequency: 'h', horizon: 24, quantiles: Q3 },
  { name: '4000 hourly', model: 'auto-ets', target: seasonal(4000, 24), frequency: 'h', horizon: 24, quantiles: Q3, context: 4000 },
  { name: '4000 hourly', model: 'auto-arima', target: seasonal(4000, 24), frequency: 'h', horizon: 24, quantiles: Q3, context: 4000 },
  { name: '10000 hourly', model: 'ces', target: seasonal(10000, 24), frequency: 'h', horizon: 24, quantiles: Q3, context: 10000 },
  { name: '30000 hourly', model: 'auto-ets', target: seasonal(30000, 24), frequency: 'h', horizon: 24, quantiles: Q3, context: 30000 },
  { name: '100000 hourly', model: 'mstl', target: seasonal(100000, 24), frequency: 'h', horizon: 24, quantiles: Q3, context: 100000 },
  { name: '100000 hourly', model: 'theta', target: seasonal(100000, 24), frequency: 'h', horizon: 24, quantiles: Q3, context: 100000 },
  { name: '100000 hourly', model: 'auto-ets', target: seasonal(100000, 24), frequency: 'h', horizon: 24, quantiles: Q3, context: 100000 },
  { name: '990 at 30min (season 48), no quantiles', model: 'auto-arima', target: seasonal(990, 48), frequency: '30min', horizon: 1, quantiles: [] },
  { name: '990 at 15min (season 96), no quantiles', model: 'auto-arima', target: seasonal(990, 96), frequency: '15min', horizon: 1, quantiles: [] },
  { name: '990 at 10min (season 144), no quantiles', model: 'auto-arima', target: seasonal(990, 144), frequency: '10min', horizon: 1, quantiles: [] },
  { name: '990 at 5min (season 288), no quantiles', model: 'auto-arima', target: seasonal(990, 288), frequency: '5min', horizon: 1, quantiles: [] },
  { name: '990 at 5min (season 288), no quantiles', model: 'combo', target: seasonal(990, 288), frequency: '5min', horizon: 1, quantiles: [] },
  { name: '990, no frequency (season 24 detected)', model: 'auto-arima', target: seasonal(990, 24), frequency: null, horizon: 12, quantiles: Q3 },
].filter((s) => !values.only || s.model === values.only);

const limitS = Number(values.limit);
const engine = createEngine({ poolSize: 1, timeoutMs: limitS * 1000, maxQueue: 10, modelsDir: '/nonexistent', threads: 1, workerNice: 0 });
const ctx = { engine, catalog: new Catalog(engine), meter: unmeteredMeter, config: { forecast: { maxOutputValues: 2_000_000, maxJobWorkMs: 15_000 } } };
const unbounded = { ...ctx, config: { forecast: { ...ctx.config.forecast, maxJobWorkMs: Number.POSITIVE_INFINITY } } };

interface Row {
  name: string;
  model: string;
  points: number;
  frequency: string | null;
  horizon: number;
  quantiles: number;
  /** Estimated model time (work.ts), s. */
  estimateS: number;
  credits: number;
  /** The service's answer at planning: null when accepted, else the 413's message. */
  refused: string | null;
  cpuS: number | null;
  wallS: number | null;
  error: string | null;
}

const rows: Row[] = [];
const loads: number[] = [];
// Warm the worker thread (module loading is not the job's cost).
await engine.forecast({ model: 'theta', series: [seasonal(300, 12)], horizon: 1, quantileLevels: [], numSamples: 0, seasonLength: 12, seed: 1 });
for (const s of shapes) {
  const req: ForecastRequestT = {
    model: s.model,
    inputs: [{ target: s.target }],
    parameters: {
      prediction_length: s.horizon,
      quantile_levels: s.quantiles,
      ...(s.frequency ? { frequency: s.frequency } : {}),
      ...(s.context ? { context_length: s.context } : {}),
    },
    metadata: null,
  } as ForecastRequestT;
  let refused: string | null = null;
  try {
    planForecast(ctx, req);
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    refused = err.message;
  }
  const planned = planForecast(unbounded, req);
  const { job } = jobOf(planned.prepared);
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  let error: string | null = null;
  try {
    await engine.forecast(job);
  } catch (err) {
    error = err instanceof Error ? err.message : String(err);
  }
  const cpu = process.cpuUsage(c0);
  const row: Row = {
    name: s.name,
    model: s.model,
    points: Math.min(s.target.length, s.context ?? 2048),
    frequency: s.frequency,
    horizon: s.horizon,
    quantiles: s.quantiles.length,
    estimateS: Math.round(planned.prepared.workMs) / 1000,
    credits: planned.credits,
    refused,
    cpuS: Math.round((cpu.user + cpu.system) / 1e4) / 100,
    wallS: Math.round((performance.now() - t0) / 10) / 100,
    error,
  };
  rows.push(row);
  loads.push(Math.round(loadavg()[0]! * 10) / 10);
  console.log([row.model, row.name, row.estimateS, row.credits, row.cpuS, row.wallS, refused ? 'REFUSED' : 'accepted', error ?? ''].join('\t'));
}
await engine.close();

const reference = rows.find((r) => r.name.startsWith('README'));
const refPerCredit = reference?.cpuS ? reference.cpuS / reference.credits : null;
const fmt = (x: number | null, d = 2) => (x === null ? '–' : x.toFixed(d));
const table = rows.map((r) => {
  const perCredit = r.cpuS !== null ? r.cpuS / r.credits : null;
  const ratio = perCredit !== null && refPerCredit ? perCredit / refPerCredit : null;
  const answer = r.refused ? '413 at planning' : r.error ? `ran: ${r.error.slice(0, 40)}` : '200';
  return `| ${r.model} | ${r.name} | ${r.frequency ?? '–'} | ${r.horizon} | ${r.quantiles} | ${fmt(r.estimateS)} | ${r.credits} | ${fmt(r.cpuS)} | ${fmt(perCredit)} | ${r.refused ? `(${fmt(ratio)})` : fmt(ratio)} | ${answer} |`;
});
const accepted = rows.filter((r) => !r.refused && r.cpuS !== null && refPerCredit);
const worst = accepted.reduce((a, r) => Math.max(a, (r.cpuS as number) / r.credits / (refPerCredit as number)), 0);
const md = [
  '# CPU seconds per credit of the built-in models (ADR 0039)',
  '',
  `Generated ${new Date().toISOString()} by \`node bench/work-price.ts${values.only ? ` --only ${values.only}` : ''}\` on ${availableParallelism()} cores shared with other work (one-minute load ${Math.min(...loads)}–${Math.max(...loads)}): every shape planned by the service (price; 413 past INFERENCE_MAX_JOB_WORK_MS = 15 s of estimated work) and run once on one worker thread (limit ${limitS} s, refused shapes too, to show what they would have cost). CPU = process CPU time of the job (one core's work). Ratio = CPU s per credit over the README example's, measured in the same run${refPerCredit ? ` (${fmt(reference?.cpuS ?? null)} CPU s for ${reference?.credits} credit)` : ''}; in brackets for refused shapes (what they would have been at that price).`,
  '',
  '| model | series | frequency | horizon | quantiles | estimate s | credits | CPU s | CPU s / credit | ratio to README | answer |',
  '|---|---|---|---|---|---|---|---|---|---|---|',
  ...table,
  '',
  `Largest ratio among accepted shapes: ${fmt(worst)} (target: within about 5 of the README example).`,
  '',
].join('\n');
const outDir = path.join(repoRoot, 'bench', 'results');
mkdirSync(outDir, { recursive: true });
writeFileSync(path.join(outDir, `${values.out}.md`), md);
writeFileSync(
  path.join(outDir, `${values.out}.json`),
  `${JSON.stringify({ generated: new Date().toISOString(), loads, reference: refPerCredit, rows }, null, 2)}\n`,
);
console.log(md);
