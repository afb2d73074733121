export interface FrequencyScore {
  n: number;
  smape: number;
  mase: number;
  /** Share of test values inside the 80% interval (0.1 to 0.9 quantiles). */
  coverage80?: number;
  /** Weighted quantile loss over the nine deciles. */
  wql?: number;
}

export interface Score {
  n: number;
  smape: number;
  mase: number;
  coverage80?: number;
  wql?: number;
  byFrequency: Partial<Record<string, FrequencyScore>>;
}

type Row = Record<'yearly' | 'quarterly' | 'monthly' | 'other' | 'all', [number, number] | null>;

/** Hyndman's recalculation of the original M3 submissions (shared/data/m3/README.md). */
export const PUBLISHED: Record<string, Row> = {
  NAIVE2: { yearly: [17.88, 3.172], quarterly: [9.95, 1.238], monthly: [16.89, 1.037], other: [6.3, 3.089], all: [14.74, 1.665] },
  'SES (SINGLE)': { yearly: [17.82, 3.171], quarterly: [9.72, 1.229], monthly: [15.3, 0.974], other: [6.29, 3.091], all: [13.91, 1.633] },
  'Damped trend': { yearly: [17.36, 3.032], quarterly: [9.36, 1.126], monthly: [14.58, 0.908], other: [4.61, 2.036], all: [13.28, 1.484] },
  ForecastPro: { yearly: [17.27, 3.026], quarterly: [9.82, 1.204], monthly: [13.9, 0.848], other: [4.6, 1.92], all: [13.06, 1.467] },
  'Theta (M3 winner)': { yearly: [16.97, 2.806], quarterly: [8.96, 1.087], monthly: [13.89, 0.858], other: [4.41, 1.904], all: [12.76, 1.395] },
};

/** R's forecast package 8.20 run on this machine (same README). */
export const R_FORECAST: Record<string, Row> = {
  ets: { yearly: [17.0, 2.86], quarterly: [9.68, 1.17], monthly: [14.14, 0.865], other: [4.37, 1.814], all: [13.07, 1.425] },
  'auto.arima': { yearly: [17.1, 2.959], quarterly: [10.01, 1.189], monthly: [15.02, 0.868], other: [4.51, 1.841], all: [13.6, 1.454] },
  thetaf: { yearly: [16.76, 2.774], quarterly: [9.2, 1.117], monthly: [13.86, 0.864], other: [4.92, 2.271], all: [12.79, 1.419] },
  'mean of ets and auto.arima': { yearly: [16.49, 2.838], quarterly: [9.5, 1.137], monthly: [13.87, 0.839], other: [4.37, 1.795], all: [12.78, 1.399] },
};

/** Our model -> R's implementation of the same method, for the 2% targets. */
const SAME_METHOD: Record<string, string> = { 'auto-ets': 'ets', 'auto-arima': 'auto.arima', theta: 'thetaf' };

interface Report {
  generatedAt: string;
  every: number;
  series: number;
  poolSize: number;
  naive2Check: Score;
  models: Record<string, Score & { seconds: number; seriesPerSecond: number }>;
}

const COLS = ['yearly', 'quarterly', 'monthly', 'other'] as const;
const fmt = (s: FrequencyScore | undefined): string => (s ? `${s.smape.toFixed(2)} / ${s.mase.toFixed(3)}` : '');
const fmtRow = (r: [number, number] | null): string => (r ? `${r[0].toFixed(2)} / ${r[1].toFixed(3)}` : '');

