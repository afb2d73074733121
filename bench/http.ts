/**
 * HTTP path benchmark: the whole ladder from a bare route to metered forecasts, on SQLite and on
 * PostgreSQL, in one run. Each step is requests per second and p50/p99 latency under the same
 * load (autocannon, BENCH_CONNECTIONS connections for BENCH_SECONDS seconds, split into
 * BENCH_ROUNDS interleaved rounds of the whole ladder) against the real
 * server (src/main.ts) in a child process:
 *   1. GET /healthz                         bare route (no auth, no database)
 *   2. GET /api/account/me                  auth only (API key lookup)
 *   3. POST /v1/validate                    auth + a small JSON body
 *   4. POST /v1/forecast                    naive, 12 points, API key, metered (hold, debit, usage event)
 *   5. POST /v1/forecast                    theta, 120 points
 *   6. POST /v1/forecast/batch              64 × naive (forecasts per second = requests × 64), BENCH_BATCH_CONNECTIONS (8)
 * Then, at moderate load, one request at a time: the p50 of the bare route and of the metered naive
 * forecast, timed in this process (BENCH_SEQUENTIAL of each, 400); on PostgreSQL once more on a
 * second server with the API-key lookup cache off (CREDENTIAL_CACHE_SECONDS=0, ADR 0025).
 * Ratios are taken within one server's run (the machine is shared, absolute figures drift).
 * PostgreSQL runs in a fresh database created for the run and dropped after it
 * (BENCH_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/test names the server to
 * use; the step is skipped with a message when it cannot be reached).
 *   npm run bench:http                        → bench/results/http.{json,md}
 *   BENCH_SECONDS=3 BENCH_DB=sqlite npm run bench:http
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';
import { json, REPO_ROOT, startServer } from './lib/server.ts';

const DURATION_S = Number(process.env.BENCH_SECONDS ?? 6);
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const PG_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const BACKENDS = (process.env.BENCH_DB ?? 'sqlite,postgres').split(',');
const BATCH = 64;
/**
 * The batch step's connections. A batch request carries 64 forecasts, so the load generator's
 * share of the two cores is negligible there (unlike the single-forecast steps), and what matters
 * is that the server always has a batch to work on while others are being written out or wait on
 * PostgreSQL round trips, and that concurrent batches can share a commit: 8 in flight
 * (512 forecasts). 16 × 64 would mostly measure queueing (latency grows, throughput does not).
 */
const BATCH_CONNECTIONS = Math.min(CONNECTIONS, Number(process.env.BENCH_BATCH_CONNECTIONS ?? 8));

interface Step {
  id: string;
  label: string;
  req_per_s: number;
  /** Forecasts per second (batch: requests × 64). */
  forecasts_per_s?: number;
  p50_ms: number;
  p99_ms: number;
  non_2xx: number;
  errors: number;
  /**
   * CPU time of the server process (all its threads) per request and per forecast, read from
   * /proc (Linux; absent elsewhere). Unlike req/s it hardly depends on what else runs on the
   * machine: the figure to compare across runs on a loaded machine.
   */
  server_cpu_us_per_request?: number;
  server_cpu_us_per_forecast?: number;
}

interface BackendResult {
  backend: 'sqlite' | 'postgres';
  steps: Step[];
  ratios: Record<string, number>;
  /** Moderate load: one request at a time, timed in this process (sub-millisecond). */
  sequential: { requests: number; bare_p50_ms: number; naive_p50_ms: number; overhead_p50_ms: number };
  /** PostgreSQL: the same, right after, on a second server with the API-key lookup cache off (ADR 0025). */
  sequential_without_credential_cache?: BackendResult['sequential'];
}

const series = (n: number): number[] => Array.from({ length: n }, (_, i) => 100 + 10 * Math.sin((2 * Math.PI * i) / 12) + i * 0.5);
const naiveBody = { model: 'naive', inputs: [{ target: series(12) }], parameters: { prediction_length: 12 } };
const thetaBody = { model: 'theta', inputs: [{ target: series(120) }], parameters: { prediction_length: 12 } };
const batchBody = { requests: Array.from({ length: BATCH }, () => naiveBody) };

