/**
 * Imputation (the code behind POST /v1/impute: planImpute + executeImpute) on real series with
 * values removed, seeded, against linear interpolation:
 *   SHARED_DIR=/work/shared npm run bench:impute   # ~5-10 minutes on the shared 2-core machine
 * Series: every 40th M3 monthly series of 96+ points (train + test) and 4 windows of 240 hours of
 * ETTh1 OT. Scenarios: 5 points removed at random; one run of 2 seasons (24 months or 48 hours)
 * removed from the middle half. Reported: MAE of the model's fills over the removed points divided
 * by the MAE of linear interpolation's (pooled per scenario and data set; < 1 is better than
 * linear), the share of series where the model is better, and two combinations computed from the
 * same fills (no extra fit): the mean of the model fill and the linear one, and linear
 * interpolation for gaps of at most 2 steps with the model beyond.
 * Writes bench/results/impute.{json,md}.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { executeImpute, gapsOf, linearFill, planImpute } from '../src/analytics/impute.ts';
import { ImputeRequest, type ImputeResponse } from '../src/analytics/impute-schemas.ts';
import { jsonText, serialiseJson } from '../src/shared/json.ts';
import { limited } from '../src/analytics/metered.ts';
import { Catalog } from '../src/catalog/catalog.ts';
import { mulberry32 } from '../src/engine/stats/prng.ts';
import { unmeteredMeter } from '../src/forecasting/metering.ts';
import { loadM3, repoRoot, sharedDir } from './lib/m3.ts';
import { benchEngine } from './lib/run.ts';

const SEED = 20_261_126;
const LOAD_BEFORE = os.loadavg()[0]!.toFixed(1);
const rand = mulberry32(SEED);

interface DataSet {
  name: string;
  frequency: string;
  season: number;
  series: number[][];
}
const sets: DataSet[] = [
  {
    name: 'M3 monthly',
    frequency: 'MS',
    season: 12,
    series: loadM3('monthly')
      .filter((s) => s.train.length + s.test.length >= 96)
      .filter((_, i) => i % 40 === 0)
      .map((s) => [...s.train, ...s.test]),
  },
];
const ett = readFileSync(path.join(sharedDir(), 'data', 'ett', 'ETTh1.csv'), 'utf8')
  .trim()
  .split('\n')
  .slice(1);
const ot = ett.map((line) => Number(line.split(',')[7]));
sets.push({ name: 'ETTh1 OT', frequency: 'h', season: 24, series: [0, 1, 2, 3].map((w) => ot.slice(w * 4000, w * 4000 + 240)) });

/** Five interior points removed at random (never the first or last, so both scenarios measure interior gaps). */
function removeRandom(y: number[]): (number | null)[] {
  const out: (number | null)[] = y.slice();
  let removed = 0;
  while (removed < 5) {
    const t = 1 + Math.floor(rand() * (y.length - 2));
    if (out[t] === null) continue;
    out[t] = null;
    removed++;
  }
  return out;
}
function removeRun(y: number[], length: number): (number | null)[] {
  const start = Math.floor(y.length / 4 + rand() * (y.length / 2 - length));
  return y.map((v, t) => (t >= start && t < start + length ? null : v));
}

const { engine } = benchEngine();
const ctx = {
  engine,
  catalog: new Catalog(engine),
  meter: unmeteredMeter,
  config: { forecast: { maxOutputValues: 2_000_000, maxJobWorkMs: Number.POSITIVE_INFINITY } },
};
const MODELS = ['auto-ets', 'seasonal-naive'];

