/**
 * TinyTimeMixer R2 on M3 monthly (1428 series of 48 to 126 points, horizon 18): every series is
 * shorter than the model's 512-point context, so this measures the padding of short contexts.
 *   1. Padding strategies, point forecasts only, straight through the network (ttmForward): what
 *      fills the padded positions and whether the scaler's observed mask excludes them, on the full
 *      history and on its last 60, 36 and 24 points.
 *   2. The shipped path (forecastTtm: padding, conformal backtests, rollout as served), with the
 *      season length given (12, as `frequency: "M"` gives) and detected (no frequency): sMAPE, MASE,
 *      the 80% interval's coverage (0.1..0.9 quantiles), WQL over the deciles, and the worst series.
 * Seasonal-naive is scored here on the same series; theta comes from bench/results/m3-accuracy.md.
 * Writes bench/results/m3-ttm.{json,md}.
 *   SHARED_DIR=/work/shared nice -n 10 node bench/m3-ttm.ts   (ONLY_STRATEGIES=1 or ONLY_SERVED=1: one part)
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { ttmForward } from '../src/engine/neural/ttm/forward.ts';
import { forecastTtm, loadTtmRuntime, TTM_R2_ID } from '../src/engine/neural/ttm/model.ts';
import { TTM_CONTEXT, TTM_HORIZON } from '../src/engine/neural/ttm/weights.ts';
import { loadM3, mase, repoRoot, sharedDir, smape, type M3Series } from './lib/m3.ts';

const modelsDir = path.join(sharedDir(), 'models');
const rt = loadTtmRuntime(modelsDir);
const series = loadM3('monthly');
const L = TTM_CONTEXT;
const DECILES = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9];
const load = [loadavg()[0]!];
const started = Date.now();

type Input = { v: Float64Array; o: Uint8Array };
const mean = (x: readonly number[]) => x.reduce((a, b) => a + b, 0) / x.length;
function base(x: readonly number[], masked: boolean): Input {
  const v = new Float64Array(L);
  const o = new Uint8Array(L).fill(masked ? 0 : 1);
  v.set(x, L - x.length);
  o.fill(1, L - x.length);
  return { v, o };
}
/** Position t (padded) holds the value at t + shift, repeatedly (shift = n: the whole series; shift = ⌊n/m⌋·m: whole seasons). */
function tile(r: Input, n: number, shift: number): Input {
  for (let t = L - n - 1; t >= 0; t--) r.v[t] = r.v[t + shift]!;
  return r;
}
const wholeSeasons = (n: number, m: number) => (n >= m ? Math.floor(n / m) * m : n);
const STRATEGIES: Record<string, { note: string; make: (x: number[], m: number) => Input }> = {
  'mean, masked': {
    note: "observed mean, excluded from the scaler (granite-tsfm's zero padding in standard-scaled space with the padded points unobserved; the previous fill)",
    make: (x) => {
      const r = base(x, true);
      r.v.fill(mean(x), 0, L - x.length);
      return r;
    },
  },
  'mean, unmasked': {
    note: 'observed mean, counted by the scaler (zero padding with past_observed_mask = 1, what ts_padding + ~isnan gives; the ONNX contract, which has no mask input)',
    make: (x) => {
      const r = base(x, false);
      r.v.fill(mean(x), 0, L - x.length);
      return r;
    },
  },
  'first value, unmasked': {
    note: 'the first value repeated, counted by the scaler',
    make: (x) => {
      const r = base(x, false);
      r.v.fill(x[0]!, 0, L - x.length);
      return r;
    },
  },
  'first value, masked (shipped without a season)': {
    note: 'the first value repeated, excluded from the scaler',
    make: (x) => {
      const r = base(x, true);
      r.v.fill(x[0]!, 0, L - x.length);
      return r;
    },
  },
  'first season tiled, unmasked': {
    note: 'the first 12 points repeated backwards in phase, counted by the scaler',
    make: (x, m) => tile(base(x, false), x.length, m),
  },
  'first season tiled, masked (shipped)': {
    note: 'the first 12 points repeated backwards in phase, excluded from the scaler',
    make: (x, m) => tile(base(x, true), x.length, m),
  },
  'whole seasons tiled, masked': {
    note: 'the newest ⌊n/12⌋·12 points repeated backwards in phase, excluded from the scaler',
    make: (x, m) => tile(base(x, true), x.length, wholeSeasons(x.length, m)),
  },
  'one copy of whole seasons, then first season tiled, masked': {
    note: 'right before the series, the newest ⌊n/12⌋·12 points once; further back, the oldest 12 points of that copy repeated in phase; excluded from the scaler',
    make: (x, m) => {
      const r = tile(base(x, true), x.length, m);
      const k = wholeSeasons(x.length, m);
      const p = L - x.length;
      for (let t = p - 1; t >= 0; t--) r.v[t] = t + k >= p ? r.v[t + k]! : r.v[t + m]!;
      return r;
    },
  },
  'last season tiled, masked': {
    note: 'the newest 12 points repeated backwards in phase, excluded from the scaler',
    make: (x, m) => {
      const r = base(x, true);
      const p = L - x.length;
      const n = x.length;
      for (let t = 0; t < p; t++) r.v[t] = x[n - m + ((((t - p) % m) + m) % m)]!;
      return r;
    },
  },
  'whole series tiled, masked': {
    note: 'the whole series repeated backwards (no season), excluded from the scaler',
    make: (x) => tile(base(x, true), x.length, x.length),
  },
};

