/**
 * Does any built-in model (or the default ensemble) run past the inference timeout on a long
 * hourly series? Real 1,000-point hourly windows of ETTh1/ETTh2 (shared/data/ett), horizon 48
 * (M4 hourly's), season 24 as the service derives it from frequency "H".
 *   SHARED_DIR=/work/shared nice -n 15 node bench/hourly-timeouts.ts [--series 6] [--models auto-arima,combo] [--no-ensemble] [--out hourly-timeouts]
 * Single models: one job per series through `createEngine` (the worker pool the service uses; one
 * thread, jobs one after the other), with a 600 s limit so a slow model's real time is measured
 * rather than cut at 30 s. Reports wall-clock and CPU seconds per job (process CPU time: the
 * main thread idles while the worker runs, so this is the job's one-core cost; wall-clock on a
 * shared machine includes other processes' load). The ensemble: `planEnsemble` + `executeEnsemble`
 * (the code behind POST /v1/forecast/ensemble) with the default candidates on an engine with the
 * service's defaults (INFERENCE_TIMEOUT_MS 30 s, queue wait 30 s, threads = cores): every candidate
 * that fails (timeout, busy) is listed. Writes bench/results/<out>.{json,md}.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Catalog } from '../src/catalog/catalog.ts';
import { createEngine } from '../src/engine/engine.ts';
import { BUILTIN_MODELS } from '../src/engine/registry.ts';
import { executeEnsemble, planEnsemble } from '../src/ensemble/service.ts';
import { EnsembleForecastRequest } from '../src/ensemble/schemas.ts';
import { unmeteredMeter } from '../src/forecasting/metering.ts';
import { repoRoot, smape } from './lib/m3.ts';
import { readEttColumns } from './lib/ett.ts';

const { values } = parseArgs({
  options: {
    series: { type: 'string', default: '6' },
    models: { type: 'string' },
    'no-ensemble': { type: 'boolean', default: false },
    out: { type: 'string', default: 'hourly-timeouts' },
    origin: { type: 'string', default: '11520' },
  },
});
const HORIZON = 48;
const M = 24;
const CONTEXT = 1000;
const TIMEOUT_S = 30;
const ORIGIN = Number(values.origin);

// Alternate ETTh1 / ETTh2 columns so that a small --series still covers both files.
const h1 = readEttColumns('ETTh1.csv');
const h2 = readEttColumns('ETTh2.csv');
const columns = h1.flatMap((c, j) => [c, h2[j]!]).slice(0, Number(values.series));
const cases = columns.map((c) => ({
  id: `${c.name}@${ORIGIN}`,
  context: c.values.slice(ORIGIN - CONTEXT, ORIGIN),
  actual: c.values.slice(ORIGIN, ORIGIN + HORIZON),
}));

const scale = (ctx: readonly number[]): number => {
  let s = 0;
  for (let t = M; t < ctx.length; t++) s += Math.abs(ctx[t]! - ctx[t - M]!);
  return s / (ctx.length - M);
};
const maseOf = (c: (typeof cases)[number], mean: readonly number[]): number =>
  c.actual.reduce((s, y, h) => s + Math.abs(y - mean[h]!), 0) / HORIZON / scale(c.context);

interface Row {
  maxWall: number;
  meanWall: number;
  maxCpu: number;
  meanCpu: number;
  mase: number;
  smape: number;
  coverage80: number;
  overLimit: number;
  slowest: string;
}
const rows: Record<string, Row> = {};
const load: number[] = [loadavg()[0]!];

const models = values.models?.split(',') ?? BUILTIN_MODELS.map((m) => m.info.id);
const single = createEngine({ poolSize: 1, timeoutMs: 600_000, maxQueue: 10, modelsDir: '/nonexistent', threads: 1 });
try {
  for (const model of models) {
    let maxWall = 0;
    let maxCpu = 0;
    let sumWall = 0;
    let sumCpu = 0;
    let slowest = '';
    const mases: number[] = [];
    const smapes: number[] = [];
    let inside = 0;
    let over = 0;
    for (const c of cases) {
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      const [fc] = await single.forecast({
        model,
        series: [c.context],
        horizon: HORIZON,
        quantileLevels: [0.1, 0.5, 0.9],
        numSamples: 0,
        seasonLength: M,
        seed: 1,
      });
      const wall = (performance.now() - t0) / 1000;
      const cu = process.cpuUsage(cpu0);
      const cpu = (cu.user + cu.system) / 1e6;
      if (wall > maxWall) {
        maxWall = wall;
        slowest = c.id;
      }
      maxCpu = Math.max(maxCpu, cpu);
      sumWall += wall;
      sumCpu += cpu;
      if (wall > TIMEOUT_S) over++;
      mases.push(maseOf(c, fc!.mean));
      smapes.push(smape(c.actual, fc!.mean));
      c.actual.forEach((y, h) => {
        if (y >= fc!.quantiles[0]![h]! && y <= fc!.quantiles[2]![h]!) inside++;
      });
    }
    const n = cases.length;
    rows[model] = {
      maxWall,
      meanWall: sumWall / n,
      maxCpu,
      meanCpu: sumCpu / n,
      mase: mases.reduce((a, b) => a + b, 0) / n,
      smape: smapes.reduce((a, b) => a + b, 0) / n,
      coverage80: inside / (n * HORIZON),
      overLimit: over,
      slowest,
    };
    const r = rows[model]!;
    load.push(loadavg()[0]!);
    console.log(
      `${model.padEnd(15)} max ${r.maxWall.toFixed(1)} s wall / ${r.maxCpu.toFixed(1)} s CPU, mean ${r.meanWall.toFixed(1)} / ${r.meanCpu.toFixed(1)}; MASE ${r.mase.toFixed(3)} sMAPE ${r.smape.toFixed(2)} cov80 ${(100 * r.coverage80).toFixed(1)}%; over ${TIMEOUT_S} s: ${over}/${n} (load ${loadavg()[0]!.toFixed(1)})`,
    );
  }
} finally {
  await single.close();
}

interface EnsembleRow {
  maxWall: number;
  meanWall: number;
  mase: number;
  smape: number;
  failures: string[];
  members: Record<string, number>;
}
let ensemble: EnsembleRow | null = null;
if (!values['no-ensemble']) {
  // The service's defaults (src/config.ts): INFERENCE_TIMEOUT_MS 30 s, INFERENCE_QUEUE_WAIT_MS 30 s, threads = cores.
  const engine = createEngine({ timeoutMs: TIMEOUT_S * 1000, queueWaitMs: 30_000, maxQueue: 256, modelsDir: '/nonexistent', threads: 1 });
  const ctx = {
    engine,
    catalog: new Catalog(engine),
    meter: unmeteredMeter,
    config: { forecast: { maxOutputValues: 2_000_000, maxJobWorkMs: Number.POSITIVE_INFINITY } },
  };
  const failures: string[] = [];
  const members: Record<string, number> = {};
  let maxWall = 0;
  let sumWall = 0;
  const mases: number[] = [];
  const smapes: number[] = [];
  try {
    for (const c of cases) {
      const req = EnsembleForecastRequest.parse({ inputs: [{ target: c.context }], parameters: { prediction_length: HORIZON, frequency: 'H' } });
      const t0 = performance.now();
      const plan = await planEnsemble(ctx, req, async () => true);
      const out = await executeEnsemble(ctx, plan, 'bench');
      const wall = (performance.now() - t0) / 1000;
      maxWall = Math.max(maxWall, wall);
      sumWall += wall;
      const mean = out.response.ensemble_result.outputs[0]!.mean.map((r) => r[0]!);
      mases.push(maseOf(c, mean));
      smapes.push(smape(c.actual, mean));
      for (const f of out.response.ensemble_metadata.selection.filters_applied) if (f.includes('failed')) failures.push(`${c.id}: ${f}`);
      for (const m of out.response.ensemble_metadata.models_in_ensemble) members[m] = (members[m] ?? 0) + 1;
      console.log(
        `ensemble ${c.id} ${wall.toFixed(1)} s; members ${out.response.ensemble_metadata.models_in_ensemble.join(',')} (load ${loadavg()[0]!.toFixed(1)})`,
      );
    }
  } finally {
    await engine.close();
  }
  const n = cases.length;
  ensemble = { maxWall, meanWall: sumWall / n, mase: mases.reduce((a, b) => a + b, 0) / n, smape: smapes.reduce((a, b) => a + b, 0) / n, failures, members };
  load.push(loadavg()[0]!);
  console.log(`ensemble max ${maxWall.toFixed(1)} s, failures: ${failures.length === 0 ? 'none' : failures.join(' | ')}`);
}

const dir = path.join(repoRoot, 'bench', 'results');
mkdirSync(dir, { recursive: true });
const generatedAt = new Date().toISOString();
writeFileSync(
  path.join(dir, `${values.out}.json`),
  `${JSON.stringify({ generatedAt, cases: cases.map((c) => c.id), context: CONTEXT, horizon: HORIZON, seasonLength: M, timeoutSeconds: TIMEOUT_S, load1: load, models: rows, ensemble }, null, 2)}\n`,
);
const md = [
  '# Long hourly series against the inference timeout',
  '',
  `Generated ${generatedAt} by \`node bench/hourly-timeouts.ts${process.argv.slice(2).length ? ` ${process.argv.slice(2).join(' ')}` : ''}\`: ${cases.length} real hourly series (${cases.map((c) => c.id).join(', ')}), ${CONTEXT} points each, horizon ${HORIZON}, season ${M}. Single models: one job per series through the engine's worker pool (one thread, jobs one at a time); wall-clock and CPU seconds per job (CPU = one core's work; wall-clock includes the shared machine's load). One-minute load average during the run: ${load.map((l) => l.toFixed(1)).join(', ')} (2 cores shared with other work). The default inference timeout is ${TIMEOUT_S} s of wall-clock per job.`,
  '',
  '| model | max s (wall) | max s (CPU) | mean s (wall) | mean s (CPU) | jobs over 30 s | slowest series | MASE | sMAPE | 80% coverage |',
  '|---|---|---|---|---|---|---|---|---|---|',
  ...Object.entries(rows).map(
    ([id, r]) =>
      `| ${id} | ${r.maxWall.toFixed(2)} | ${r.maxCpu.toFixed(2)} | ${r.meanWall.toFixed(2)} | ${r.meanCpu.toFixed(2)} | ${r.overLimit} | ${r.slowest} | ${r.mase.toFixed(3)} | ${r.smape.toFixed(2)} | ${(100 * r.coverage80).toFixed(1)}% |`,
  ),
  '',
  ...(ensemble
    ? [
        `Ensemble (default candidates, the service's default engine settings: ${availableParallelism()} threads, 30 s timeout per job, 30 s queue wait): max ${ensemble.maxWall.toFixed(1)} s, mean ${ensemble.meanWall.toFixed(1)} s wall-clock per request; MASE ${ensemble.mase.toFixed(3)}, sMAPE ${ensemble.smape.toFixed(2)}; members picked: ${Object.entries(
          ensemble.members,
        )
          .map(([m, k]) => `${m} ${k}`)
          .join(', ')}; candidate failures: ${ensemble.failures.length === 0 ? 'none' : ensemble.failures.join('; ')}.`,
        '',
      ]
    : []),
];
writeFileSync(path.join(dir, `${values.out}.md`), md.join('\n'));
console.log(`wrote bench/results/${values.out}.{json,md}`);
