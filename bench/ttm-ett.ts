/**
 * TTM R2 zero-shot evaluation on ETTh1/ETTh2 (protocol of reference/REFERENCE_NUMBERS.md) and
 * a speed benchmark on worker threads. Run: `SHARED_DIR=/work/shared npm run bench:ttm`
 * (options: `-- --speed-only`, `-- --eval-only`, `-- --workers N`).
 * Writes bench/results/ttm-ett.json and bench/results/ttm-ett.md.
 */
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import path from 'node:path';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { ttmForward } from '../src/engine/neural/ttm/forward.ts';
import { loadTtmRuntime, TTM_R2_ID } from '../src/engine/neural/ttm/model.ts';
import { TTM_CONTEXT, TTM_HORIZON } from '../src/engine/neural/ttm/weights.ts';
import type { TtmWeights } from '../src/engine/neural/ttm/weights.ts';

const repoRoot = path.resolve(import.meta.dirname, '..');
const sharedDir = process.env.SHARED_DIR ?? path.resolve(repoRoot, '..', 'shared');
const modelsDir = path.join(sharedDir, 'models');

interface Job {
  id: number;
  values: Float32Array;
  count: number;
}

/** CPU time of the current thread in ms (Node ≥ 23.9), so speed can be read apart from other load. */
function threadCpu(): number {
  const u = process.threadCpuUsage();
  return (u.user + u.system) / 1000;
}

/** A minimal pool: each job runs whole in one worker, jobs go to the first idle worker. */
class Pool {
  private readonly workers: Worker[];
  private readonly idle: Worker[];
  private readonly queue: { job: Job; resolve: (f: Float64Array) => void }[] = [];
  private readonly pending = new Map<number, (f: Float64Array) => void>();
  private cpuWaiters: ((ms: number) => void)[] = [];
  private nextId = 0;
  kind = '';
  constructor(n: number) {
    this.workers = Array.from({ length: n }, () => new Worker(new URL(import.meta.url), { workerData: { modelsDir } }));
    this.idle = [...this.workers];
    for (const w of this.workers) {
      w.on('message', (m: { id: number; forecast: Float64Array; kind: string } | { cpuMs: number }) => {
        if ('cpuMs' in m) {
          this.cpuWaiters.shift()!(m.cpuMs);
          return;
        }
        this.kind = m.kind;
        this.pending.get(m.id)!(m.forecast);
        this.pending.delete(m.id);
        this.idle.push(w);
        this.pump();
      });
      w.on('error', (e) => {
        throw e;
      });
    }
  }
  run(values: Float32Array, count: number): Promise<Float64Array> {
    return new Promise((resolve) => {
      this.queue.push({ job: { id: this.nextId++, values, count }, resolve });
      this.pump();
    });
  }
  private pump(): void {
    while (this.idle.length > 0 && this.queue.length > 0) {
      const w = this.idle.pop()!;
      const { job, resolve } = this.queue.shift()!;
      this.pending.set(job.id, resolve);
      w.postMessage(job);
    }
  }
  /** Total CPU time of the worker threads so far, in ms (call only while no job runs). */
  async cpuMs(): Promise<number> {
    const parts = await Promise.all(
      this.workers.map(
        (w) =>
          new Promise<number>((resolve) => {
            this.cpuWaiters.push(resolve);
            w.postMessage('cpu');
          }),
      ),
    );
    return parts.reduce((a, b) => a + b, 0);
  }
  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.terminate()));
  }
}

function readEtt(file: string): number[][] {
  const lines = readFileSync(file, 'utf8').trim().split('\n');
  return lines.slice(1).map((l) => l.split(',').slice(1).map(Number));
}

interface EvalResult {
  dataset: string;
  windows: number;
  channels: number;
  mse: number;
  mae: number;
  publishedMse: number;
  diffFromPublished: number;
  seconds: number;
}

const PUBLISHED: Record<string, number> = { ETTh1: 0.3628121316432953, ETTh2: 0.2757423520088196 };

