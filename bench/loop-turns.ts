/**
 * Where the event loop is held, in process (issue #11): the app with the real engine (2 worker
 * threads) listens in this process; each request of bench/abuse.ts is sent from a worker thread
 * (so the client's work is not on the measured loop), while this thread records its own turns:
 * the longest gap between two ticks of a 1 ms timer, `monitorEventLoopDelay` (1 ms resolution),
 * and every garbage collection pause (PerformanceObserver 'gc': kind and length), each long gap
 * listed with the GC pauses inside it, and the most CPU time this thread spent between two ticks
 * (`longest_turn_cpu_ms`, process.threadCpuUsage: the work of the longest turn without the time the
 * thread waited for a core, which on a shared machine is most of a long gap). Cheaper and less
 * load-sensitive than bench:abuse.
 *   npx node bench/loop-turns.ts [name regex] [repeats]
 *   node --cpu-prof --cpu-prof-dir=/tmp/prof bench/loop-turns.ts 'largest input'   (then read the profile)
 *   node --trace-gc bench/loop-turns.ts 'largest input'
 * Prints one JSON line per request; writes nothing.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { constants, monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { createDeps } from '../src/deps.ts';
import { capYoungGeneration } from '../src/heap-flags.ts';
import { SCENARIOS } from './lib/abuse-scenarios.ts';
import { apiKey } from './lib/server.ts';

capYoungGeneration();
const only = process.argv[2] ? new RegExp(process.argv[2], 'i') : null;
const repeats = Number(process.argv[3] ?? 3);

const dataDir = mkdtempSync(join(tmpdir(), 'tsfm-loop-'));
const config = loadConfig({
  ...process.env,
  DATA_DIR: dataDir,
  LOG_LEVEL: 'silent',
  SCHEDULER: 'off',
  RATE_LIMIT_FREE_PER_MINUTE: '100000000',
  FREE_CREDITS: '100000000',
  FREE_CREDITS_ON: 'register',
});

const deps = await createDeps(config, { logger: false });
const app = await buildApp(deps);
await app.listen({ port: 0, host: '127.0.0.1' });
const address = app.server.address();
const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
const key = await apiKey(base);

/** Sends one request (or several in parallel) from its own thread; answers statuses and bytes read. */
function send(path: string, body: string, parallel: number): Promise<{ status: number; bytes: number; error?: string }[]> {
  const w = new Worker(
    `const { parentPort, workerData: d } = require('node:worker_threads');
     Promise.all(Array.from({ length: d.parallel }, async () => {
       const r = await fetch(d.url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: 'Bearer ' + d.key }, body: d.body });
       const b = await r.arrayBuffer();
       return { status: r.status, bytes: b.byteLength, ...(r.status >= 400 ? { error: Buffer.from(b).toString('utf8').slice(0, 300) } : {}) };
     })).then((x) => parentPort.postMessage(x));`,
    { eval: true, workerData: { url: base + path, key, body, parallel } },
  );
  return new Promise((resolve, reject) => {
    w.once('message', (x) => {
      void w.terminate();
      resolve(x);
    });
    w.once('error', reject);
  });
}

const GC_KIND: Record<number, string> = {
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
};
let gcs: { at: number; ms: number; kind: string }[] = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    gcs.push({ at: e.startTime, ms: e.duration, kind: GC_KIND[(e as unknown as { detail?: { kind?: number } }).detail?.kind ?? -1] ?? '?' });
  }
}).observe({ entryTypes: ['gc'] });

/** Every long gap on the hrtime clock, written to LOOP_GAPS_FILE at the end (for reading a CPU profile). */
const allGaps: { endUs: number; ms: number }[] = [];
const round = (x: number) => Math.round(x * 10) / 10;
for (const s of SCENARIOS) {
  if (only && !only.test(s.name)) continue;
  const body = s.body();
  for (let r = 0; r < repeats; r++) {
    // Wait for the worker thread to be started before measuring (a thread start is not this request's work).
    await new Promise((res) => setTimeout(res, 300));
    gcs = [];
    const gaps: { at: number; ms: number }[] = [];
    let last = performance.now();
    // The main thread's own CPU time between two ticks: the work of that turn, without the time the
    // thread waited for a core (on a busy machine the wall-clock gap is mostly that).
    const cpuNow = () => {
      const c = process.threadCpuUsage();
      return (c.user + c.system) / 1000;
    };
    let lastCpu = cpuNow();
    let longestCpu = 0;
    const tick = setInterval(() => {
      const now = performance.now();
      const cpu = cpuNow();
      longestCpu = Math.max(longestCpu, cpu - lastCpu);
      lastCpu = cpu;
      if (now - last > 20) {
        gaps.push({ at: last, ms: now - last });
        // The same stretch on the clock of a CPU profile (microseconds), to read the profile's samples inside it.
        allGaps.push({ endUs: Number(process.hrtime.bigint() / 1000n), ms: now - last });
      }
      last = now;
    }, 1);
    const h = monitorEventLoopDelay({ resolution: 1 });
    h.enable();
    const t0 = performance.now();
    const results = await send(s.path, body, s.parallel ?? 1);
    const seconds = (performance.now() - t0) / 1000;
    h.disable();
    clearInterval(tick);
    const longest = gaps.reduce((a, g) => Math.max(a, g.ms), 0);
    console.log(
      JSON.stringify({
        scenario: s.name.slice(0, 60),
        status: [...new Set(results.map((x) => x.status))].join(','),
        ...(results[0]?.error && !/refused/.test(s.name) ? { error: results[0].error } : {}),
        seconds: Math.round(seconds * 100) / 100,
        longest_turn_ms: round(longest),
        longest_turn_cpu_ms: round(longestCpu),
        loop_delay_p99_ms: round(h.percentile(99) / 1e6),
        loop_delay_max_ms: round(h.max / 1e6),
        turns_over_20ms: gaps.length,
        gc_max_ms: round(gcs.reduce((a, g) => Math.max(a, g.ms), 0)),
        gc_total_ms: round(gcs.reduce((a, g) => a + g.ms, 0)),
        // Each long turn, with the GC pauses that fell inside it.
        long_turns: gaps
          .filter((g) => g.ms > 30)
          .map((g) => ({
            ms: round(g.ms),
            gc: gcs
              .filter((x) => x.at >= g.at && x.at < g.at + g.ms)
              .map((x) => `${x.kind} ${round(x.ms)}`)
              .join(', '),
          })),
      }),
    );
  }
}
if (process.env.LOOP_GAPS_FILE) writeFileSync(process.env.LOOP_GAPS_FILE, JSON.stringify(allGaps));
await app.close();
await deps.close();
rmSync(dataDir, { recursive: true, force: true });
