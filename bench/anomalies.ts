/**
 * Anomaly detection (the code behind POST /v1/detect-anomalies: planAnomalies + executeAnomalies)
 * on real series with injected anomalies, seeded:
 *   SHARED_DIR=/work/shared npm run bench:anomalies            # ~1-2 minutes on 2 threads
 * Series: every 80th M3 monthly series of 96+ points (train + test) and 4 windows of 240 hours of
 * ETTh1 (OT and HUFL). Each model is fitted once; its levels are scored on that fit (residualScores,
 * the service's own scoring). Into each: 3 spikes (±5 to ±8 robust standard deviations of the first
 * differences) and one level shift (5 of them, from a point in the second half to the end).
 * Scoring: a flag on a spike is a hit; a flag in the first 3 steps of a shift detects it (counted
 * once); any other flag is a false alarm. Precision = hits / flags, recall = events found / events.
 * Writes bench/results/anomalies.{json,md}.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { executeAnomalies, planAnomalies, residualScores, robustSigma } from '../src/analytics/anomalies.ts';
import { DetectAnomaliesRequest, type DetectAnomaliesResponse } from '../src/analytics/anomaly-schemas.ts';
import { jsonText, serialiseJson } from '../src/shared/json.ts';
import { Catalog } from '../src/catalog/catalog.ts';
import { mulberry32 } from '../src/engine/stats/prng.ts';
import { unmeteredMeter } from '../src/forecasting/metering.ts';
import { executePrepared } from '../src/forecasting/service.ts';
import { loadM3, repoRoot, sharedDir } from './lib/m3.ts';
import { benchEngine } from './lib/run.ts';

const SEED = 20_261_125;
const rand = mulberry32(SEED);

interface Case {
  name: string;
  frequency: string;
  y: number[];
  spikes: number[];
  shift: number;
}

function inject(name: string, frequency: string, clean: number[]): Case {
  const n = clean.length;
  const scale = robustSigma(clean.slice(1).map((v, t) => v - clean[t]!)) || 1;
  const y = clean.slice();
  const spikes = new Set<number>();
  const shift = Math.floor(n / 2 + rand() * (n / 2 - 4));
  while (spikes.size < 3) {
    const t = 12 + Math.floor(rand() * (n - 12));
    if (Math.abs(t - shift) > 3 && ![...spikes].some((s) => Math.abs(s - t) < 3)) spikes.add(t);
  }
  const sign = () => (rand() < 0.5 ? -1 : 1);
  const shiftBy = sign() * 5 * scale;
  for (let t = shift; t < n; t++) y[t] = y[t]! + shiftBy;
  for (const t of spikes) y[t] = y[t]! + sign() * (5 + 3 * rand()) * scale;
  return { name, frequency, y, spikes: [...spikes].sort((a, b) => a - b), shift };
}

const cases: Case[] = [];
loadM3('monthly')
  .filter((s) => s.train.length + s.test.length >= 96)
  .filter((_, i) => i % 80 === 0)
  .forEach((s) => {
    cases.push(inject(`M3 ${s.id}`, 'MS', [...s.train, ...s.test]));
  });
const ett = readFileSync(path.join(sharedDir(), 'data', 'ett', 'ETTh1.csv'), 'utf8')
  .trim()
  .split('\n')
  .slice(1);
for (const [col, name] of [
  [7, 'OT'],
  [1, 'HUFL'],
] as const) {
  const values = ett.map((line) => Number(line.split(',')[col]));
  for (let w = 0; w < 2; w++) cases.push(inject(`ETTh1 ${name} window ${w}`, 'h', values.slice(w * 6000, w * 6000 + 240)));
}

const { engine } = benchEngine();
const ctx = {
  engine,
  catalog: new Catalog(engine),
  meter: unmeteredMeter,
  config: { forecast: { maxOutputValues: 2_000_000, maxJobWorkMs: Number.POSITIVE_INFINITY } },
};

const CONFIGS: Record<string, unknown>[] = [
  { method: 'forecast', model: 'auto-ets', level: 95 },
  { method: 'forecast', model: 'auto-ets', level: 99 },
  { method: 'forecast', model: 'auto-ets', level: 99.9 },
  { method: 'forecast', model: 'seasonal-naive', level: 99 },
  { method: 'forecast', model: 'naive', level: 99 },
  { method: 'zscore', window: 24, sensitivity: 3 },
  { method: 'zscore', window: 24, sensitivity: 4 },
];

/** In-sample fits per model and frequency: fitted once, scored at every level. */
const fits = new Map<string, number[][]>();

