/**
 * Abuse benchmark (issue #11): the largest accepted request of each kind, and a few refused ones,
 * sent to the real server (src/main.ts in a child process, fresh SQLite database). For each: the
 * status, the time, the response size, the server's peak RSS and its RSS 3 s after the request
 * (memory given back?), the server's event-loop delay (perf_hooks.monitorEventLoopDelay, through
 * bench/lib/loop-probe.ts) and the latency of GET /healthz, polled every 10 ms from a worker thread
 * of this process while the request runs. Target: /healthz p99 under 50 ms.
 *   npm run bench:abuse     → bench/results/abuse.{json,md}
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { SEMI_SPACE_FLAG } from '../src/heap-flags.ts';
import { SCENARIOS } from './lib/abuse-scenarios.ts';
import { apiKey, freePort, REPO_ROOT } from './lib/server.ts';

type ProbeReport = {
  op: 'report';
  rss: number;
  peakRss: number;
  mainHeap: number;
  mainHeapUsed: number;
  external: number;
  arrayBuffers: number;
  maxGcMs: number;
  smaps: { brk: number; arenas: number; otherAnon: number; files: number } | null;
  spaces: Record<string, number>;
  loopDelayMs: { p50: number; p99: number; max: number };
};

const MB = 1024 * 1024;
const round = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d;

async function startProbedServer(): Promise<{ base: string; child: ChildProcess; ask(op: 'reset' | 'report' | 'gc'): Promise<ProbeReport> }> {
  const port = await freePort();
  // ABUSE_NODE_ARGS: extra flags for the server, e.g. '--cpu-prof --cpu-prof-dir=/tmp/prof' to see where its main thread goes.
  // The server is started as `npm start` and the image start it: with the young generation capped (src/heap-flags.ts).
  const nodeArgs = [SEMI_SPACE_FLAG, ...(process.env.ABUSE_NODE_ARGS?.split(' ').filter(Boolean) ?? [])];
  const child = spawn(process.execPath, [...nodeArgs, '--import', join(REPO_ROOT, 'bench/lib/loop-probe.ts'), join(REPO_ROOT, 'src/main.ts')], {
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: mkdtempSync(join(tmpdir(), 'tsfm-abuse-')),
      LOG_LEVEL: 'warn',
      RATE_LIMIT_FREE_PER_MINUTE: '100000000',
      FREE_CREDITS: '100000000',
      FREE_CREDITS_ON: 'register',
    },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    try {
      if ((await fetch(`${base}/healthz`)).ok) break;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  const ask = (op: 'reset' | 'report' | 'gc') =>
    new Promise<ProbeReport>((resolve) => {
      child.once('message', (m) => resolve(m as ProbeReport));
      child.send({ op });
    });
  return { base, child, ask };
}

/** Polls /healthz every 10 ms from its own thread (so this process's JSON work does not skew it). */
function startPinger(base: string): { ready: Promise<void>; stop(): Promise<number[]> } {
  const worker = new Worker(
    `const { parentPort, workerData } = require('node:worker_threads');
     const lat = []; let on = true;
     (async () => {
       // Warm-up (thread start, connection set-up) before anything is recorded.
       for (let i = 0; i < 3; i++) { const r = await fetch(workerData + '/healthz'); await r.text(); }
       parentPort.postMessage('ready');
       while (on) {
         const t = performance.now();
         try { const r = await fetch(workerData + '/healthz'); await r.text(); lat.push(performance.now() - t); } catch { lat.push(10000); }
         await new Promise((r) => setTimeout(r, 10));
       }
       parentPort.postMessage(lat);
     })();
     parentPort.on('message', () => { on = false; });`,
    { eval: true, workerData: base },
  );
  return {
    ready: new Promise((resolve) => worker.once('message', () => resolve())),
    stop: () =>
      new Promise((resolve) => {
        worker.once('message', (lat: number[]) => {
          void worker.terminate();
          resolve(lat);
        });
        worker.postMessage('stop');
      }),
  };
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? 0 : (s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] as number);
};