export function renderMarkdown(r: Report): string {
  const lines: string[] = [];
  lines.push('# M3 accuracy of the built-in models', '');
  lines.push(
    `Generated ${r.generatedAt} by \`npm run bench:m3\` over ${r.series} series${r.every > 1 ? ` (every ${r.every}th: a sample, not comparable to the full-set figures)` : ' (all of M3)'}, ` +
      `through the engine's worker pool (${r.poolSize} threads), official horizons, season length from the data's frequency. sMAPE / MASE as defined in shared/data/m3/README.md.`,
    '',
  );
  lines.push('| model | yearly | quarterly | monthly | other | all | seconds | series/s |', '|---|---|---|---|---|---|---|---|');
  const c = r.naive2Check;
  lines.push(
    `| NAIVE2 recomputed here (metric check) | ${COLS.map((f) => fmt(c.byFrequency[f])).join(' | ')} | **${c.smape.toFixed(2)} / ${c.mase.toFixed(3)}** | | |`,
  );
  for (const [id, s] of Object.entries(r.models)) {
    lines.push(
      `| ${id} | ${COLS.map((f) => fmt(s.byFrequency[f])).join(' | ')} | **${s.smape.toFixed(2)} / ${s.mase.toFixed(3)}** | ${s.seconds.toFixed(1)} | ${s.seriesPerSecond.toFixed(1)} |`,
    );
  }
  lines.push(
    '',
    '## Intervals: 80% coverage / WQL',
    '',
    'Share of the test values inside the 80% interval (the 0.1 and 0.9 quantiles; target 77-83%) and the weighted quantile loss over the nine deciles (2 x pinball loss summed over series and steps / sum of |actual|, averaged over the levels; lower is better).',
    '',
    '| model | yearly | quarterly | monthly | other | all |',
    '|---|---|---|---|---|---|',
  );
  const fmtI = (s: { coverage80?: number; wql?: number } | undefined): string =>
    s && s.coverage80 !== undefined && s.wql !== undefined ? `${(100 * s.coverage80).toFixed(1)}% / ${s.wql.toFixed(4)}` : '';
  for (const [id, s] of Object.entries(r.models)) {
    if (s.coverage80 === undefined) continue;
    lines.push(`| ${id} | ${COLS.map((f) => fmtI(s.byFrequency[f])).join(' | ')} | **${fmtI(s)}** |`);
  }
  lines.push(
    '',
    '## Reference figures (from shared/data/m3/README.md)',
    '',
    '| method | yearly | quarterly | monthly | other | all |',
    '|---|---|---|---|---|---|',
  );
  for (const [name, row] of Object.entries(PUBLISHED))
    lines.push(`| ${name} (published) | ${COLS.map((f) => fmtRow(row[f])).join(' | ')} | ${fmtRow(row.all)} |`);
  for (const [name, row] of Object.entries(R_FORECAST)) lines.push(`| R ${name} | ${COLS.map((f) => fmtRow(row[f])).join(' | ')} | ${fmtRow(row.all)} |`);
  lines.push('', '## Targets', '');
  for (const [ours, theirs] of Object.entries(SAME_METHOD)) {
    const s = r.models[ours];
    const ref = R_FORECAST[theirs]?.all;
    if (!s || !ref) continue;
    const gap = (100 * (s.smape - ref[0])) / ref[0];
    lines.push(
      `- ${ours} vs R ${theirs}: ${s.smape.toFixed(2)} against ${ref[0].toFixed(2)}, ${gap >= 0 ? '+' : ''}${gap.toFixed(1)}% (target within 2%): **${gap <= 2 ? 'met' : 'missed'}**`,
    );
  }
  const ets = r.models['auto-ets'];
  const rEts = R_FORECAST.ets;
  if (ets && rEts) {
    const parts = COLS.map((f) => {
      const ours = ets.byFrequency[f]?.smape;
      const ref = rEts[f]?.[0];
      return ours === undefined || ref === undefined ? null : { f, ours, ref, ok: ours <= ref * 1.01 };
    }).filter((x): x is { f: (typeof COLS)[number]; ours: number; ref: number; ok: boolean } => x !== null);
    lines.push(
      `- auto-ets not worse than R ets by more than 1% on any frequency: ${parts.map((p) => `${p.f} ${p.ours.toFixed(2)} vs ${p.ref.toFixed(2)}`).join(', ')}: **${parts.every((p) => p.ok) ? 'met' : 'missed'}**`,
    );
    const seasonal = parts.filter((p) => p.f === 'quarterly' || p.f === 'monthly');
    if (seasonal.length > 0)
      lines.push(
        `- auto-ets better than R ets on seasonal data: ${seasonal.map((p) => `${p.f} ${p.ours.toFixed(2)} vs ${p.ref.toFixed(2)}`).join(', ')}: **${seasonal.every((p) => p.ours < p.ref) ? 'met' : 'missed'}**`,
      );
  }
  const cells = Object.entries(r.models).flatMap(([id, m]) =>
    COLS.flatMap((f) => {
      const c = m.byFrequency[f]?.coverage80;
      return c === undefined ? [] : [{ id, f, c }];
    }),
  );
  if (cells.length > 0) {
    const out = cells.filter((x) => x.c < 0.77 || x.c > 0.83);
    lines.push(
      `- 80% intervals cover 77-83% for every model and frequency: ${cells.length - out.length} of ${cells.length} cells in${out.length > 0 ? `; out: ${out.map((x) => `${x.id} ${x.f} ${(100 * x.c).toFixed(1)}%`).join(', ')}` : ''}: **${out.length === 0 ? 'met' : 'missed'}**`,
    );
  }
  const best = Object.entries(r.models).sort((a, b) => a[1].smape - b[1].smape)[0];
  if (best) {
    lines.push(`- best built-in: ${best[0]} at ${best[1].smape.toFixed(2)} (target at or below 13.0): **${best[1].smape <= 13.0 ? 'met' : 'missed'}**`);
  }
  lines.push('', NOTES);
  return `${lines.join('\n')}\n`;
}

