/**
 * Interval calibration study on M3: for each model and series, the model's own (uncalibrated)
 * forecast of the test part and the standardised errors |z| of its backtests at up to --windows
 * origins (stats/calibrate.ts `backtestZ`, the refits the service runs). Calibration rules are then
 * applied offline to the same numbers, so rules are compared on identical fits:
 * 80% coverage and WQL over the deciles (as bench/m3-accuracy.ts scores them) per frequency.
 *   SHARED_DIR=/work/shared nice -n 15 node bench/m3-intervals.ts --every 10 [--models naive,theta] [--windows 5]
 *   ... --from /tmp/z.json          # re-score saved backtests (written with --save /tmp/z.json)
 *   --offset 5                      # another subset (series i with i % every == offset)
 *   --partial                       # also backtests at later origins for series with few windows
 *   --stride 1                      # origins every step instead of every ceil(H/2) steps
 *   RULES=conformal BY_WINDOWS=1    # the conformal-rank rules (ADR 0026); coverage by origins
 *   RULES=origins                   # 4-6 origins (backtests saved with --windows 6), ADR 0027 vs 0026
 *                                   # (BY_WINDOWS=yearly: one frequency)
 * Writes bench/results/m3-intervals.{json,md}. In-process, one thread (a study, not a speed figure).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { calibrationOptions, CALIBRATION_WINDOWS } from '../src/engine/models/common.ts';
import { backtestZ, calibrationOrigins, conformalQuantile, factorFromWindows, type BacktestWindow } from '../src/engine/stats/calibrate.ts';
import { qnorm } from '../src/engine/stats/normal.ts';
import { FITTERS } from './lib/fitters.ts';
import { intervalScore, loadM3, scoreByFrequency, writeStudy } from './lib/m3.ts';

const { values } = parseArgs({
  options: {
    every: { type: 'string', default: '10' },
    offset: { type: 'string', default: '0' },
    models: { type: 'string' },
    windows: { type: 'string', default: '5' },
    save: { type: 'string' },
    from: { type: 'string' },
    partial: { type: 'boolean', default: false },
    out: { type: 'string', default: 'm3-intervals' },
    stride: { type: 'string' },
  },
});
const every = Number(values.every);
const offset = Number(values.offset);
const series = loadM3().filter((_, i) => i % every === offset);

interface Case {
  /** Uncalibrated forecast of the test part. */
  mean: number[];
  sdLow: number[];
  sdHigh: number[];
  /** |z| per backtest window (newest first), per step. */
  z: number[][];
  /** The same for the search run again (`GaussianForecast.research`, auto-arima on short series); pooled with z as the service does. */
  zr?: number[][];
  /**
   * With --partial, for series with fewer than --windows origins: |z| of the later origins
   * n - H + k (k = 1 .. H - 1, index k - 1), each scoring the n - o steps it can (NaN where the
   * origin is below the minimum training length); the refit of the chosen model.
   */
  zp?: number[][];
  /** Backtest origins (calibrationOrigins), newest first; windows whose refit failed are missing from z. */
  origins?: number[];
}
type Data = Record<string, Case[]>;

