/**
 * /healthz while every inference thread is busy (issue #11, ADR 0010 fifth addendum): the server
 * (src/main.ts) in a child process, four clients sending auto-arima forecasts of a 1,500-point
 * hourly series without pause (INFERENCE_ACCOUNT_CONCURRENCY 2: both worker threads busy), and this
 * process polling GET /healthz every 10 ms for CONTENTION_SECONDS (15). Run with the inference
 * threads' priority lowered (INFERENCE_WORKER_NICE=10, the default) and not (0), alternating,
 * CONTENTION_ROUNDS (2) times each, on the same machine in one run.
 *   npm run bench:contention
 * Writes bench/results/contention.{json,md}.
 */
import { writeFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import { apiKey, REPO_ROOT, startServer } from './lib/server.ts';

const SECONDS = Number(process.env.CONTENTION_SECONDS ?? 15);
const ROUNDS = Number(process.env.CONTENTION_ROUNDS ?? 2);

interface Row {
  nice: number;
  healthz: { n: number; p50_ms: number; p90_ms: number; p99_ms: number; max_ms: number };
  forecasts_done: number;
}

async function run(nice: number): Promise<Row> {
  const s = await startServer({
    RATE_LIMIT_FREE_PER_MINUTE: '1000000000',
    FREE_CREDITS: '1000000000',
    INFERENCE_WORKER_NICE: String(nice),
    INFERENCE_ACCOUNT_CONCURRENCY: '2',
  });
  try {
    const key = await apiKey(s.base);
    // Deterministic noise, so every run fits the same series.
    let seed = 7;
    const noise = () => {
      seed = (seed * 16807) % 2147483647;
      return (seed / 2147483647 - 0.5) * 6;
    };
    const target = Array.from({ length: 1500 }, (_, i) => 100 + 10 * Math.sin((2 * Math.PI * i) / 24) + noise() + i * 0.01);
    const body = JSON.stringify({ model: 'auto-arima', inputs: [{ target }], parameters: { prediction_length: 48 } });
    let stop = false;
    let done = 0;
    const client = async () => {
      while (!stop) {
        const r = await fetch(`${s.base}/v1/forecast`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
          body,
        });
        await r.arrayBuffer();
        if (r.status === 200) done += 1;
      }
    };
    const clients = Array.from({ length: 4 }, client);
    await new Promise((r) => setTimeout(r, 1000));
    const lat: number[] = [];
    const t0 = Date.now();
    while (Date.now() - t0 < SECONDS * 1000) {
      const a = performance.now();
      const r = await fetch(`${s.base}/healthz`);
      await r.arrayBuffer();
      lat.push(performance.now() - a);
      await new Promise((r) => setTimeout(r, 10));
    }
    stop = true;
    await Promise.all(clients);
    lat.sort((a, b) => a - b);
    const q = (p: number) => Math.round(lat[Math.min(lat.length - 1, Math.floor(p * lat.length))]! * 10) / 10;
    return { nice, healthz: { n: lat.length, p50_ms: q(0.5), p90_ms: q(0.9), p99_ms: q(0.99), max_ms: q(1) }, forecasts_done: done };
  } finally {
    await s.stop();
  }
}

const loadBefore = loadavg()[0] ?? 0;
const rows: Row[] = [];
for (let i = 0; i < ROUNDS; i++) {
  for (const nice of [0, 10]) {
    const r = await run(nice);
    console.log(`INFERENCE_WORKER_NICE=${nice}: /healthz ${JSON.stringify(r.healthz)}, auto-arima forecasts done ${r.forecasts_done}`);
    rows.push(r);
  }
}
const report = {
  date: new Date().toISOString(),
  machine: { cores: availableParallelism(), node: process.version, load_average_1min: { before: loadBefore, after: loadavg()[0] ?? 0 } },
  seconds: SECONDS,
  rows,
};
writeFileSync(join(REPO_ROOT, 'bench/results/contention.json'), `${JSON.stringify(report, null, 2)}\n`);
const md = `# /healthz while every inference thread is busy

\`npm run bench:contention\` — the server in a child process, four clients sending auto-arima forecasts of a 1,500-point
hourly series without pause (both worker threads busy), /healthz polled every 10 ms for ${SECONDS} s from this process;
the inference threads' priority lowered by INFERENCE_WORKER_NICE steps (10, the default) or not (0), alternating.
${report.machine.cores} cores, Node ${report.machine.node}, ${report.date}, load average ${loadBefore.toFixed(1)} before and ${report.machine.load_average_1min.after.toFixed(1)} after.

| INFERENCE_WORKER_NICE | /healthz samples | p50 ms | p90 ms | p99 ms | max ms | auto-arima forecasts done |
|---|---|---|---|---|---|---|
${rows.map((r) => `| ${r.nice} | ${r.healthz.n} | ${r.healthz.p50_ms} | ${r.healthz.p90_ms} | ${r.healthz.p99_ms} | ${r.healthz.max_ms} | ${r.forecasts_done} |`).join('\n')}
`;
writeFileSync(join(REPO_ROOT, 'bench/results/contention.md'), md);
process.stdout.write(md);