class Exit extends Error {}
// ABUSE_ONLY=<regex>: run only the scenarios whose name matches (for profiling); results are then not written.
const only = process.env.ABUSE_ONLY ? new RegExp(process.env.ABUSE_ONLY, 'i') : null;
const server = await startProbedServer();
const rows: Record<string, unknown>[] = [];
/** Every /healthz latency polled while an accepted request ran, all rows together. */
const accepted: number[] = [];
try {
  const key = await apiKey(server.base);
  const idle = await server.ask('report');
  for (const s of SCENARIOS) {
    if (only && !only.test(s.name)) continue;
    const body = s.body();
    await server.ask('reset');
    const pinger = startPinger(server.base);
    await pinger.ready;
    const t0 = performance.now();
    const results = await Promise.all(
      Array.from({ length: s.parallel ?? 1 }, async () => {
        const r = await fetch(server.base + s.path, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${key}` },
          body,
        });
        const buf = await r.arrayBuffer();
        return { status: r.status, bytes: buf.byteLength };
      }),
    );
    const seconds = (performance.now() - t0) / 1000;
    const healthz = await pinger.stop();
    const during = await server.ask('report');
    await server.ask('reset'); // so that the report 3 s later shows the GC pauses of the quiet time alone (the idle compaction)
    await new Promise((r) => setTimeout(r, Number(process.env.ABUSE_AFTER_MS ?? 3000)));
    const afterwards = await server.ask('report');
    const row = {
      scenario: s.name,
      status: [...new Set(results.map((r) => r.status))].join(','),
      request_mb: round(Buffer.byteLength(body) / MB, 2),
      response_mb: round(results.reduce((a, r) => a + r.bytes, 0) / results.length / MB, 2),
      seconds: round(seconds, 2),
      peak_rss_mb: Math.round(during.peakRss / MB),
      rss_after_3s_mb: Math.round(afterwards.rss / MB),
      main_heap_after_3s_mb: Math.round(afterwards.mainHeap / MB),
      main_heap_used_after_3s_mb: Math.round(afterwards.mainHeapUsed / MB),
      external_after_3s_mb: Math.round(afterwards.external / MB),
      smaps_after_3s_mb: afterwards.smaps,
      main_spaces_after_3s_mb: afterwards.spaces,
      max_gc_pause_ms: round(during.maxGcMs),
      idle_gc_pause_ms: round(afterwards.maxGcMs),
      loop_delay_p99_ms: round(during.loopDelayMs.p99),
      loop_delay_max_ms: round(during.loopDelayMs.max),
      healthz_samples: healthz.length,
      healthz_p50_ms: round(pct(healthz, 50)),
      healthz_p99_ms: round(pct(healthz, 99)),
      healthz_max_ms: round(Math.max(0, ...healthz)),
    };
    console.log(JSON.stringify(row));
    rows.push(row);
    if (row.status === '200') accepted.push(...healthz);
  }
  if (only) throw new Exit();
  const final = await server.ask('report');
  // And once more after 20 s with nothing to do (V8 gives its grown heaps back lazily).
  await new Promise((r) => setTimeout(r, 20_000));
  const settled = await server.ask('report');
  const where = (r: ProbeReport) => ({
    rss_mb: Math.round(r.rss / MB),
    main_heap_mb: Math.round(r.mainHeap / MB),
    main_heap_used_mb: Math.round(r.mainHeapUsed / MB),
    external_mb: Math.round(r.external / MB),
    array_buffers_mb: Math.round(r.arrayBuffers / MB),
    smaps_mb: r.smaps,
    main_spaces_mb: r.spaces,
  });
  console.log('idle', JSON.stringify(where(idle)));
  console.log('settled', JSON.stringify(where(settled)));
  // ABUSE_NODE_ARGS='--expose-gc': a forced full collection afterwards, to see what it would give back.
  if (process.env.ABUSE_NODE_ARGS?.includes('--expose-gc')) {
    const gc = (await server.ask('gc')) as unknown as { ms: number };
    console.log('forced gc', round(gc.ms), 'ms', JSON.stringify(where(await server.ask('report'))));
  }
  const result = {
    date: new Date().toISOString(),
    machine: { cores: availableParallelism(), node: process.version },
    idle_rss_mb: Math.round(idle.rss / MB),
    idle_main_heap_mb: Math.round(idle.mainHeap / MB),
    final_rss_mb: Math.round(final.rss / MB),
    settled_rss_mb: Math.round(settled.rss / MB),
    settled_main_heap_mb: Math.round(settled.mainHeap / MB),
    idle_memory: where(idle),
    settled_memory: where(settled),
    target: 'healthz p99 < 50 ms while any accepted request runs',
    healthz_accepted_pooled: {
      samples: accepted.length,
      p50_ms: round(pct(accepted, 50)),
      p99_ms: round(pct(accepted, 99)),
      p999_ms: round(pct(accepted, 99.9)),
      max_ms: round(Math.max(0, ...accepted)),
      over_50ms: accepted.filter((x) => x >= 50).length,
    },
    scenarios: rows,
  };
  writeFileSync(join(REPO_ROOT, 'bench/results/abuse.json'), `${JSON.stringify(result, null, 2)}\n`);
  const cols = [
    'scenario',
    'status',
    'request_mb',
    'response_mb',
    'seconds',
    'peak_rss_mb',
    'rss_after_3s_mb',
    'main_heap_after_3s_mb',
    'max_gc_pause_ms',
    'idle_gc_pause_ms',
    'loop_delay_p99_ms',
    'loop_delay_max_ms',
    'healthz_p99_ms',
    'healthz_max_ms',
  ] as const;
  const md = `# Abuse benchmark

\`npm run bench:abuse\` — the real server (src/main.ts, SQLite, default settings: ${result.machine.cores} cores so 2 workers,
one account gets 1 of them) in a child process, ${result.machine.cores} cores shared with other work, Node ${result.machine.node}, ${result.date}.
Event-loop delay is the server's own (\`perf_hooks.monitorEventLoopDelay\`, 5 ms resolution); \`/healthz\` is polled every
10 ms from a separate thread while the request runs. RSS idle before the first scenario: ${result.idle_rss_mb} MB; after the last: ${result.final_rss_mb} MB;
20 s later: ${result.settled_rss_mb} MB (main thread's heap ${result.settled_main_heap_mb} MB; idle ${result.idle_main_heap_mb} MB).
Target: /healthz p99 under 50 ms while any accepted request runs.
All ${result.healthz_accepted_pooled.samples} polls during accepted requests together: p50 ${result.healthz_accepted_pooled.p50_ms} ms,
p99 ${result.healthz_accepted_pooled.p99_ms} ms, p99.9 ${result.healthz_accepted_pooled.p999_ms} ms, max ${result.healthz_accepted_pooled.max_ms} ms
(${result.healthz_accepted_pooled.over_50ms} at 50 ms or more). Per row below, p99 is about the worst or second-worst poll of that row.

| ${cols.join(' | ')} |
|${cols.map(() => '---').join('|')}|
${rows.map((r) => `| ${cols.map((c) => String(r[c])).join(' | ')} |`).join('\n')}
`;
  writeFileSync(join(REPO_ROOT, 'bench/results/abuse.md'), md);
  console.log(md);
} catch (err) {
  if (!(err instanceof Exit)) throw err;
} finally {
  server.child.kill('SIGTERM');
}