interface Row {
  strategy: string;
  history: string;
  smape: number;
  mase: number;
}
const strategyRows: Row[] = [];
for (const T of process.env.ONLY_SERVED ? [] : [0, 60, 36, 24]) {
  for (const [name, s] of Object.entries(STRATEGIES)) {
    const values = new Float64Array(series.length * L);
    const observed = new Uint8Array(series.length * L);
    series.forEach((x, i) => {
      const r = s.make(T > 0 ? x.train.slice(-T) : x.train, x.seasonality);
      values.set(r.v, i * L);
      observed.set(r.o, i * L);
    });
    const { forecast } = ttmForward(rt, { values, observed, count: series.length });
    const fc = series.map((x, i) => Array.from(forecast.subarray(i * TTM_HORIZON, i * TTM_HORIZON + x.horizon)));
    strategyRows.push({
      strategy: name,
      history: T > 0 ? `last ${T}` : 'full (48-126)',
      smape: mean(series.map((x, i) => smape(x.test, fc[i]!))),
      mase: mean(series.map((x, i) => mase(x.train, x.test, fc[i]!, x.seasonality))),
    });
  }
}
load.push(loadavg()[0]!);

function snaive(x: M3Series, T: number): number[] {
  const train = T > 0 ? x.train.slice(-T) : x.train;
  return x.test.map((_, h) => train[train.length - x.seasonality + (h % x.seasonality)]!);
}
const snaiveScore = { smape: mean(series.map((x) => smape(x.test, snaive(x, 0)))), mase: mean(series.map((x) => mase(x.train, x.test, snaive(x, 0), 12))) };

interface Served {
  setting: string;
  smape: number;
  mase: number;
  coverage80: number;
  wql: number;
  medianWindows: number;
  worst: { id: string; n: number; mase: number; smape: number; snaiveMase: number }[];
  seconds: number;
}
function served(setting: string, T: number, seasonLength: number | null, units = 1): Served {
  const t0 = Date.now();
  const trains = series.map((x) => (T > 0 ? x.train.slice(-T) : x.train).map((v) => v * units));
  const out = forecastTtm(
    { model: TTM_R2_ID, series: trains, horizon: 18, quantileLevels: DECILES, numSamples: 0, seasonLength, seed: 1 },
    { modelsDir, threads: 1 },
    rt,
  );
  let inside = 0;
  let count = 0;
  const loss = new Array<number>(DECILES.length).fill(0);
  let absSum = 0;
  const per = series.map((x, i) => {
    const o = out[i]!;
    // back to the data's units
    const f = { ...o, mean: o.mean.map((v) => v / units), quantiles: o.quantiles.map((r) => r.map((v) => v / units)) };
    for (let h = 0; h < x.test.length; h++) {
      const y = x.test[h]!;
      absSum += Math.abs(y);
      if (y >= f.quantiles[0]![h]! && y <= f.quantiles[8]![h]!) inside++;
      count++;
      DECILES.forEach((p, k) => {
        const d = y - f.quantiles[k]![h]!;
        loss[k]! += 2 * Math.max(p * d, (p - 1) * d);
      });
    }
    return {
      id: x.id,
      n: trains[i]!.length,
      mase: mase(x.train, x.test, f.mean, 12),
      smape: smape(x.test, f.mean),
      snaiveMase: mase(x.train, x.test, snaive(x, T), 12),
      windows: f.info?.backtestWindows as number,
    };
  });
  const windows = per.map((p) => p.windows).sort((a, b) => a - b);
  return {
    setting,
    smape: mean(per.map((p) => p.smape)),
    mase: mean(per.map((p) => p.mase)),
    coverage80: inside / count,
    wql: loss.reduce((a, b) => a + b / absSum, 0) / DECILES.length,
    medianWindows: windows[Math.floor(windows.length / 2)]!,
    worst: [...per]
      .sort((a, b) => b.mase - a.mase)
      .slice(0, 8)
      .map(({ windows: _, ...rest }) => rest),
    seconds: (Date.now() - t0) / 1000,
  };
}
const servedRows = process.env.ONLY_STRATEGIES
  ? []
  : [
      served('full history, season 12 given', 0, 12),
      served('full history, season detected', 0, null),
      served('last 60 points, season 12 given', 60, 12),
      served('last 36 points, season 12 given', 36, 12),
      served('full history, season 12 given, values × 1e-6', 0, 12, 1e-6),
    ];