async function createPgDatabase(): Promise<{ url: string; drop(): Promise<void> } | null> {
  const name = `bench_http_${process.pid}_${Date.now()}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  try {
    await admin.connect();
  } catch (err) {
    console.log(`PostgreSQL at ${PG_URL} not reachable (${err instanceof Error ? err.message : String(err)}): skipping it`);
    return null;
  }
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(PG_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: PG_URL });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
    },
  };
}

async function runBackend(backend: 'sqlite' | 'postgres'): Promise<BackendResult | null> {
  const pgdb = backend === 'postgres' ? await createPgDatabase() : null;
  if (backend === 'postgres' && !pgdb) return null;
  const server = await startServer({
    RATE_LIMIT_FREE_PER_MINUTE: '1000000000',
    FREE_CREDITS: '1000000000',
    ...(pgdb ? { DATABASE_URL: pgdb.url } : {}),
  });
  try {
    const email = `bench-${Date.now()}@example.com`;
    const reg = await json<{ token: string }>(server.base, '/api/auth/register', { body: { email, password: 'benchmark-password' } });
    const keyRes = await json<{ key: string }>(server.base, '/api/account/keys', { token: reg.body.token, body: { label: 'bench' } });
    const key = keyRes.body.key;
    const auth = { authorization: `Bearer ${key}` };
    const post = (body: unknown) => ({ method: 'POST' as const, headers: { 'content-type': 'application/json', ...auth }, body: JSON.stringify(body) });
    // /api/account/me is a user route: an API key may act for its user; fall back to the session if not.
    const meProbe = await json(server.base, '/api/account/me', { token: key });
    const meAuth = meProbe.status === 200 ? auth : { authorization: `Bearer ${reg.body.token}` };
    for (const [path, body] of [
      ['/v1/forecast', naiveBody],
      ['/v1/forecast', thetaBody],
      ['/v1/forecast/batch', batchBody],
    ] as const) {
      const r = await json(server.base, path, { token: key, body });
      if (r.status !== 200) throw new Error(`${backend}: ${path} failed: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
    }
    const ladder: { id: string; label: string; path: string; opts: Partial<autocannon.Options>; perRequest?: number }[] = [
      { id: 'bare', label: 'GET /healthz (bare)', path: '/healthz', opts: {} },
      {
        id: 'auth',
        label: `GET /api/account/me (auth only, ${meProbe.status === 200 ? 'API key' : 'session'})`,
        path: '/api/account/me',
        opts: { headers: meAuth },
      },
      { id: 'validate', label: 'POST /v1/validate', path: '/v1/validate', opts: post({}) },
      { id: 'naive', label: 'POST /v1/forecast naive, 12 points', path: '/v1/forecast', opts: post(naiveBody), perRequest: 1 },
      { id: 'theta', label: 'POST /v1/forecast theta, 120 points', path: '/v1/forecast', opts: post(thetaBody), perRequest: 1 },
      // Fewer connections for the batch: 16 × 64 forecasts in flight would only measure queueing.
      {
        id: 'batch',
        label: `POST /v1/forecast/batch ${BATCH} × naive (${BATCH_CONNECTIONS} connections)`,
        path: '/v1/forecast/batch',
        opts: { ...post(batchBody), connections: BATCH_CONNECTIONS },
        perRequest: BATCH,
      },
    ];
    // Warm-up: JIT, statement caches, worker threads.
    await autocannon({ url: `${server.base}/v1/forecast`, connections: CONNECTIONS, duration: 2, ...post(naiveBody) });
    // The ladder runs ROUNDS times, each step DURATION_S / ROUNDS seconds a round, so that load
    // from other work drifting during the run touches every step alike; a step's figures sum its
    // rounds (req/s = all completed responses over all its seconds; p50 the median of the rounds').
    const acc = ladder.map(() => ({ total: 0, seconds: 0, p50s: [] as number[], p99: 0, non2xx: 0, errors: 0, cpuMs: 0 as number | null }));
    for (let round = 0; round < ROUNDS; round++) {
      for (const [k, s] of ladder.entries()) {
        const cpu0 = serverCpuMs(server.child.pid);
        const r = await autocannon({
          url: server.base + s.path,
          connections: CONNECTIONS,
          duration: DURATION_S / ROUNDS,
          timeout: 60,
          title: s.label,
          ...s.opts,
        });
        const a = acc[k]!;
        const cpu1 = serverCpuMs(server.child.pid);
        a.cpuMs = a.cpuMs === null || cpu0 === null || cpu1 === null ? null : a.cpuMs + (cpu1 - cpu0);
        a.total += r.requests.total;
        a.seconds += r.duration;
        a.p50s.push(r.latency.p50);
        a.p99 = Math.max(a.p99, r.latency.p99);
        a.non2xx += r.non2xx;
        a.errors += r.errors;
      }
    }
    const steps: Step[] = ladder.map((s, k) => {
      const a = acc[k]!;
      const rps = a.total / a.seconds;
      const p50s = a.p50s.slice().sort((x, y) => x - y);
      const step: Step = {
        id: s.id,
        label: s.label,
        req_per_s: Math.round(rps),
        ...(s.perRequest ? { forecasts_per_s: Math.round(rps * s.perRequest) } : {}),
        p50_ms: p50s[Math.floor(p50s.length / 2)]!,
        p99_ms: a.p99,
        non_2xx: a.non2xx,
        errors: a.errors,
        ...(a.cpuMs !== null && a.total > 0
          ? {
              server_cpu_us_per_request: Math.round((a.cpuMs * 1000) / a.total),
              ...(s.perRequest ? { server_cpu_us_per_forecast: Math.round((a.cpuMs * 1000) / (a.total * s.perRequest)) } : {}),
            }
          : {}),
      };
      console.log(
        `${backend.padEnd(8)} ${s.label.padEnd(44)} ${String(step.req_per_s).padStart(7)} req/s  p50 ${step.p50_ms} ms  p99 ${step.p99_ms} ms  non-2xx ${step.non_2xx}  server CPU ${step.server_cpu_us_per_request ?? '?'} µs/request`,
      );
      return step;
    });
    const by = (id: string): Step => steps.find((x) => x.id === id)!;
    const ratio = (a: number, b: number): number => Math.round((a / b) * 1000) / 1000;
    const ratios = {
      naive_over_auth: ratio(by('naive').req_per_s, by('auth').req_per_s),
      naive_over_bare: ratio(by('naive').req_per_s, by('bare').req_per_s),
      auth_over_bare: ratio(by('auth').req_per_s, by('bare').req_per_s),
      theta_over_naive: ratio(by('theta').req_per_s, by('naive').req_per_s),
      batch_forecasts_over_naive: ratio(by('batch').forecasts_per_s!, by('naive').req_per_s),
      naive_p50_overhead_over_bare_ms: Math.round((by('naive').p50_ms - by('bare').p50_ms) * 100) / 100,
      ...(by('naive').server_cpu_us_per_request && by('auth').server_cpu_us_per_request
        ? { naive_over_auth_server_cpu: ratio(by('naive').server_cpu_us_per_request!, by('auth').server_cpu_us_per_request!) }
        : {}),
    };
    const sequential = await sequentialLatency(server.base, post(naiveBody));
    console.log(
      `${backend.padEnd(8)} one request at a time: bare p50 ${sequential.bare_p50_ms} ms, naive p50 ${sequential.naive_p50_ms} ms, overhead ${sequential.overhead_p50_ms} ms`,
    );
    let uncached: BackendResult['sequential'] | undefined;
    if (pgdb) {
      // The same key on a second server with CREDENTIAL_CACHE_SECONDS=0: every request looks its key up.
      const plain = await startServer({ RATE_LIMIT_FREE_PER_MINUTE: '1000000000', DATABASE_URL: pgdb.url, CREDENTIAL_CACHE_SECONDS: '0' });
      try {
        uncached = await sequentialLatency(plain.base, post(naiveBody));
      } finally {
        await plain.stop();
      }
      console.log(
        `${backend.padEnd(8)} one request at a time, credential cache off: bare p50 ${uncached.bare_p50_ms} ms, naive p50 ${uncached.naive_p50_ms} ms, overhead ${uncached.overhead_p50_ms} ms`,
      );
    }
    return { backend, steps, ratios, sequential, ...(uncached ? { sequential_without_credential_cache: uncached } : {}) };
  } finally {
    await server.stop();
    await pgdb?.drop();
  }
}