interface Row {
  data: string;
  scenario: string;
  model: string;
  removed: number;
  maeModel: number;
  maeLinear: number;
  ratio: number;
  better: number;
  /** MAE ratio to linear of ½(model + linear). */
  ratioHalf: number;
  /** MAE ratio to linear of: linear for gaps of at most SHORT steps, the model beyond. */
  ratioShortLinear: number;
  seconds: number;
}
const SHORT = 2;
const rows: Row[] = [];
for (const set of sets) {
  for (const scenario of ['5 at random', `run of ${2 * set.season}`]) {
    const holed = set.series.map((y) => (scenario.endsWith('random') ? removeRandom(y) : removeRun(y, 2 * set.season)));
    for (const model of MODELS) {
      const t0 = performance.now();
      // One request per series, as a client would send them (two at a time): a request fills at most 100 gaps.
      const outputs = await limited(
        holed.map((target) => async () => {
          const req = ImputeRequest.parse({ inputs: [{ target }], model, frequency: set.frequency });
          // The answer as a client reads it (its matrices are written as JSON text).
          const res = JSON.parse(jsonText(await serialiseJson(await executeImpute(ctx, req, await planImpute(ctx, req))))) as ImputeResponse;
          return res.outputs[0]!;
        }),
        2,
      );
      let errModel = 0;
      let errLinear = 0;
      let errHalf = 0;
      let errShort = 0;
      let removed = 0;
      let better = 0;
      holed.forEach((h, i) => {
        const truth = set.series[i]!;
        const nan = h.map((v) => v ?? Number.NaN);
        const lin = linearFill(nan);
        const filled = outputs[i]!.target.map((row) => row[0]!);
        const short = new Set<number>();
        for (const [a, b] of gapsOf(nan)) if (b - a <= SHORT && a > 0 && b < h.length) for (let t = a; t < b; t++) short.add(t);
        let em = 0;
        let el = 0;
        h.forEach((v, t) => {
          if (v !== null) return;
          em += Math.abs(filled[t]! - truth[t]!);
          el += Math.abs(lin[t]! - truth[t]!);
          errHalf += Math.abs((filled[t]! + lin[t]!) / 2 - truth[t]!);
          errShort += Math.abs((short.has(t) ? lin[t]! : filled[t]!) - truth[t]!);
          removed++;
        });
        errModel += em;
        errLinear += el;
        if (em < el) better++;
      });
      rows.push({
        data: set.name,
        scenario,
        model,
        removed,
        maeModel: errModel / removed,
        maeLinear: errLinear / removed,
        ratio: errModel / errLinear,
        better: better / holed.length,
        ratioHalf: errHalf / errLinear,
        ratioShortLinear: errShort / errLinear,
        seconds: (performance.now() - t0) / 1000,
      });
      console.log(rows.at(-1));
    }
  }
}
await engine.close();

const md = [
  '# Imputation against linear interpolation',
  '',
  `Generated by \`SHARED_DIR=/work/shared npm run bench:impute\` (bench/impute.ts), seed ${SEED}, on ${new Date().toISOString().slice(0, 10)}, one-minute load average ${LOAD_BEFORE} at the start and ${os.loadavg()[0]!.toFixed(1)} at the end.`,
  '',
  `Series: ${sets[0]!.series.length} M3 monthly series of 96+ points (train + test, every 40th) and ${sets[1]!.series.length} windows of 240 hours of ETTh1 OT (4000 hours apart).`,
  'Scenarios: 5 interior points removed at random; one run of two seasons removed from the middle half.',
  'MAE ratio = MAE of the fill / MAE of linear interpolation over the removed points, pooled (below 1: better than linear).',
  `The last two ratio columns combine the same fills (no extra fit): ½(model + linear), and linear for gaps of at most ${SHORT} steps with the model beyond.`,
  '',
  '| data | scenario | model | removed points | MAE model | MAE linear | MAE ratio model | series where the model beats linear % | ratio ½(model + linear) | ratio linear ≤ 2 steps, model beyond | seconds |',
  '|---|---|---|---|---|---|---|---|---|---|---|',
  ...rows.map(
    (r) =>
      `| ${r.data} | ${r.scenario} | ${r.model} | ${r.removed} | ${r.maeModel.toFixed(3)} | ${r.maeLinear.toFixed(3)} | **${r.ratio.toFixed(3)}** | ${(100 * r.better).toFixed(0)} | ${r.ratioHalf.toFixed(3)} | ${r.ratioShortLinear.toFixed(3)} | ${r.seconds.toFixed(1)} |`,
  ),
  '',
  'Seconds: wall-clock on the shared 2-core machine (BENCH_POOL threads, default 2), both fits (forward and backward) of every gap included.',
  '',
];
writeFileSync(path.join(repoRoot, 'bench', 'results', 'impute.md'), md.join('\n'));
writeFileSync(
  path.join(repoRoot, 'bench', 'results', 'impute.json'),
  `${JSON.stringify({ seed: SEED, load: { before: Number(LOAD_BEFORE), after: os.loadavg()[0] }, rows }, null, 2)}\n`,
);
console.log(md.join('\n'));