const NOTES = `## Notes

- **Metric check.** NAIVE2 recomputed here (naive on the classically deseasonalised series) scores
  14.70 / 1.669 against the published 14.74 / 1.665; naive's yearly and "other" rows (where NAIVE2 is
  plain naive) reproduce the published 17.88 / 3.172 and 6.30 / 3.089 exactly.
- **auto-ets** is a port of R's \`ets\` (docs/models-statistical.md, "AutoETS") whose forms are
  combined with Akaike weights instead of R's choice of one (ADR 0028). With R's choice it
  reproduced R's figures on every frequency to the printed digit (17.00 / 9.68 / 14.14 / 4.37,
  13.07; 2026-11-25); with the weights (2026-11-26, \`--models auto-ets --merge\`, 507 s) it scores
  16.44 / 9.31 / 13.84 / 4.36, 12.71: better than R on every frequency, 3.8% on quarterly and 2.1%
  on monthly data. The augurs AutoETS used before the port (non-seasonal ETS on a classically
  deseasonalised series) scored 16.19 / 9.57 / 14.52 / 4.34, 13.04.
- **theta** is the state-space theta method (STM/DSTM choice) with thetaf's seasonal test and
  decomposition; it matches R's thetaf per frequency to within a few tenths.
- **auto-arima** is a port of R's auto.arima (docs/models-statistical.md, "AutoARIMA") and
  reproduces R's figures per frequency to within about 0.1 (13.54 against 13.60 overall). It was
  re-run alone (\`--models auto-arima\`) and merged into this table; it is the slowest built-in
  (the stepwise search fits 10 to 60 seasonal models by exact likelihood per series).
- **combo** (the mean of auto-ets, auto-arima and theta) was re-run alone after the weighted ETS
  (2026-11-26, \`--models combo --merge\`, 1037 s): 12.32 / 1.336 (15.86 / 8.96 / 13.47 / 4.31), the
  best built-in, below the published Theta (12.76) and R's mean of ets and auto.arima (12.78).
  Its previous run (with the augurs ETS member) scored 12.36 / 1.334.
- **ces** (R smooth's auto.ces, ported; ADR 0031) was added on 2026-11-27 (\`--models ces --merge\`,
  41 s): 13.69 / 1.511, behind each of combo's members alone. combo with ces as a fourth member
  was run too (1457 s) and scored 12.41 / 1.353 against the three-way mean's 12.40 / 1.342, so combo
  stayed the mean of three; the combo row is the three-way mean's run.
- **Intervals.** Since 2026-11-25 every statistical model's intervals are calibrated on backtests of
  the series itself (docs/models-statistical.md); runs before that have no coverage/WQL figures.
  On all of M3 (2026-11-26) the fast models were re-run for them (\`--models
  naive,seasonal-naive,drift,theta,mstl --merge\`; sMAPE/MASE unchanged but for mstl, 13.71 / 1.412
  before and 13.60 / 1.439 now, from mstl changes made since its last run). The slow ones
  (auto-ets about 1 series/s, auto-arima and combo 1-4) were run on every 5th series instead
  (\`npm run bench:m3 -- --every 5 --models auto-ets,auto-arima,combo\`, 601 series,
  m3-accuracy-every5.md), 80% coverage yearly / quarterly / monthly / other: auto-ets 81.0 / 76.3 /
  82.5 / 75.4%, auto-arima 80.5 / 74.2 / 86.2 / 76.1%, combo 78.8 / 78.0 / 84.8 / 78.9%.
- **Intervals after ADR 0026** (2026-11-26, later): the calibration takes the split-conformal rank
  0.8 (N + 1) of the pooled |z| (was a type-7 quantile at 0.85), the newest backtest window always
  scores the whole horizon, and factors from one origin are widened by 1.33. Both runs above were
  repeated (fast models on all of M3 with \`--merge\`, this table; the slow ones on every 5th
  series, m3-accuracy-every5.md). Before → after, yearly / quarterly / monthly / other: naive and
  seasonal-naive 75.5 / 81.3 / 79.1 / 80.9% → 77.8 / 80.9 (81.6) / 76.0 / 79.5%, drift 77.8 /
  76.1 / 82.8 / 80.1% → 79.8 / 75.2 / 80.4 / 79.0%, theta 80.4 / 82.0 / 81.4 / 81.1% → 82.4 /
  81.6 / 78.7 / 79.4%, mstl 79.6 / 78.9 / 83.6 / 78.0% → 81.7 / 78.6 / 81.3 / 76.8%; every 5th
  series: auto-ets 81.0 / 76.3 / 82.5 / 75.4% → 84.6 / 78.1 / 79.5 / 74.6%, auto-arima 80.5 / 74.2 /
  86.2 / 76.1% → 81.3 / 71.6 / 82.7 / 73.2%, combo 78.8 / 78.0 / 84.8 / 78.9% → 81.4 / 78.1 / 81.3 /
  75.4%. Still outside 77-83%: naive and seasonal-naive monthly, drift and auto-arima quarterly,
  auto-ets yearly, "other" for mstl and the slow models (35 series in every 5th). WQL over all
  series lower for every model; sMAPE/MASE unchanged (point forecasts are untouched).
- **Intervals after ADR 0027** (2026-11-26, 18:55-19:03 UTC, machine shared with latency runs, all
  niced): the factor is widened by 1 + 0.1 / J_eff^2 for J_eff effective backtest origins (windows
  sharing steps count less than one each) instead of x1.33 for one distinct origin only. Same two
  runs (\`--models naive,seasonal-naive,drift,theta,mstl --merge\` on all of M3;
  \`--every 5 --models auto-ets,auto-arima,combo --merge\`). ADR 0026 → 0027, yearly / quarterly /
  monthly / other: naive 77.8 / 80.9 / 76.0 / 79.5% → 77.6 / 81.7 / 77.4 / 80.7%, seasonal-naive
  77.8 / 81.6 / 76.0 / 79.5% → 77.6 / 82.2 / 77.3 / 80.7%, drift 79.8 / 75.2 / 80.4 / 79.0% → 79.3 /
  75.8 / 81.4 / 80.0%, theta 82.4 / 81.6 / 78.7 / 79.4% → 82.4 / 82.2 / 80.1 / 80.7%, mstl 81.7 /
  78.6 / 81.3 / 76.8% → 81.2 / 78.8 / 82.3 / 77.7%; every 5th series: auto-ets 84.6 / 78.1 / 79.5 /
  74.6% → 82.6 / 77.7 / 80.9 / 74.6%, auto-arima 81.3 / 71.6 / 82.7 / 73.2% → 80.2 / 73.2 / 84.1 /
  73.6%, combo 81.4 / 78.1 / 81.3 / 75.4% → 79.7 / 78.5 / 82.9 / 75.7%. Outside 77-83%: 9 cells → 6
  (drift and auto-arima quarterly, auto-arima monthly, now over, "other" for the slow models). WQL
  over all series 0.1-0.3% higher for every model; sMAPE/MASE unchanged.
- **All of M3 for every model** (2026-11-26, after ADR 0028): auto-ets, combo and auto-arima were
  each re-run on all 3003 series (\`--models auto-ets --merge\`, then combo, then auto-arima), so
  the interval table above now covers every model on all of M3. 30 of 32 cells are in 77-83%; out:
  drift and auto-arima quarterly (75.8%, 75.4%). The "other" cells of the slow models (73.6-75.7% on
  the 35 "other" series of every 5th series) are 79.2-80.1% on all 174. auto-arima's sMAPE (13.59,
  R 13.60) is the same method as its previous row (13.54, an older run); its 292 s and the others'
  seconds are wall-clock on the 2-core machine, partly shared with test runs.
- **Unit-free ETS** (2026-11-27, ADR 0030; \`--models auto-ets,mstl,combo --merge\`, 616 / 12 / 982 s):
  auto-ets is now fitted to the series divided by its mean absolute value, so its forecast no longer
  depends on the data's units (R's Nelder-Mead steps every parameter by a tenth of the largest, the
  initial level among them). auto-ets 12.71 / 1.388 → 12.91 / 1.399 (yearly 16.44 → 16.61,
  quarterly 9.31 → 9.55, monthly 13.84 → 14.06, other 4.36 → 4.35: still better than R's ets on
  every frequency), mstl (whose trend is non-seasonal auto-ets) 13.60 / 1.439 → 13.31 / 1.412, combo
  12.32 / 1.336 → 12.40 / 1.342. On 300-series subsets the two fittings trade places by up to 0.6
  sMAPE (\`node bench/ets-units.ts --every 10 --offset 0|5\`: 12.40 → 12.53 and 12.78 → 12.17), the
  size of the optimiser-path noise. Coverage: the same 30 of 32 cells in 77-83%.
- **mstl's seasonal test** (2026-11-27, ADR 0034; \`--models mstl --merge\`, 8 s): mstl decomposes
  only the seasons that pass thetaf's seasonal test. 13.31 / 1.412 → 13.12 / 1.407 (yearly 16.66 →
  16.61, quarterly 9.55 → 9.70, monthly 14.86 → 14.41, other 4.58 → 4.41); 80% coverage 81.2 / 79.4
  / 82.2 / 78.5% → 81.7 / 79.2 / 79.3 / 79.0%, WQL over all series 0.1016 → 0.0996. On ETT daily
  and hourly data it gained too (docs/models-statistical.md).
`;