async function evaluate(pool: Pool, dataset: string, batch: number): Promise<EvalResult> {
  const rows = readEtt(path.join(sharedDir, 'data', 'ett', `${dataset}.csv`));
  const C = rows[0]!.length;
  // StandardScaler fit on the train split [0, 8640), population std.
  const trainEnd = 8640;
  const mean = new Array<number>(C).fill(0);
  const std = new Array<number>(C).fill(0);
  for (let c = 0; c < C; c++) {
    let s = 0;
    for (let r = 0; r < trainEnd; r++) s += rows[r]![c]!;
    mean[c] = s / trainEnd;
    let v = 0;
    for (let r = 0; r < trainEnd; r++) v += (rows[r]![c]! - mean[c]!) ** 2;
    std[c] = Math.sqrt(v / trainEnd) || 1;
  }
  const start = 11520 - TTM_CONTEXT;
  const end = 14400;
  const scaled = (r: number, c: number) => (rows[r]![c]! - mean[c]!) / std[c]!;
  const windows = end - start - TTM_CONTEXT - TTM_HORIZON + 1;
  const series: { w: number; c: number }[] = [];
  for (let w = 0; w < windows; w++) for (let c = 0; c < C; c++) series.push({ w, c });
  const t0 = performance.now();
  let se = 0;
  let ae = 0;
  const jobs: Promise<void>[] = [];
  for (let b = 0; b < series.length; b += batch) {
    const part = series.slice(b, b + batch);
    const values = new Float32Array(part.length * TTM_CONTEXT);
    part.forEach(({ w, c }, i) => {
      for (let t = 0; t < TTM_CONTEXT; t++) values[i * TTM_CONTEXT + t] = scaled(start + w + t, c);
    });
    jobs.push(
      pool.run(values, part.length).then((f) => {
        part.forEach(({ w, c }, i) => {
          for (let t = 0; t < TTM_HORIZON; t++) {
            const e = f[i * TTM_HORIZON + t]! - scaled(start + w + TTM_CONTEXT + t, c);
            se += e * e;
            ae += Math.abs(e);
          }
        });
      }),
    );
  }
  await Promise.all(jobs);
  const seconds = (performance.now() - t0) / 1000;
  const n = series.length * TTM_HORIZON;
  const mse = se / n;
  return {
    dataset,
    windows,
    channels: C,
    mse,
    mae: ae / n,
    publishedMse: PUBLISHED[dataset]!,
    diffFromPublished: mse - PUBLISHED[dataset]!,
    seconds,
  };
}

/** Nominal clock: os.cpus() reports 0 on some VMs, /proc/cpuinfo has it. */
function clockMhz(): number {
  const fromOs = cpus()[0]?.speed ?? 0;
  if (fromOs > 0) return fromOs;
  try {
    const m = /cpu MHz\s*:\s*([\d.]+)/.exec(readFileSync('/proc/cpuinfo', 'utf8'));
    return m ? Math.round(Number(m[1])) : 0;
  } catch {
    return 0;
  }
}

/** Multiply-adds of one series through the network, from the layer shapes. */
function macsPerSeries(w: TtmWeights): number {
  let macs = w.patcher.in * w.patcher.out * 8 + w.adapter.in * w.adapter.out * 8 + w.head.in * w.head.out;
  for (const layer of [...w.encoder.flat(), ...w.decoder]) {
    const { n, d } = layer;
    macs += 5 * n * n * d + 5 * n * d * d;
  }
  return macs;
}

interface SpeedResult {
  batch: number;
  workers: number;
  /** Median and best of the measured rounds (the machine is shared; the best round is the least disturbed). */
  seriesPerSecond: number;
  bestSeriesPerSecond: number;
  msPerBatch: number;
  gflops: number;
  bestGflops: number;
  rounds: number[];
  /** Series per second of worker CPU time: the speed of one undisturbed core, whatever else runs. */
  seriesPerCpuSecond: number;
}