/**
 * Moderate load: SEQUENTIAL requests one after the other on one kept-alive connection, bare route
 * and metered naive forecast interleaved, each timed with performance.now(); the p50 of each and
 * their difference (what metering, validation and the model add to one call's latency).
 */
const SEQUENTIAL = Number(process.env.BENCH_SEQUENTIAL ?? 400);
async function sequentialLatency(base: string, naive: { method: 'POST'; headers: Record<string, string>; body: string }): Promise<BackendResult['sequential']> {
  const bare: number[] = [];
  const forecast: number[] = [];
  const time = async (url: string, init: RequestInit | undefined, into: number[]) => {
    const t0 = performance.now();
    const r = await fetch(url, init);
    await r.arrayBuffer();
    if (r.status !== 200) throw new Error(`${url}: ${r.status}`);
    into.push(performance.now() - t0);
  };
  for (let i = 0; i < SEQUENTIAL + 50; i++) {
    const b: number[] = [];
    const f: number[] = [];
    await time(`${base}/healthz`, undefined, b);
    await time(`${base}/v1/forecast`, naive, f);
    // The first 50 of each warm the connection and the code paths.
    if (i >= 50) {
      bare.push(...b);
      forecast.push(...f);
    }
  }
  const p50 = (xs: number[]) => {
    const sorted = xs.slice().sort((a, b) => a - b);
    return Math.round(sorted[Math.floor(sorted.length / 2)]! * 1000) / 1000;
  };
  const b = p50(bare);
  const f = p50(forecast);
  return { requests: SEQUENTIAL, bare_p50_ms: b, naive_p50_ms: f, overhead_p50_ms: Math.round((f - b) * 1000) / 1000 };
}

