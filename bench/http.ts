/**
 * HTTP path benchmark: requests per second and p50/p99 latency of /v1/forecast (small series,
 * naive model) next to a bare route (/healthz) in the same server. The ratio is the gateway's
 * overhead (auth, validation, metering, worker hop). The server runs in a child process; the load
 * comes from autocannon in this process over loopback.
 *   npm run bench:http      → bench/results/http.{json,md}
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { apiKey, REPO_ROOT, startServer } from './lib/server.ts';

const DURATION_S = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);

const server = await startServer({ RATE_LIMIT_FREE_PER_MINUTE: '100000000' });
try {
  const key = await apiKey(server.base);
  const body = JSON.stringify({ model: 'naive', inputs: [{ target: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12] }], parameters: { prediction_length: 12 } });
  const check = await fetch(`${server.base}/v1/forecast`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body,
  });
  if (check.status !== 200) throw new Error(`forecast failed: ${check.status} ${await check.text()}`);

  const run = (title: string, path: string, opts: Partial<autocannon.Options> = {}) =>
    autocannon({ url: server.base + path, connections: CONNECTIONS, duration: DURATION_S, title, ...opts });
  await run('warmup', '/v1/forecast', { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body, duration: 2 });
  const bare = await run('bare /healthz', '/healthz');
  const fc = await run('POST /v1/forecast (naive, 12 points)', '/v1/forecast', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body,
  });
  const row = (r: autocannon.Result) => ({
    requests_per_s: Math.round(r.requests.average),
    p50_ms: r.latency.p50,
    p99_ms: r.latency.p99,
    non_2xx: r.non2xx,
    errors: r.errors,
  });
  const result = {
    date: new Date().toISOString(),
    machine: { cores: (await import('node:os')).availableParallelism(), node: process.version },
    settings: { duration_s: DURATION_S, connections: CONNECTIONS },
    bare: row(bare),
    forecast: row(fc),
    overhead_ratio: Math.round((bare.requests.average / fc.requests.average) * 100) / 100,
  };
  writeFileSync(join(REPO_ROOT, 'bench/results/http.json'), `${JSON.stringify(result, null, 2)}\n`);
  const md = `# HTTP path benchmark

\`npm run bench:http\` — server in a child process, autocannon (${CONNECTIONS} connections, ${DURATION_S} s each) over loopback, ${result.machine.cores} cores, Node ${result.machine.node}, ${result.date}.

| route | req/s | p50 ms | p99 ms | non-2xx |
|---|---|---|---|---|
| GET /healthz (bare) | ${result.bare.requests_per_s} | ${result.bare.p50_ms} | ${result.bare.p99_ms} | ${result.bare.non_2xx} |
| POST /v1/forecast (naive, 12 points, API key, metered) | ${result.forecast.requests_per_s} | ${result.forecast.p50_ms} | ${result.forecast.p99_ms} | ${result.forecast.non_2xx} |

Gateway overhead ratio (bare req/s ÷ forecast req/s): **${result.overhead_ratio}**. The load generator shares the machine's cores with the server, so absolute figures are lower than on a dedicated client; the ratio is the figure to compare.
`;
  writeFileSync(join(REPO_ROOT, 'bench/results/http.md'), md);
  process.stdout.write(md);
} finally {
  await server.stop();
}