async function speed(pool: Pool, workers: number, batch: number, flopsPerSeries: number): Promise<SpeedResult> {
  const values = new Float32Array(batch * TTM_CONTEXT);
  for (let i = 0; i < values.length; i++) values[i] = Math.sin(i * 0.05) + 0.1 * Math.cos(i * 1.3);
  // Warm up, then 5 rounds of about 1.5 s, each keeping every worker busy with whole batches.
  await Promise.all(Array.from({ length: workers }, () => pool.run(values.slice(), batch)));
  const rounds: number[] = [];
  const cpu0 = await pool.cpuMs();
  let total = 0;
  for (let r = 0; r < 5; r++) {
    const t0 = performance.now();
    let done = 0;
    const loop = async (): Promise<void> => {
      while (performance.now() - t0 < 1500) {
        await pool.run(values.slice(), batch);
        done++;
      }
    };
    await Promise.all(Array.from({ length: workers }, loop));
    rounds.push((done * batch) / ((performance.now() - t0) / 1000));
    total += done * batch;
  }
  const seriesPerCpuSecond = total / (((await pool.cpuMs()) - cpu0) / 1000);
  const sorted = [...rounds].sort((a, b) => a - b);
  const median = sorted[2]!;
  const best = sorted[4]!;
  return {
    batch,
    workers,
    seriesPerSecond: median,
    bestSeriesPerSecond: best,
    msPerBatch: (1000 * batch * workers) / median,
    gflops: (median * flopsPerSeries) / 1e9,
    bestGflops: (best * flopsPerSeries) / 1e9,
    rounds,
    seriesPerCpuSecond,
  };
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const workers = Number(args[args.indexOf('--workers') + 1] || 0) || Math.min(2, cpus().length);
  const doEval = !args.includes('--speed-only');
  const doSpeed = !args.includes('--eval-only');
  const rt = loadTtmRuntime(modelsDir);
  const flopsPerSeries = 2 * macsPerSeries(rt.weights);
  const mhz = clockMhz();
  const loadAverageBefore = loadavg();
  const pool = new Pool(workers);
  const evals: EvalResult[] = [];
  if (doEval) {
    for (const ds of ['ETTh1', 'ETTh2']) {
      const r = await evaluate(pool, ds, 256);
      console.log(
        `${ds}: MSE ${r.mse.toFixed(10)} (published ${r.publishedMse}, diff ${r.diffFromPublished.toExponential(2)}), MAE ${r.mae.toFixed(10)}, ${r.seconds.toFixed(1)} s`,
      );
      evals.push(r);
    }
  }
  const speeds: SpeedResult[] = [];
  if (doSpeed) {
    for (const b of [1, 32, 256]) {
      const r = await speed(pool, workers, b, flopsPerSeries);
      console.log(
        `batch ${b}: ${r.seriesPerSecond.toFixed(0)} series/s (best round ${r.bestSeriesPerSecond.toFixed(0)}) on ${workers} workers, ${r.gflops.toFixed(2)} GFLOP/s (best ${r.bestGflops.toFixed(2)}); ${r.seriesPerCpuSecond.toFixed(0)} series per worker CPU-second`,
      );
      speeds.push(r);
    }
  }
  await pool.close();
  // Rough peaks at the nominal clock: 2 FMA units per core; 4 float lanes for 128-bit WebAssembly SIMD,
  // 16 for the AVX-512 the CPU has (unreachable from WebAssembly).
  const peakWasm = (workers * 2 * 4 * 2 * mhz) / 1000;
  const peakAvx512 = (workers * 2 * 16 * 2 * mhz) / 1000;
  const result = {
    model: TTM_R2_ID,
    runtime: pool.kind || rt.kind,
    node: process.version,
    cpu: cpus()[0]?.model,
    mhz,
    workers,
    flopsPerSeries,
    loadAverageBefore,
    loadAverageAfter: loadavg(),
    evals,
    speeds,
    peakGflops: { wasmSimd128: peakWasm, avx512: peakAvx512 },
    date: new Date().toISOString(),
  };
  const outDir = path.join(repoRoot, 'bench', 'results');
  mkdirSync(outDir, { recursive: true });
  if (doEval && doSpeed) {
    writeFileSync(path.join(outDir, 'ttm-ett.json'), `${JSON.stringify(result, null, 2)}\n`);
    writeFileSync(path.join(outDir, 'ttm-ett.md'), markdown(result));
    console.log('wrote bench/results/ttm-ett.{json,md}');
  }
}