/** User + system CPU time of a process so far, in ms (Linux /proc; null elsewhere). */
function serverCpuMs(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    // utime and stime (fields 14 and 15 of stat, 12 and 13 after the command), in clock ticks of 10 ms.
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return null;
  }
}

const loadBefore = loadavg()[0] ?? 0;
const results: BackendResult[] = [];
for (const b of BACKENDS) {
  if (b !== 'sqlite' && b !== 'postgres') throw new Error(`BENCH_DB: unknown backend ${b}`);
  const r = await runBackend(b);
  if (r) results.push(r);
}
const report = {
  date: new Date().toISOString(),
  machine: { cores: availableParallelism(), node: process.version, load_average_1min: { before: loadBefore, after: loadavg()[0] ?? 0 } },
  settings: { duration_s: DURATION_S, rounds: ROUNDS, connections: CONNECTIONS, batch: BATCH, batch_connections: BATCH_CONNECTIONS },
  results,
};
writeFileSync(join(REPO_ROOT, 'bench/results/http.json'), `${JSON.stringify(report, null, 2)}\n`);
const table = (r: BackendResult): string =>
  [
    `### ${r.backend === 'sqlite' ? 'SQLite' : 'PostgreSQL'}`,
    '',
    '| step | req/s | forecasts/s | p50 ms | p99 ms | non-2xx | server CPU µs/request | µs/forecast |',
    '|---|---|---|---|---|---|---|---|',
    ...r.steps.map(
      (s) =>
        `| ${s.label} | ${s.req_per_s} | ${s.forecasts_per_s ?? ''} | ${s.p50_ms} | ${s.p99_ms} | ${s.non_2xx} | ${s.server_cpu_us_per_request ?? ''} | ${s.server_cpu_us_per_forecast ?? ''} |`,
    ),
    '',
    `Ratios in this run: metered naive forecast ÷ auth-only **${r.ratios.naive_over_auth}**, ÷ bare ${r.ratios.naive_over_bare}; ` +
      `auth-only ÷ bare ${r.ratios.auth_over_bare}; batch forecasts/s ÷ single forecasts/s ${r.ratios.batch_forecasts_over_naive}; ` +
      `p50 of the forecast minus p50 of the bare route ${r.ratios.naive_p50_overhead_over_bare_ms} ms` +
      (r.ratios.naive_over_auth_server_cpu !== undefined ? `; server CPU per request, naive ÷ auth-only ${r.ratios.naive_over_auth_server_cpu}.` : '.'),
    '',
    `Moderate load, one request at a time (${r.sequential.requests} of each, timed in the client): GET /healthz p50 ${r.sequential.bare_p50_ms} ms, ` +
      `metered naive forecast p50 ${r.sequential.naive_p50_ms} ms: **${r.sequential.overhead_p50_ms} ms** over the bare route.` +
      (r.sequential_without_credential_cache
        ? ` Right after, on a second server with the API-key lookup cache off (\`CREDENTIAL_CACHE_SECONDS=0\`, ADR 0025): bare ${r.sequential_without_credential_cache.bare_p50_ms} ms, ` +
          `forecast ${r.sequential_without_credential_cache.naive_p50_ms} ms, ${r.sequential_without_credential_cache.overhead_p50_ms} ms over the bare route.`
        : ''),
    '',
  ].join('\n');
const md = `# HTTP path benchmark: the ladder

\`npm run bench:http\` — the server (src/main.ts) in a child process, autocannon in this process
(${CONNECTIONS} connections, the batch step ${BATCH_CONNECTIONS}; ${DURATION_S} s a step in ${ROUNDS} interleaved rounds) over loopback, ${report.machine.cores} cores shared with the
load generator and with other work, Node ${report.machine.node}, ${report.date}. Every forecast is
metered (API key, its credits taken and a durable usage event written before the answer; naive
runs inline and is charged in one step, theta is held first: ADR 0014). The machine is noisy:
compare the ratios within one run rather than absolute figures across runs; the server's CPU time
per request (all its threads, from /proc) depends least on what else runs. One-minute load
average ${report.machine.load_average_1min.before.toFixed(1)} before the run and ${report.machine.load_average_1min.after.toFixed(1)} after it (${report.machine.cores} cores):
above the core count, every figure mostly measures waiting for a core.

${results.map(table).join('\n')}`;
writeFileSync(join(REPO_ROOT, 'bench/results/http.md'), md);
process.stdout.write(md);