let data: Data;
if (values.from) data = JSON.parse(readFileSync(values.from, 'utf8')) as Data;
else {
  data = {};
  const models = values.models?.split(',') ?? Object.keys(FITTERS);
  for (const model of models) {
    const fit = FITTERS[model];
    if (!fit) throw new Error(`unknown model ${model}`);
    const t0 = performance.now();
    data[model] = series.map((s) => {
      const ctx = { horizon: s.horizon, seasonLength: s.seasonality };
      const fc = fit(s.train, ctx);
      const refit = fc.refit ?? ((train: number[], h: number) => fit(train, { horizon: h, seasonLength: s.seasonality }));
      const windows = Number(values.windows);
      const opts = { ...calibrationOptions(4, s.seasonality), windows, ...(values.stride ? { stride: Number(values.stride) } : {}) };
      const z = backtestZ(s.train, s.horizon, refit, opts);
      const zr = fc.research ? backtestZ(s.train, s.horizon, fc.research, opts) : undefined;
      let zp: number[][] | undefined;
      const n = s.train.length;
      if (values.partial && calibrationOrigins(n, s.horizon, opts).length < windows) {
        zp = [];
        for (let k = 1; k < s.horizon; k++) {
          const o = n - s.horizon + k;
          if (o <= Math.max(opts.minTrain, n - s.horizon)) {
            zp.push([]);
            continue;
          }
          // One window at origin o: backtestZ on the series cut at o + (n - o) = n, one window.
          const w = backtestZ(s.train, n - o, refit, { windows: 1, minTrain: o });
          zp.push(w[0] ?? []);
        }
      }
      const origins = calibrationOrigins(s.train.length, s.horizon, opts);
      return { mean: fc.mean, sdLow: fc.sdLow, sdHigh: fc.sdHigh, z, origins, ...(zr ? { zr } : {}), ...(zp ? { zp } : {}) };
    });
    console.log(`${model}: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
  if (values.save) writeFileSync(values.save, JSON.stringify(data));
}

// Saved backtests from before 2026-11-26 evening have no origins: the plan's (a window whose refit failed would shift them).
data = Object.fromEntries(
  Object.entries(data).map(([model, cases]) => [
    model,
    cases.map((c, i) => {
      const s = series[i]!;
      return c.origins
        ? c
        : { ...c, origins: calibrationOrigins(s.train.length, s.horizon, { ...calibrationOptions(4, s.seasonality), windows: Number(values.windows) }) };
    }),
  ]),
);
/**
 * The windows of a case with their origins, the newest `origins` (the service's count by default;
 * backtests saved with more --windows): refits, then auto-arima's searches at the same origins.
 */
function windowsOf(c: Case, origins = CALIBRATION_WINDOWS): BacktestWindow[] {
  const o = c.origins ?? [];
  const keep = (k: number): boolean => k < origins;
  return [...c.z.flatMap((z, k) => (keep(k) ? [{ origin: o[k]!, z }] : [])), ...(c.zr ?? []).flatMap((z, k) => (keep(k) ? [{ origin: o[k]!, z }] : []))];
}
/** The service's factor from the newest `origins` origins. */
function byEffectiveOrigins(origins: number): Rule {
  return (_z, h, c) => factorFromWindows(windowsOf(c, origins), h)?.factor ?? null;
}
/** ADR 0026's factor: conformal Q0.8 of the pooled |z|, x1.33 when all windows share one origin. */
function adr0026(c: Case, origins = CALIBRATION_WINDOWS): number | null {
  const ws = windowsOf(c, origins);
  const z = ws
    .flatMap((w) => w.z)
    .filter((v) => Number.isFinite(v))
    .sort((a, b) => a - b);
  if (z.length === 0) return null;
  const raw = conformalQuantile(z, 0.8) / qnorm(0.9);
  return Math.min(5, Math.max(0.2, new Set(ws.map((w) => w.origin)).size <= 1 ? raw * 1.33 : raw));
}
/** A calibration rule: the factor (or one per step) from a series' backtest windows (null = leave as is). */
type Rule = (z: number[][], horizon: number, c: Case) => number | number[] | null;
const Z80 = qnorm(0.9);
function typeSeven(sorted: readonly number[], p: number): number {
  const h = (sorted.length - 1) * p;
  const lo = Math.floor(h);
  const hi = Math.min(sorted.length - 1, lo + 1);
  return sorted[lo]! + (h - lo) * (sorted[hi]! - sorted[lo]!);
}
/** Variants: `windows` used, |z| quantile `level`, shrink weight k / (k + `shrink`) in log scale. */
function variant(windows: number, level: number, shrink: number): Rule {
  return (zw) => {
    const use = zw.slice(0, windows);
    const z = use
      .flat()
      .filter((v) => Number.isFinite(v))
      .sort((a, b) => a - b);
    if (z.length === 0) return null;
    const raw = Math.min(5, Math.max(0.2, typeSeven(z, level) / Z80));
    const w = use.length / (use.length + shrink);
    return Math.exp(w * Math.log(raw));
  };
}
/**
 * Per-step factors: the growth of |z| with the step, b in |z_h| ~ (h + 1)^b (least squares of
 * log |z| on log(h + 1) over all windows, b clamped to [lo, hi]), taken out before the quantile
 * and put back per step.
 */
function sloped(windows: number, level: number, lo: number, hi: number): Rule {
  return (zw, horizon) => {
    const pts: [number, number][] = [];
    for (const w of zw.slice(0, windows)) {
      w.forEach((v, h) => {
        if (Number.isFinite(v) && v > 0) pts.push([Math.log(h + 1), Math.log(v)]);
      });
    }
    if (pts.length === 0) return null;
    const mx = pts.reduce((a, p) => a + p[0], 0) / pts.length;
    const my = pts.reduce((a, p) => a + p[1], 0) / pts.length;
    const sxx = pts.reduce((a, p) => a + (p[0] - mx) ** 2, 0);
    const sxy = pts.reduce((a, p) => a + (p[0] - mx) * (p[1] - my), 0);
    const b = sxx > 0 ? Math.min(hi, Math.max(lo, sxy / sxx)) : 0;
    const g = (h: number): number => Math.exp(b * (Math.log(h + 1) - mx));
    const z: number[] = [];
    for (const w of zw.slice(0, windows)) {
      w.forEach((v, h) => {
        if (Number.isFinite(v)) z.push(v / g(h));
      });
    }
    z.sort((x, y) => x - y);
    const base = typeSeven(z, level) / Z80;
    return Array.from({ length: horizon }, (_, h) => Math.min(5, Math.max(0.2, base * g(h))));
  };
}
/** Finite |z| of every window, ascending. */
function pooledZ(zw: readonly (readonly number[])[]): number[] {
  return zw
    .flat()
    .filter((v) => Number.isFinite(v))
    .sort((a, b) => a - b);
}
/**
 * Type-6 quantile: rank p (N + 1) among N values, interpolated; beyond the largest value the largest.
 * For N values exchangeable with a new one, P(new <= that quantile) = p on average (split conformal).
 */
function typeSix(sorted: readonly number[], p: number): number {
  const r = p * (sorted.length + 1);
  if (r >= sorted.length) return sorted[sorted.length - 1]!;
  if (r <= 1) return sorted[0]!;
  const lo = Math.floor(r);
  return sorted[lo - 1]! + (r - lo) * (sorted[lo]! - sorted[lo - 1]!);
}
function byQuantile(q: (sorted: number[], windows: number) => number): Rule {
  return (zw) => {
    const z = pooledZ(zw);
    if (z.length === 0) return null;
    return Math.min(5, Math.max(0.2, q(z, zw.length) / Z80));
  };
}
/** The backtest windows plus partial ones at later origins (Case.zp) for series with fewer than `target`. */
function withPartial(zw: number[][], horizon: number, c: Case, target: number, which: 'half' | 'all' | 'one'): number[][] {
  const out = [...zw];
  const full = c.z.length;
  if (!c.zp || full >= target) return out;
  const stride = which === 'half' ? Math.max(1, Math.ceil(horizon / 2)) : 1;
  let added = 0;
  for (let k = stride; k < horizon; k += stride) {
    const w = c.zp[k - 1];
    if (!w || w.length === 0) continue;
    if (which !== 'all' && full + added >= target) break;
    out.push(w);
    added++;
  }
  return out;
}
function filled(target: number, which: 'half' | 'all' | 'one', q: (sorted: number[]) => number): Rule {
  return (zw, horizon, c) => {
    const z = pooledZ(withPartial(zw, horizon, c, target, which));
    if (z.length === 0) return null;
    return Math.min(5, Math.max(0.2, q(z) / Z80));
  };
}
/** Each step weighs the same in the quantile (the test scores every step once); level p (1 + 1/N). */
function filledWeighted(p: number): Rule {
  return (zw, horizon, c) => {
    const ws = withPartial(zw, horizon, c, 3, 'all');
    const perStep = new Array<number>(horizon).fill(0);
    for (const w of ws) {
      w.forEach((v, h) => {
        if (Number.isFinite(v)) perStep[h]!++;
      });
    }
    const pts: [number, number][] = [];
    for (const w of ws) {
      w.forEach((v, h) => {
        if (Number.isFinite(v)) pts.push([v, 1 / perStep[h]!]);
      });
    }
    if (pts.length === 0) return null;
    pts.sort((a, b) => a[0] - b[0]);
    const total = pts.reduce((a, x) => a + x[1], 0);
    const level = Math.min(1, p * (1 + 1 / pts.length));
    let cum = 0;
    let v = pts[pts.length - 1]![0];
    for (const [x, w] of pts) {
      cum += w / total;
      if (cum >= level - 1e-12) {
        v = x;
        break;
      }
    }
    return Math.min(5, Math.max(0.2, v / Z80));
  };
}
const RULES: Record<string, Rule> = {
  none: () => 1,
  [`the service's (${CALIBRATION_WINDOWS} origins, conformal Q0.8, widened by effective origins, ADR 0027)`]: (_z, h, c) =>
    factorFromWindows(windowsOf(c), h)?.factor ?? null,
  'ADR 0026 (conformal Q0.8, one origin x1.33)': (_z, _h, c) => adr0026(c),
  ...(process.env.RULES === 'origins'
    ? {
        // More origins at the same stride (backtests saved with --windows 6 or more).
        ...Object.fromEntries(
          [4, 5, 6].flatMap((w) => [
            [`${w} origins, widened by effective origins`, byEffectiveOrigins(w)],
            [`${w} origins, ADR 0026`, (_z: number[][], _h: number, c: Case) => adr0026(c, w)],
          ]),
        ),
      }
    : {}),
  ...(process.env.RULES === 'conformal'
    ? {
        'before 2026-11-26 pm: type-7 Q0.85': byQuantile((z) => typeSeven(z, 0.85)),
        'type-7 q0.8': byQuantile((z) => typeSeven(z, 0.8)),
        'type-6 q0.8, one origin not widened': byQuantile((z) => typeSix(z, 0.8)),
        'type-6 q0.8 (conformal, interpolated)': byQuantile((z) => typeSix(z, 0.8)),
        'order statistic ceil(0.8 (N + 1))': byQuantile((z) => z[Math.min(z.length, Math.ceil(0.8 * (z.length + 1))) - 1]!),
        'type-6 q0.8 + 0.2/(J+1)': byQuantile((z, j) => typeSix(z, 0.8 + 0.2 / (j + 1))),
        'type-6 q0.82': byQuantile((z) => typeSix(z, 0.82)),
        'fill to 3 windows at stride ceil(H/2) after n - H, type-6 q0.8': filled(3, 'half', (z) => typeSix(z, 0.8)),
        'fill with every later origin, type-6 q0.8': filled(3, 'all', (z) => typeSix(z, 0.8)),
        'fill with every later origin, service q': filled(3, 'all', (z) => typeSeven(z, 0.85)),
        'fill to 3 at stride 1, type-6 q0.8': filled(3, 'one', (z) => typeSix(z, 0.8)),
        'fill with every later origin, step-weighted q0.8(1+1/N)': filledWeighted(0.8),
        'type-6 q0.85': byQuantile((z) => typeSix(z, 0.85)),
      }
    : {}),
  ...(process.env.RULES === 'all'
    ? {
        'before 2026-11-26: w3 q0.85, log c shrunk by k/(k+0.5)': variant(3, 0.85, 0.5),
        'w5 q0.85 shrink 0.5': variant(5, 0.85, 0.5),
        'w5 q0.85 no shrink': variant(5, 0.85, 0),
        'w3 q0.9 shrink 0.5': variant(3, 0.9, 0.5),
        'w5 q0.9 shrink 0.5': variant(5, 0.9, 0.5),
        'w5 q0.8 no shrink': variant(5, 0.8, 0),
        'w3 q0.85 per-step slope in [0, 1]': sloped(3, 0.85, 0, 1),
        'w3 q0.85 per-step slope in [-0.5, 1]': sloped(3, 0.85, -0.5, 1),
        'w3 q0.8 per-step slope in [0, 1]': sloped(3, 0.8, 0, 1),
        'w5 q0.8 per-step slope in [0, 1]': sloped(5, 0.8, 0, 1),
      }
    : {}),
};

function score(model: string, rule: Rule, idx: readonly number[]): { coverage: number; wql: number } {
  const cases = data[model]!;
  return intervalScore(
    series,
    cases,
    (i) => {
      const c = cases[i]!;
      return rule([...c.z, ...(c.zr ?? [])], series[i]!.horizon, c) ?? 1;
    },
    idx,
  );
}

const table: Record<string, Record<string, Record<string, { coverage: number; wql: number }>>> = {};
const lines: string[] = [];
for (const [name, rule] of Object.entries(RULES)) {
  table[name] = {};
  lines.push(`### rule: ${name}`, '', '| model | yearly | quarterly | monthly | other | all |', '|---|---|---|---|---|---|');
  for (const model of Object.keys(data)) {
    const { row, cells } = scoreByFrequency(series, (idx) => score(model, rule, idx));
    table[name][model] = row;
    lines.push(`| ${model} | ${cells} |`);
  }
  lines.push('');
}
if (process.env.BY_WINDOWS) {
  // Coverage by the number of backtest windows a series had (all frequencies together).
  for (const [name, rule] of Object.entries(RULES)) {
    lines.push(`### by windows, rule: ${name}`, '', '| model | 1 | 2 | 3 | 4-6 |', '|---|---|---|---|---|');
    for (const model of Object.keys(data)) {
      const cells = [
        [1, 1],
        [2, 2],
        [3, 3],
        [4, 6],
      ].map(([a, b]) => {
        const idx = series
          .map((_, i) => i)
          .filter((i) => {
            if (process.env.BY_WINDOWS !== '1' && series[i]!.frequency !== process.env.BY_WINDOWS) return false;
            const c = data[model]![i]!;
            const j = c.z.length + (c.zr?.length ?? 0);
            return j >= a! && j <= b!;
          });
        return idx.length === 0 ? '-' : `${(100 * score(model, rule, idx).coverage).toFixed(1)}% (${idx.length})`;
      });
      lines.push(`| ${model} | ${cells.join(' | ')} |`);
    }
    lines.push('');
  }
}
console.log(lines.join('\n'));
writeStudy(
  values.out,
  { every, series: series.length, table },
  'M3: 80% interval coverage / WQL per calibration rule',
  `by \`node bench/m3-intervals.ts ${process.argv.slice(2).join(' ')}\` over ${series.length} M3 series (every ${every}th), official horizons. Each cell: share of test values inside the 80% interval (target 77-83%) / weighted quantile loss over the nine deciles (lower is better). Every rule is applied to the same fits and backtests.`,
  lines,
);