load.push(loadavg()[0]!);

const f2 = (v: number) => v.toFixed(2);
const f3 = (v: number) => v.toFixed(3);
const md = [
  '# TinyTimeMixer R2 on M3 monthly: padding short contexts',
  '',
  `Generated ${new Date().toISOString()} by \`SHARED_DIR=/work/shared nice -n 10 node bench/m3-ttm.ts\` on the ${rt.kind} runtime, ` +
    `${((Date.now() - started) / 1000).toFixed(0)} s, load average ${load.map((l) => l.toFixed(2)).join(' → ')} (2 cores shared with other work).`,
  '1428 series of 48 to 126 points, horizon 18; sMAPE and MASE as in shared/data/m3/README.md (MASE scaled by the full training part, m = 12).',
  `Seasonal-naive on the same series: **${f2(snaiveScore.smape)} / ${f3(snaiveScore.mase)}**; theta (bench/results/m3-accuracy.md, monthly): **13.81 / 0.862**.`,
  '',
  '## 1. What fills the padded positions (point forecasts, network only)',
  '',
  'sMAPE / MASE. "masked": the padded positions have past_observed_mask = 0, so the model\'s std scaler takes loc and scale from the real points only.',
  '',
  `| strategy | ${[...new Set(strategyRows.map((r) => r.history))].join(' | ')} |`,
  `|---|${[...new Set(strategyRows.map((r) => r.history))].map(() => '---').join('|')}|`,
  ...Object.keys(STRATEGIES).map(
    (name) =>
      `| ${name} | ${strategyRows
        .filter((r) => r.strategy === name)
        .map((r) => `${f2(r.smape)} / ${f3(r.mase)}`)
        .join(' | ')} |`,
  ),
  '',
  ...Object.entries(STRATEGIES).map(([name, s]) => `- ${name}: ${s.note}.`),
  '',
  '## 2. As served (forecastTtm: padding, conformal backtests from 8 points of history, deciles)',
  '',
  '| setting | sMAPE | MASE | 80% coverage | WQL | backtest windows (median) | seconds |',
  '|---|---|---|---|---|---|---|',
  ...servedRows.map(
    (r) =>
      `| ${r.setting} | ${f2(r.smape)} | ${f3(r.mase)} | ${(100 * r.coverage80).toFixed(1)}% | ${f3(r.wql)} | ${r.medianWindows} | ${r.seconds.toFixed(1)} |`,
  ),
  '',
  '### Worst series by MASE (full history, season 12 given)',
  '',
  '| series | points | MASE | sMAPE | seasonal-naive MASE |',
  '|---|---|---|---|---|',
  ...(servedRows[0]?.worst ?? []).map((w) => `| ${w.id} | ${w.n} | ${f2(w.mase)} | ${f2(w.smape)} | ${f2(w.snaiveMase)} |`),
  '',
];
mkdirSync(path.join(repoRoot, 'bench', 'results'), { recursive: true });
writeFileSync(
  path.join(repoRoot, 'bench', 'results', 'm3-ttm.json'),
  `${JSON.stringify({ snaive: snaiveScore, strategies: strategyRows, served: servedRows, load }, null, 1)}\n`,
);
writeFileSync(path.join(repoRoot, 'bench', 'results', 'm3-ttm.md'), `${md.join('\n')}\n`);
console.log(md.join('\n'));