function markdown(r: {
  runtime: string;
  node: string;
  cpu: string | undefined;
  mhz: number;
  workers: number;
  flopsPerSeries: number;
  loadAverageBefore: number[];
  loadAverageAfter: number[];
  evals: EvalResult[];
  speeds: SpeedResult[];
  peakGflops: { wasmSimd128: number; avx512: number };
  date: string;
}): string {
  const lines = [
    `# TTM R2 (${TTM_R2_ID}, 512 → 96): zero-shot ETT accuracy and speed`,
    '',
    `Run ${r.date} with \`npm run bench:ttm\`; runtime \`${r.runtime}\`, Node ${r.node}, ${r.cpu} at ${r.mhz} MHz, ${r.workers} worker threads.`,
    '',
    '## Accuracy (protocol of reference/REFERENCE_NUMBERS.md: all 7 channels, train-split scaling, test windows, stride 1)',
    '',
    '| dataset | windows | MSE (this) | MSE (IBM, published) | difference | MAE (this) |',
    '|---|---|---|---|---|---|',
    ...r.evals.map(
      (e) => `| ${e.dataset} | ${e.windows} | ${e.mse.toFixed(10)} | ${e.publishedMse} | ${e.diffFromPublished.toExponential(2)} | ${e.mae.toFixed(10)} |`,
    ),
    '',
    '## Speed (forward pass only, batches of B series; every worker busy with whole batches)',
    '',
    `${(r.flopsPerSeries / 1e6).toFixed(2)} MFLOP per series (2 × multiply-adds).`,
    '',
    '| batch | series/s (median of 5 rounds) | series/s (best round) | ms per batch (one worker) | GFLOP/s (median) | GFLOP/s (best) | series per worker CPU-second | × workers (undisturbed estimate) |',
    '|---|---|---|---|---|---|---|---|',
    ...r.speeds.map(
      (s) =>
        `| ${s.batch} | ${s.seriesPerSecond.toFixed(0)} | ${s.bestSeriesPerSecond.toFixed(0)} | ${s.msPerBatch.toFixed(2)} | ${s.gflops.toFixed(2)} | ${s.bestGflops.toFixed(2)} | ${s.seriesPerCpuSecond.toFixed(0)} | ${(s.seriesPerCpuSecond * r.workers).toFixed(0)} |`,
    ),
    '',
    `Rough peak of ${r.workers} cores at ${r.mhz} MHz (2 FMA units per core): ${r.peakGflops.wasmSimd128.toFixed(0)} GFLOP/s with ` +
      `128-bit SIMD (what WebAssembly can use), ${r.peakGflops.avx512.toFixed(0)} GFLOP/s with AVX-512.`,
    'Wall-clock figures include the time other processes took from the 2 cores; the CPU-second column divides by ' +
      "the workers' own thread CPU time over the whole measurement (`process.threadCpuUsage`, message handling included), " +
      'so it shows the speed of the code itself (cache sharing with other processes still slows it somewhat).',
    `The machine is shared with other work (1-minute load average ${r.loadAverageBefore[0]!.toFixed(2)} before the run, ` +
      `${r.loadAverageAfter[0]!.toFixed(2)} after it, on 2 cores): figures vary from run to run, the best round is the least disturbed.`,
    '',
  ];
  return lines.join('\n');
}

if (!isMainThread) {
  const rt = loadTtmRuntime((workerData as { modelsDir: string }).modelsDir);
  parentPort!.on('message', (job: Job | 'cpu') => {
    if (job === 'cpu') {
      parentPort!.postMessage({ cpuMs: threadCpu() });
      return;
    }
    const { forecast } = ttmForward(rt, { values: job.values, count: job.count });
    parentPort!.postMessage({ id: job.id, forecast, kind: rt.kind }, [forecast.buffer as ArrayBuffer]);
  });
} else {
  await main();
}