async function flagsOf(req: ReturnType<typeof DetectAnomaliesRequest.parse>, group: Case[]): Promise<number[][]> {
  if (req.method === 'zscore') {
    // The answer as a client reads it (its matrices are written as JSON text).
    const res = JSON.parse(jsonText(await serialiseJson(await executeAnomalies(ctx, req, await planAnomalies(ctx, req))))) as DetectAnomaliesResponse;
    return res.outputs.map((o) => o.anomaly.flatMap((row, t) => (row[0] ? [t] : [])));
  }
  const key = `${req.model} ${req.frequency}`;
  let fitted = fits.get(key);
  if (!fitted) {
    const plan = await planAnomalies(ctx, req);
    const fc = await executePrepared(ctx, plan.fit!.prepared);
    fitted = fc.outputs.map((o) => (o.fitted_values ?? []).map((row) => row[0] ?? Number.NaN));
    fits.set(key, fitted);
  }
  return group.map((c, i) => {
    const s = residualScores(c.y, fitted[i]!, req.level, 0);
    return s.anomaly.flatMap((a, t) => (a ? [t] : []));
  });
}

interface Row {
  config: string;
  precision: number;
  recall: number;
  f1: number;
  spikeRecall: number;
  shiftRecall: number;
  flags: number;
  seconds: number;
}
const rows: Row[] = [];
for (const cfg of CONFIGS) {
  const label = Object.entries(cfg)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');
  const t0 = performance.now();
  let flags = 0;
  let hits = 0;
  let spikesFound = 0;
  let shiftsFound = 0;
  // Series of one frequency go as one request, as a client would send them (the two requests run side by side).
  const groups = ['MS', 'h'].map((freq) => cases.filter((c) => c.frequency === freq));
  const flagged = await Promise.all(
    groups.map((group) =>
      flagsOf(DetectAnomaliesRequest.parse({ ...cfg, inputs: group.map((c) => ({ target: c.y })), frequency: group[0]!.frequency }), group),
    ),
  );
  for (const [g, group] of groups.entries()) {
    const flaggedPerCase = flagged[g]!;
    group.forEach((c, i) => {
      const flagged = flaggedPerCase[i]!;
      flags += flagged.length;
      let shiftHit = false;
      for (const t of flagged) {
        if (c.spikes.includes(t)) hits++;
        else if (t >= c.shift && t < c.shift + 3) {
          hits++;
          shiftHit = true;
        }
      }
      spikesFound += c.spikes.filter((s) => flagged.includes(s)).length;
      if (shiftHit) shiftsFound++;
    });
  }
  const events = cases.length * 4;
  const precision = flags === 0 ? 0 : hits / flags;
  const recall = (spikesFound + shiftsFound) / events;
  rows.push({
    config: label,
    precision,
    recall,
    f1: precision + recall === 0 ? 0 : (2 * precision * recall) / (precision + recall),
    spikeRecall: spikesFound / (cases.length * 3),
    shiftRecall: shiftsFound / cases.length,
    flags,
    seconds: (performance.now() - t0) / 1000,
  });
  console.log(label, rows.at(-1));
}
await engine.close();

const pct = (x: number) => (100 * x).toFixed(1);
const md = [
  '# Anomaly detection on real series with injected anomalies',
  '',
  `Generated by \`SHARED_DIR=/work/shared npm run bench:anomalies\` (bench/anomalies.ts), seed ${SEED}, on ${new Date().toISOString().slice(0, 10)}.`,
  '',
  `${cases.length} series: ${cases.filter((c) => c.frequency === 'MS').length} M3 monthly series of 96+ points (train + test, every 80th) and 4 windows of 240 hours of ETTh1 (OT, HUFL).`,
  'Injected into each: 3 spikes of ±5 to ±8 robust standard deviations of the first differences, and one level shift of ±5 of them from a point',
  'in the second half to the end. A flag on a spike is a hit; a flag in the first 3 steps of the shift detects it; any other flag is a false alarm.',
  `Events: ${cases.length * 4} (${cases.length * 3} spikes, ${cases.length} shifts).`,
  '',
  '| configuration | precision % | recall % | F1 % | spike recall % | shift recall % | flags | seconds |',
  '|---|---|---|---|---|---|---|---|',
  ...rows.map(
    (r) =>
      `| ${r.config} | ${pct(r.precision)} | ${pct(r.recall)} | ${pct(r.f1)} | ${pct(r.spikeRecall)} | ${pct(r.shiftRecall)} | ${r.flags} | ${r.seconds.toFixed(1)} |`,
  ),
  '',
  'Seconds: wall-clock on the shared 2-core machine (BENCH_POOL threads, default 2); a model is fitted once, in the row of its first level, the other levels reuse the fit.',
  '',
];
writeFileSync(path.join(repoRoot, 'bench', 'results', 'anomalies.md'), md.join('\n'));
writeFileSync(path.join(repoRoot, 'bench', 'results', 'anomalies.json'), `${JSON.stringify({ seed: SEED, series: cases.length, rows }, null, 2)}\n`);
console.log(md.join('\n'));
