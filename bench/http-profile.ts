/**
 * Profiles one step of the HTTP ladder (bench/http.ts): the server (src/main.ts) runs in a child
 * process with --cpu-prof, autocannon loads one route, and the server's profile is summed into
 * self time per function, per request (the figures to compare, since the machine is shared), with
 * the server's CPU time per request from /proc.
 *   npm run bench:http-profile                       → naive forecast on SQLite, 8 s
 *   PROFILE_STEP=batch PROFILE_DB=postgres npm run bench:http-profile
 * PROFILE_STEP: auth | naive | batch; PROFILE_CONNECTIONS (16; batch 8); PROFILE_SECONDS (8).
 * The .cpuprofile files stay in bench/out/profiles/ (open them in Chrome DevTools).
 */
import { mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';
import { json, REPO_ROOT, startServer } from './lib/server.ts';

const STEP = process.env.PROFILE_STEP ?? 'naive';
const DB = process.env.PROFILE_DB ?? 'sqlite';
const SECONDS = Number(process.env.PROFILE_SECONDS ?? 8);
const CONNECTIONS = Number(process.env.PROFILE_CONNECTIONS ?? (STEP === 'batch' ? 8 : 16));
const PG_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
if (!['auth', 'naive', 'batch'].includes(STEP)) throw new Error(`PROFILE_STEP: auth, naive or batch, not ${STEP}`);
if (DB !== 'sqlite' && DB !== 'postgres') throw new Error(`PROFILE_DB: sqlite or postgres, not ${DB}`);

const series = (n: number): number[] => Array.from({ length: n }, (_, i) => 100 + 10 * Math.sin((2 * Math.PI * i) / 12) + i * 0.5);
const naiveBody = { model: 'naive', inputs: [{ target: series(12) }], parameters: { prediction_length: 12 } };
const perRequest = STEP === 'batch' ? 64 : 1;

const dir = join(REPO_ROOT, 'bench/out/profiles', `${STEP}-${DB}-${Date.now()}`);
mkdirSync(dir, { recursive: true });
let pgName: string | null = null;
if (DB === 'postgres') {
  pgName = `profile_${process.pid}_${Date.now()}`;
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  await c.query(`create database ${pgName}`);
  await c.end();
}
const pgUrl = (): string => {
  const u = new URL(PG_URL);
  u.pathname = `/${pgName}`;
  return u.toString();
};
const server = await startServer({
  RATE_LIMIT_FREE_PER_MINUTE: '1000000000',
  FREE_CREDITS: '1000000000',
  NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${dir}`,
  ...(pgName ? { DATABASE_URL: pgUrl() } : {}),
});
const cpuMs = (): number => {
  const fields = readFileSync(`/proc/${server.child.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
};
let requests = 0;
try {
  const reg = await json<{ token: string }>(server.base, '/api/auth/register', {
    body: { email: `profile-${Date.now()}@example.com`, password: 'benchmark-password' },
  });
  const key = (await json<{ key: string }>(server.base, '/api/account/keys', { token: reg.body.token, body: { label: 'profile' } })).body.key;
  const auth = { authorization: `Bearer ${key}` };
  const opts =
    STEP === 'auth'
      ? { method: 'GET' as const, headers: auth }
      : {
          method: 'POST' as const,
          headers: { 'content-type': 'application/json', ...auth },
          body: JSON.stringify(STEP === 'batch' ? { requests: Array.from({ length: 64 }, () => naiveBody) } : naiveBody),
        };
  const url = server.base + (STEP === 'auth' ? '/api/account/me' : STEP === 'batch' ? '/v1/forecast/batch' : '/v1/forecast');
  await autocannon({ url, connections: CONNECTIONS, duration: 2, ...opts });
  const c0 = cpuMs();
  const r = await autocannon({ url, connections: CONNECTIONS, duration: SECONDS, ...opts });
  const spent = cpuMs() - c0;
  requests = r.requests.total;
  console.log(
    `${STEP} on ${DB}, ${CONNECTIONS} connections: ${Math.round(r.requests.average)} req/s (${Math.round(r.requests.average * perRequest)} forecasts/s), ` +
      `p50 ${r.latency.p50} ms, non-2xx ${r.non2xx}; server CPU ${Math.round((spent * 1000) / requests)} µs/request`,
  );
} finally {
  await server.stop();
  if (pgName) {
    const c = new pg.Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(`drop database if exists ${pgName} with (force)`);
    await c.end();
  }
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}
// The main thread's profile is the largest file (the others are worker threads).
const main = readdirSync(dir)
  .map((f) => join(dir, f))
  .sort((a, b) => statSync(b).size - statSync(a).size)[0];
if (!main || requests === 0) throw new Error('no profile written');
const profile = JSON.parse(readFileSync(main, 'utf8')) as Profile;
const frames = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
const self = new Map<string, number>();
profile.samples.forEach((id, i) => {
  const f = frames.get(id);
  if (!f) return;
  const where = f.url.replace(`file://${REPO_ROOT}/`, '').replace(/node_modules\/((?:@[^/]+\/)?[^/]+).*/, '$1');
  const name = `${f.functionName || '(anonymous)'} ${where}${where ? `:${f.lineNumber + 1}` : ''}`;
  self.set(name, (self.get(name) ?? 0) + (profile.timeDeltas[i] ?? 0));
});
console.log(`\nself time per request (µs; the whole profile, start-up included, over ${requests} requests), top 30 — ${main}`);
for (const [name, us] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 30)) console.log(`${(us / requests).toFixed(1).padStart(8)}  ${name}`);
