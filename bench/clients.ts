/**
 * Client-side throughput: how fast the SDK's forecastMany, the `tsfm` CLI and the Python client
 * push many series through the real server (src/main.ts in a child process, real engine).
 *   npm run bench:clients            (SERIES=960 LENGTH=120 MODEL=naive by default)
 * Writes bench/results/clients.json and clients.md. Bounded: a few thousand small series.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { TsfmClient } from '../sdk/src/index.ts';
import { apiKey, REPO_ROOT, startServer } from './lib/server.ts';

const SERIES = Number(process.env.SERIES ?? 960);
const LENGTH = Number(process.env.LENGTH ?? 120);
const MODEL = process.env.MODEL ?? 'naive';
const H = 12;

function makeSeries(): number[][] {
  return Array.from({ length: SERIES }, (_, i) => Array.from({ length: LENGTH }, (_, t) => 100 + i + 10 * Math.sin((2 * Math.PI * t) / 12) + (t % 7)));
}

interface Row {
  client: string;
  concurrency: number;
  seconds: number;
  series_per_second: number;
  calls: number;
}

function run(cmd: string, args: string[], env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

const server = await startServer({ LOG_LEVEL: 'warn' });
const rows: Row[] = [];
const dir = mkdtempSync(join(tmpdir(), 'tsfm-bench-clients-'));
try {
  const key = await apiKey(server.base);
  const client = new TsfmClient({ baseUrl: server.base, apiKey: key, timeoutMs: 300_000 });
  const data = makeSeries();
  const inputs = data.map((target, i) => ({ target, start: '2015-01-01', item_id: `s${i}` }));
  const calls = Math.ceil(SERIES / 64);
  await client.forecastMany({ model: MODEL, inputs: inputs.slice(0, 64), parameters: { prediction_length: H, frequency: 'MS' } }); // warm-up
  for (const concurrency of [1, 2, 4, 8]) {
    const t0 = performance.now();
    const r = await client.forecastMany({ model: MODEL, inputs, parameters: { prediction_length: H, frequency: 'MS' } }, { concurrency });
    const s = (performance.now() - t0) / 1000;
    if (r.outputs.length !== SERIES) throw new Error(`expected ${SERIES} outputs, got ${r.outputs.length}`);
    rows.push({ client: 'sdk forecastMany', concurrency, seconds: s, series_per_second: SERIES / s, calls });
  }
  const single = new TsfmClient({ baseUrl: server.base, apiKey: key, timeoutMs: 300_000 });
  {
    const t0 = performance.now();
    await single.forecast({ model: MODEL, inputs, parameters: { prediction_length: H, frequency: 'MS' } });
    const s = (performance.now() - t0) / 1000;
    rows.push({ client: 'sdk forecast (one call, all series)', concurrency: 1, seconds: s, series_per_second: SERIES / s, calls: 1 });
  }

  const csv = ['unique_id,ds,y'];
  data.forEach((ys, i) => {
    ys.forEach((y, t) => {
      csv.push(`s${i},${new Date(Date.UTC(2015, t, 1)).toISOString().slice(0, 10)},${y}`);
    });
  });
  const input = join(dir, 'in.csv');
  writeFileSync(input, `${csv.join('\n')}\n`);
  for (const concurrency of [1, 4]) {
    const t0 = performance.now();
    const r = await run(
      process.execPath,
      [
        join(REPO_ROOT, 'sdk/bin/tsfm.js'),
        'forecast',
        input,
        '-m',
        MODEL,
        '-H',
        String(H),
        '--freq',
        'MS',
        '-o',
        join(dir, 'out.csv'),
        '--concurrency',
        String(concurrency),
      ],
      {
        TSFM_BASE_URL: server.base,
        TSFM_API_KEY: key,
        TSFM_CONFIG: join(dir, 'cfg.json'),
      },
    );
    const s = (performance.now() - t0) / 1000;
    if (r.code !== 0) throw new Error(`tsfm failed: ${r.stderr}`);
    rows.push({ client: 'tsfm forecast (CSV in and out, process start included)', concurrency, seconds: s, series_per_second: SERIES / s, calls });
  }

  const py = ['/usr/bin/python3', 'python3'].find((p) => spawnSync(p, ['-c', 'import pandas'], { stdio: 'ignore' }).status === 0);
  if (py) {
    const script = `
import time, pandas as pd
from tsfm_client import Client
df = pd.read_csv(${JSON.stringify(input)}, parse_dates=["ds"])
c = Client(timeout=300)
for w in (1, 4):
    t0 = time.perf_counter()
    out = c.forecast(df, h=${H}, model=${JSON.stringify(MODEL)}, freq="MS", max_workers=w)
    assert len(out) == ${SERIES * H}
    print(w, time.perf_counter() - t0)
`;
    const r = spawnSync(py, ['-c', script], {
      env: { ...process.env, PYTHONPATH: join(REPO_ROOT, 'clients/python'), TSFM_BASE_URL: server.base, TSFM_API_KEY: key },
      encoding: 'utf8',
    });
    if (r.status !== 0) throw new Error(`python failed: ${r.stderr}`);
    for (const line of r.stdout.trim().split('\n')) {
      const [w, s] = line.split(' ').map(Number);
      if (w !== undefined && s !== undefined)
        rows.push({ client: 'python Client.forecast (pandas DataFrame in and out)', concurrency: w, seconds: s, series_per_second: SERIES / s, calls });
    }
  } else process.stderr.write('no python3 imports pandas: the Python client is not measured\n');
} finally {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}

const meta = { date: new Date().toISOString(), series: SERIES, length: LENGTH, horizon: H, model: MODEL, cpus: cpus().length, node: process.version };
writeFileSync(join(REPO_ROOT, 'bench/results/clients.json'), `${JSON.stringify({ meta, rows }, null, 2)}\n`);
const md = [
  '# Clients: series per second through the HTTP API',
  '',
  `\`npm run bench:clients\` — ${SERIES} series of ${LENGTH} points, model \`${MODEL}\`, horizon ${H}, frequency MS; the server (src/main.ts, real engine) and the client share ${meta.cpus} cores; ${meta.date}, Node ${meta.node}.`,
  'Calls of 64 series; "concurrency" is the calls in flight (SDK `concurrency`, CLI `--concurrency`, Python `max_workers`).',
  'One run on a machine shared with other work: differences between concurrency levels are within its noise; the CLI and Python rows include parsing and writing the data (and, for the CLI, starting Node).',
  '',
  '| client | concurrency | calls | seconds | series/s |',
  '|---|---:|---:|---:|---:|',
  ...rows.map((r) => `| ${r.client} | ${r.concurrency} | ${r.calls} | ${r.seconds.toFixed(2)} | ${r.series_per_second.toFixed(0)} |`),
  '',
].join('\n');
writeFileSync(join(REPO_ROOT, 'bench/results/clients.md'), md);
process.stdout.write(md);
