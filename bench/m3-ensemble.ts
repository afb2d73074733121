/**
 * The ensemble (hold-out backtest ranking + inverse-score blend, exactly the code behind
 * POST /v1/forecast/ensemble) on the M3 data, next to every single built-in model it chooses from.
 *   SHARED_DIR=/work/shared npm run bench:ensemble                      # all 3003 series
 *   ... -- --every 10                                                   # every 10th series
 *   ... -- --models naive,theta,auto-ets       # the candidate set (default: the service's default choice)
 *   ... -- --variants --save /tmp/ens.json     # also keep every candidate's forecast and backtest score
 *                                              # per series (to score other combination rules offline)
 * Writes bench/results/m3-ensemble.{json,md}. Single-model figures come from
 * bench/results/m3-accuracy.json (npm run bench:m3), the published ones from the M3 README.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Catalog } from '../src/catalog/catalog.ts';
import { executeEnsemble, planEnsemble, seasonalNaive } from '../src/ensemble/service.ts';
import { mase as ensembleMase, smape as ensembleSmape } from '../src/ensemble/metrics.ts';
import { EnsembleForecastRequest } from '../src/ensemble/schemas.ts';
import { unmeteredMeter } from '../src/forecasting/metering.ts';
import { FREQUENCIES, loadM3, mase, repoRoot, smape } from './lib/m3.ts';
import { PUBLISHED, R_FORECAST } from './lib/m3-report.ts';
import { benchEngine, modelsVerified } from './lib/run.ts';

const { values } = parseArgs({
  options: {
    every: { type: 'string', default: '1' },
    models: { type: 'string' },
    metric: { type: 'string', default: 'smape' },
    top: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '4' },
    out: { type: 'string' },
    variants: { type: 'boolean', default: false },
    windows: { type: 'string' },
    save: { type: 'string' },
  },
});
const every = Number(values.every);
const outBase = values.out ?? (every === 1 ? 'm3-ensemble' : `m3-ensemble-every${every}`);
const explicit = values.models?.split(',') ?? null;
const series = loadM3().filter((_, i) => i % every === 0);
// M3's seasonality m: 1 (yearly, other), 4 (quarterly), 12 (monthly), given as frequency codes
// whose season length is exactly m.
const FREQ = { yearly: 'Y', quarterly: 'Q', monthly: 'M', other: 'Y' } as const;

const { engine } = benchEngine();
await modelsVerified(engine);
const ctx = {
  engine,
  catalog: new Catalog(engine),
  meter: unmeteredMeter,
  config: { forecast: { maxOutputValues: 2_000_000, maxJobWorkMs: Number.POSITIVE_INFINITY } },
};
const forecasts: number[][] = new Array(series.length);
/** Per series: each candidate's backtest score and final mean, and seasonal naive's backtest score (--variants). */
const detail: { scores: Record<string, number>; means: Record<string, number[]>; yardstick: number }[] = new Array(series.length);
const evaluated = new Set<string>();
const picks = new Map<string, number>();
let credits = 0;
const t0 = performance.now();
let next = 0;
let done = 0;
async function lane(): Promise<void> {
  while (next < series.length) {
    const i = next++;
    const s = series[i]!;
    const req = EnsembleForecastRequest.parse({
      inputs: [{ target: s.train }],
      parameters: { prediction_length: s.horizon, frequency: FREQ[s.frequency as keyof typeof FREQ] },
      ...(explicit ? { models: explicit } : {}),
      top_n: Number(values.top),
      scoring_metric: values.metric,
      ...(values.windows ? { backtest_windows: Number(values.windows) } : {}),
    });
    const plan = await planEnsemble(ctx, req, async () => true);
    const out = await executeEnsemble(ctx, plan);
    forecasts[i] = out.response.ensemble_result.outputs[0]!.mean.map((row) => row[0]!);
    if (values.variants) {
      // Seasonal naive on the same windows, scored as the service scores the yardstick.
      let yardstick = 0;
      for (let k = 0; k < plan.windows; k++) {
        const end = s.train.length - k * plan.heldOut;
        const bt = s.train.slice(0, end - plan.heldOut);
        const actual = s.train.slice(end - plan.heldOut, end);
        const snaive = seasonalNaive(bt, plan.heldOut, s.seasonality);
        yardstick += (values.metric === 'mase' ? ensembleMase(actual, snaive, bt, s.seasonality) : ensembleSmape(actual, snaive)) / plan.windows;
      }
      detail[i] = {
        scores: Object.fromEntries(out.response.ranked_results.map((r) => [r.model, r.score])),
        means: Object.fromEntries(out.response.ranked_results.map((r) => [r.model, r.result.outputs[0]!.mean.map((row) => row[0]!)])),
        yardstick,
      };
    }
    credits += out.credits;
    for (const m of out.response.ensemble_metadata.models_in_ensemble) picks.set(m, (picks.get(m) ?? 0) + 1);
    for (const m of out.response.ensemble_metadata.models_evaluated) evaluated.add(m);
    done++;
    if (done % 250 === 0) console.log(`${done}/${series.length} series, ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  }
}
try {
  await Promise.all(Array.from({ length: Number(values.concurrency) }, lane));
} finally {
  await engine.close();
}
const seconds = (performance.now() - t0) / 1000;
const candidates = explicit ?? [...evaluated];

const byFrequency: Record<string, { n: number; smape: number; mase: number }> = {};
let sAll = 0;
let mAll = 0;
for (const f of FREQUENCIES) {
  const idx = series.map((x, i) => (x.frequency === f ? i : -1)).filter((i) => i >= 0);
  if (idx.length === 0) continue;
  const sm = idx.map((i) => smape(series[i]!.test, forecasts[i]!));
  const ms = idx.map((i) => mase(series[i]!.train, series[i]!.test, forecasts[i]!, series[i]!.seasonality));
  byFrequency[f] = { n: idx.length, smape: sm.reduce((a, b) => a + b, 0) / idx.length, mase: ms.reduce((a, b) => a + b, 0) / idx.length };
  sAll += sm.reduce((a, b) => a + b, 0);
  mAll += ms.reduce((a, b) => a + b, 0);
}
const ensemble = { n: series.length, smape: sAll / series.length, mase: mAll / series.length, byFrequency };

type Single = { smape: number; mase: number; byFrequency: Record<string, { smape: number; mase: number }> };
// The single models' scores on the same series: bench:m3 with the same --every.
const accPath = path.join(repoRoot, `bench/results/${every === 1 ? 'm3-accuracy' : `m3-accuracy-every${every}`}.json`);
const singles: Record<string, Single> = {};
if (existsSync(accPath)) {
  const acc = JSON.parse(readFileSync(accPath, 'utf8')) as { models?: Record<string, Single> };
  for (const m of candidates) if (acc.models?.[m]) singles[m] = acc.models[m];
}
const bestSingle = Object.entries(singles).sort((a, b) => a[1].smape - b[1].smape)[0];
const result = {
  date: new Date().toISOString(),
  series: series.length,
  candidates,
  top_n: Number(values.top),
  scoring_metric: values.metric,
  ensemble,
  seconds,
  seconds_per_series: seconds / series.length,
  credits_total: credits,
  credits_per_series: credits / series.length,
  members_picked: Object.fromEntries([...picks.entries()].sort((a, b) => b[1] - a[1])),
  best_single: bestSingle ? { model: bestSingle[0], smape: bestSingle[1].smape, mase: bestSingle[1].mase } : null,
  beats_every_single: Object.values(singles).length > 0 ? Object.values(singles).every((s) => ensemble.smape < s.smape) : null,
  beats_theta_13: ensemble.smape < 13.0,
};
const variantRows: Record<string, { smape: number; mase: number; byFrequency: Record<string, { smape: number; mase: number }> }> = {};
if (values.variants) {
  type D = (typeof detail)[number];
  const avg = (ms: number[][], w: number[]): number[] => ms[0]!.map((_, h) => ms.reduce((a, m, k) => a + w[k]! * m[h]!, 0));
  const ranked = (d: D): string[] => Object.keys(d.scores).sort((a, b) => d.scores[a]! - d.scores[b]! || a.localeCompare(b));
  // Strictly better than seasonal naive: the service's rule until ADR 0035, which added a 25% margin
  // (bench/ensemble-rules-saved.ts scores the margins on saved runs).
  const eligible = (d: D): string[] => {
    const e = ranked(d).filter((m) => d.scores[m]! <= d.yardstick);
    return e.length > 0 ? e : ranked(d).slice(0, 1);
  };
  const eq = (d: D, ms: string[]): number[] =>
    avg(
      ms.map((m) => d.means[m]!),
      ms.map(() => 1 / ms.length),
    );
  const VARIANTS: Record<string, (d: D) => number[]> = {
    'equal mean of every candidate': (d) => eq(d, Object.keys(d.means)),
    'equal mean of the candidates that strictly beat seasonal naive': (d) => eq(d, eligible(d)),
    'equal mean of the top 3 that strictly beat seasonal naive': (d) => eq(d, eligible(d).slice(0, 3)),
    'equal mean of the top 2 that strictly beat seasonal naive': (d) => eq(d, eligible(d).slice(0, 2)),
    'best candidate only': (d) => d.means[ranked(d)[0]!]!,
    'combo unless it strictly loses to seasonal naive, else best': (d) => (eligible(d).includes('combo') ? d.means.combo! : d.means[ranked(d)[0]!]!),
  };
  for (const [name, f] of Object.entries(VARIANTS)) {
    const fc = series.map((_, i) => (detail[i] ? f(detail[i]) : forecasts[i]!));
    const by: Record<string, { smape: number; mase: number }> = {};
    let sa = 0;
    let ma = 0;
    for (const fr of FREQUENCIES) {
      const idx = series.map((x, i) => (x.frequency === fr ? i : -1)).filter((i) => i >= 0);
      if (idx.length === 0) continue;
      const sm = idx.map((i) => smape(series[i]!.test, fc[i]!));
      const ms = idx.map((i) => mase(series[i]!.train, series[i]!.test, fc[i]!, series[i]!.seasonality));
      by[fr] = { smape: sm.reduce((a, b) => a + b, 0) / idx.length, mase: ms.reduce((a, b) => a + b, 0) / idx.length };
      sa += sm.reduce((a, b) => a + b, 0);
      ma += ms.reduce((a, b) => a + b, 0);
    }
    variantRows[name] = { smape: sa / series.length, mase: ma / series.length, byFrequency: by };
  }
}
writeFileSync(path.join(repoRoot, `bench/results/${outBase}.json`), `${JSON.stringify(result, null, 2)}\n`);
if (values.save) writeFileSync(values.save, JSON.stringify({ every, windows: values.windows ?? '1', detail, forecasts }));

const cell = (x: { smape: number; mase: number } | undefined) => (x ? `${x.smape.toFixed(2)} / ${x.mase.toFixed(3)}` : '');
const row = (name: string, s: { smape: number; mase: number; byFrequency: Record<string, { smape: number; mase: number }> }) =>
  `| ${name} | ${FREQUENCIES.map((f) => cell(s.byFrequency[f])).join(' | ')} | **${cell(s)}** |`;
const pair = (v: readonly number[] | undefined) => (v ? `${(v[0] as number).toFixed(2)} / ${(v[1] as number).toFixed(3)}` : '');
const refRow = (name: string, r: (typeof PUBLISHED)[string]) =>
  `| ${name} | ${FREQUENCIES.map((f) => pair((r as Record<string, readonly number[]>)[f])).join(' | ')} | ${pair((r as Record<string, readonly number[]>).all)} |`;
const lines = [
  '# M3: the ensemble against the single models it chooses from',
  '',
  `Generated ${result.date} by \`npm run bench:ensemble -- ${process.argv.slice(2).join(' ')}\` over ${series.length} series, official horizons. Candidates: ${candidates.join(', ')}${explicit ? '' : ' (the default choice)'}; top_n ${result.top_n}; backtest windows ${values.windows ?? '1 (default)'}; scoring ${result.scoring_metric}; hold-out = the horizon (or half the series). sMAPE / MASE as in shared/data/m3/README.md.`,
  '',
  '| model | yearly | quarterly | monthly | other | all |',
  '|---|---|---|---|---|---|',
  row('**ensemble**', ensemble),
  ...Object.entries(singles).map(([m, s]) => row(m, s)),
  ...Object.entries(variantRows).map(([m, s]) => row(`variant (offline, same runs): ${m}`, s)),
  ...Object.entries(PUBLISHED).map(([name, r]) => refRow(`${name} (published)`, r)),
  ...Object.entries(R_FORECAST).map(([name, r]) => refRow(`R ${name}`, r)),
  '',
  `- Ensemble beats every single candidate on sMAPE: **${result.beats_every_single === null ? `n/a (run bench:m3${every > 1 ? ` -- --every ${every}` : ''} first)` : result.beats_every_single ? 'yes' : 'no'}**${bestSingle ? ` (best single: ${bestSingle[0]} ${bestSingle[1].smape.toFixed(2)} / ${bestSingle[1].mase.toFixed(3)})` : ''}; on MASE: **${Object.values(singles).length > 0 ? (Object.values(singles).every((s) => ensemble.mase < s.mase) ? 'yes' : 'no') : 'n/a'}**.`,
  `- Ensemble beats Theta's published 13.0 sMAPE: **${result.beats_theta_13 ? 'yes' : 'no'}** (${ensemble.smape.toFixed(2)}).`,
  `- Cost: ${result.credits_total} credits in all, ${result.credits_per_series.toFixed(2)} credits per series (backtests and final forecasts, catalog prices).`,
  `- Time: ${seconds.toFixed(0)} s in all, ${(result.seconds_per_series * 1000).toFixed(1)} ms per series (2 worker threads, ${values.concurrency} series in flight; one-minute load average ${loadavg()[0]!.toFixed(1)} at the end, 2 shared cores).`,
  `- Members picked: ${Object.entries(result.members_picked)
    .map(([m, n]) => `${m} ${n}`)
    .join(', ')}.`,
  '',
];
writeFileSync(path.join(repoRoot, `bench/results/${outBase}.md`), lines.join('\n'));
console.log(lines.join('\n'));
