/**
 * Combination rules for the ensemble, studied offline on M3: every candidate's point forecast of
 * the test part and of each backtest window (the windows the ensemble service uses: hold-out =
 * the horizon or half the series, up to 3 windows while half the series stays before them) is
 * computed once through the engine and saved; rules are then scored on the same numbers in seconds.
 *   SHARED_DIR=/work/shared nice -n 10 node bench/m3-ensemble-rules.ts --every 10 --offset 0 --save /tmp/ens-e10-o0.json
 *   ... --from /tmp/ens-e10-o0.json          # re-score saved forecasts
 * Candidates: auto-ets, auto-arima, theta, mstl and combo (their default set before ces; combo is the
 * mean of the first three, as the ensemble derives it); ces (added 2026-11-27, ADR 0031) is computed
 * too and scored in the "with ces" rules (CANDIDATES6; on all of M3 ces made the default ensemble
 * worse, so it stayed out of the default candidates). Point forecasts only (no interval calibration,
 * which never moves the mean). Prints sMAPE / MASE per rule and frequency.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { backtestWindows, heldOutLength, seasonalNaive } from '../src/ensemble/service.ts';
import { smape as backtestSmape } from '../src/ensemble/metrics.ts';
import { FREQUENCIES, loadM3, mase, smape, type M3Series } from './lib/m3.ts';
import { benchEngine } from './lib/run.ts';

const { values } = parseArgs({
  options: {
    every: { type: 'string', default: '10' },
    offset: { type: 'string', default: '0' },
    save: { type: 'string' },
    from: { type: 'string' },
    json: { type: 'string' },
  },
});
const every = Number(values.every);
const offset = Number(values.offset);
const series: M3Series[] = loadM3().filter((_, i) => i % every === offset);
const MODELS = ['auto-ets', 'auto-arima', 'theta', 'mstl', 'ces'] as const;
const MAX_W = 3;

/** Per series: heldOut, windows, and per model the final forecast and one backtest forecast per window (newest first). */
interface Case {
  heldOut: number;
  windows: number;
  final: Record<string, number[]>;
  backtests: Record<string, number[][]>;
}

let cases: Case[];
if (values.from) cases = JSON.parse(readFileSync(values.from, 'utf8')) as Case[];
else {
  const { engine, poolSize } = benchEngine();
  cases = series.map((s) => {
    const heldOut = heldOutLength(s.horizon, s.train.length);
    return { heldOut, windows: backtestWindows(heldOut, s.train.length, MAX_W), final: {}, backtests: {} };
  });
  interface Job {
    model: string;
    i: number;
    k: number; // -1: final
    train: number[];
    horizon: number;
    season: number;
  }
  const jobs: Job[] = [];
  for (const model of MODELS) {
    series.forEach((s, i) => {
      const c = cases[i]!;
      c.backtests[model] = [];
      jobs.push({ model, i, k: -1, train: s.train, horizon: s.horizon, season: s.seasonality });
      for (let k = 0; k < c.windows; k++) {
        jobs.push({ model, i, k, train: s.train.slice(0, s.train.length - (k + 1) * c.heldOut), horizon: c.heldOut, season: s.seasonality });
      }
    });
  }
  const t0 = performance.now();
  let next = 0;
  let done = 0;
  async function lane(): Promise<void> {
    while (next < jobs.length) {
      const first = jobs[next]!;
      const chunk: Job[] = [];
      while (
        next < jobs.length &&
        chunk.length < 8 &&
        jobs[next]!.model === first.model &&
        jobs[next]!.horizon === first.horizon &&
        jobs[next]!.season === first.season
      )
        chunk.push(jobs[next++]!);
      const out = await engine.forecast({
        model: first.model,
        series: chunk.map((j) => j.train),
        horizon: first.horizon,
        quantileLevels: [],
        numSamples: 0,
        seasonLength: first.season,
        seed: 1,
      });
      chunk.forEach((j, n) => {
        const c = cases[j.i]!;
        if (j.k < 0) c.final[j.model] = out[n]!.mean;
        else c.backtests[j.model]![j.k] = out[n]!.mean;
      });
      done += chunk.length;
      if (Math.floor(done / 500) !== Math.floor((done - chunk.length) / 500))
        console.error(`${done}/${jobs.length} jobs, ${((performance.now() - t0) / 1000).toFixed(0)} s`);
    }
  }
  try {
    await Promise.all(Array.from({ length: 2 * poolSize }, lane));
  } finally {
    await engine.close();
  }
  console.error(`forecasts: ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  if (values.save) writeFileSync(values.save, JSON.stringify(cases));
}

// combo as the ensemble derives it: the equal mean of its members, final and per window.
const mean = (rows: number[][]): number[] => rows[0]!.map((_, h) => rows.reduce((a, r) => a + r[h]!, 0) / rows.length);
for (const c of cases) {
  c.final.combo = mean(['auto-ets', 'auto-arima', 'theta'].map((m) => c.final[m]!));
  c.backtests.combo = Array.from({ length: c.windows }, (_, k) => mean(['auto-ets', 'auto-arima', 'theta'].map((m) => c.backtests[m]![k]!)));
}
// combo with ces as a fourth member: tried in ADR 0031, not kept (no gain on all of M3).
for (const c of cases) {
  c.final.combo4 = mean(['auto-ets', 'auto-arima', 'theta', 'ces'].map((m) => c.final[m]!));
  c.backtests.combo4 = Array.from({ length: c.windows }, (_, k) => mean(['auto-ets', 'auto-arima', 'theta', 'ces'].map((m) => c.backtests[m]![k]!)));
}
const CANDIDATES = ['auto-ets', 'auto-arima', 'theta', 'mstl', 'combo'];
/** The default candidates had combo taken ces in (combo4: the mean of four; tried, not kept). */
const NEW_DEFAULTS = ['auto-ets', 'auto-arima', 'theta', 'ces', 'mstl', 'combo4'];

/** What a rule sees of one series: the final forecasts and the backtest sMAPE per window. */
interface View {
  s: M3Series;
  c: Case;
  /** Backtest sMAPE per candidate per window (as the service scores it). */
  err: Record<string, number[]>;
  /** Seasonal naive's backtest sMAPE per window. */
  snaive: number[];
}
const views: View[] = series.map((s, i) => {
  const c = cases[i]!;
  const err: Record<string, number[]> = Object.fromEntries([...CANDIDATES, 'ces', 'combo4'].map((m) => [m, [] as number[]]));
  const snaive: number[] = [];
  for (let k = 0; k < c.windows; k++) {
    const end = s.train.length - k * c.heldOut;
    const train = s.train.slice(0, end - c.heldOut);
    const actual = s.train.slice(end - c.heldOut, end);
    snaive.push(backtestSmape(actual, seasonalNaive(train, c.heldOut, s.seasonality)));
    for (const m of [...CANDIDATES, 'ces', 'combo4']) err[m]!.push(backtestSmape(actual, c.backtests[m]![k]!));
  }
  return { s, c, err, snaive };
});

const avg = (v: readonly number[]): number => v.reduce((a, b) => a + b, 0) / v.length;
const blendOf = (v: View, w: Record<string, number>): number[] => {
  const ms = Object.keys(w).filter((m) => w[m]! > 0);
  const tot = ms.reduce((a, m) => a + w[m]!, 0);
  return v.c.final[ms[0]!]!.map((_, h) => ms.reduce((a, m) => a + (w[m]! / tot) * v.c.final[m]![h]!, 0));
};
const equal = (ms: readonly string[]): Record<string, number> => Object.fromEntries(ms.map((m) => [m, 1]));
/** Mean backtest sMAPE over the first `w` windows. */
const sc = (v: View, m: string, w = MAX_W): number => avg(v.err[m]!.slice(0, w));
const ranked = (v: View, ms: readonly string[], w = MAX_W): string[] => [...ms].sort((a, b) => sc(v, a, w) - sc(v, b, w) || a.localeCompare(b));
const beatSn = (v: View, ms: readonly string[], w = MAX_W): string[] => {
  const y = avg(v.snaive.slice(0, w));
  const e = ms.filter((m) => sc(v, m, w) <= y);
  return e.length > 0 ? e : ranked(v, ms, w).slice(0, 1);
};
const MEMBERS = ['auto-ets', 'auto-arima', 'theta', 'mstl'];
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const n = s.length;
  return n % 2 ? s[(n - 1) / 2]! : (s[n / 2 - 1]! + s[n / 2]!) / 2;
};
const stepMedian = (v: View, ms: readonly string[]): number[] => v.c.final[ms[0]!]!.map((_, h) => median(ms.map((m) => v.c.final[m]![h]!)));
/** Inverse mean-error weights over windows, shrunk toward equal by `lambda` (1 = equal). */
const invShrunk = (v: View, ms: readonly string[], lambda: number, w = MAX_W): Record<string, number> => {
  const inv = ms.map((m) => 1 / Math.max(1e-9, sc(v, m, w)));
  const tot = inv.reduce((a, b) => a + b, 0);
  return Object.fromEntries(ms.map((m, k) => [m, (1 - lambda) * (inv[k]! / tot) + lambda / ms.length]));
};
/** Gate: another choice only when it beat `base` in every window by at least `margin` (relative). */
const gated = (v: View, base: string, alt: string, margin: number, minWindows: number): boolean => {
  const a = v.err[alt]!;
  const b = v.err[base]!;
  if (a.length < minWindows) return false;
  return a.every((x, k) => x < b[k]! * (1 - margin));
};

const THREE = ['auto-ets', 'auto-arima', 'theta'];
/** Inverse mean squared backtest error weights (Bates-Granger), shrunk toward equal by lambda. */
const invMse = (v: View, ms: readonly string[], lambda: number): Record<string, number> => {
  const mse = ms.map((m) => {
    let s = 0;
    let n = 0;
    for (let k = 0; k < v.c.windows; k++) {
      const end = v.s.train.length - k * v.c.heldOut;
      const actual = v.s.train.slice(end - v.c.heldOut, end);
      actual.forEach((y, h) => {
        s += (y - v.c.backtests[m]![k]![h]!) ** 2;
        n++;
      });
    }
    return s / n;
  });
  const inv = mse.map((x) => 1 / Math.max(1e-12, x));
  const tot = inv.reduce((a, b) => a + b, 0);
  return Object.fromEntries(ms.map((m, k) => [m, (1 - lambda) * (inv[k]! / tot) + lambda / ms.length]));
};
const EXTRA: Record<string, (v: View) => number[]> = {};
for (const lambda of [0, 0.3, 0.5, 0.7, 0.8, 0.9]) {
  EXTRA[`three: inverse sMAPE 3w shrink ${lambda}`] = (v) => blendOf(v, invShrunk(v, THREE, lambda));
  EXTRA[`three: inverse MSE 3w shrink ${lambda}`] = (v) => blendOf(v, invMse(v, THREE, lambda));
  EXTRA[`three: inverse sMAPE shrink ${lambda}, only with >=2 windows`] = (v) =>
    v.c.windows >= 2 ? blendOf(v, invShrunk(v, THREE, lambda)) : v.c.final.combo!;
  EXTRA[`all5: inverse MSE 3w shrink ${lambda}`] = (v) => blendOf(v, invMse(v, CANDIDATES, lambda));
}
const RULES: Record<string, (v: View) => number[]> = {
  'combo alone': (v) => v.c.final.combo!,
  'service today: top 3 beating snaive (1 window), half 1/score half equal': (v) => {
    const ms = ranked(v, beatSn(v, CANDIDATES, 1), 1).slice(0, 3);
    const inv = invShrunk(v, ms, 0.5, 1);
    return blendOf(v, inv);
  },
  'equal mean of all 5 candidates': (v) => blendOf(v, equal(CANDIDATES)),
  'equal mean of ets, arima, theta, mstl': (v) => blendOf(v, equal(MEMBERS)),
  'median of ets, arima, theta, mstl (per step)': (v) => stepMedian(v, MEMBERS),
  'median of all 5 (per step)': (v) => stepMedian(v, CANDIDATES),
  'median of ets, arima, theta': (v) => stepMedian(v, ['auto-ets', 'auto-arima', 'theta']),
  'equal mean of top 3 of the 4 members (3 windows)': (v) => blendOf(v, equal(ranked(v, MEMBERS).slice(0, 3))),
  'equal mean of top 3 of the 4 members (1 window)': (v) => blendOf(v, equal(ranked(v, MEMBERS, 1).slice(0, 3))),
  'equal mean of top 3 of all 5 (3 windows)': (v) => blendOf(v, equal(ranked(v, CANDIDATES).slice(0, 3))),
  'equal mean of members beating snaive (3 windows)': (v) => blendOf(v, equal(beatSn(v, MEMBERS))),
  'equal mean of all 5 beating snaive (3 windows)': (v) => blendOf(v, equal(beatSn(v, CANDIDATES))),
  'inverse error 3w, shrink 0.8 toward equal, all 5': (v) => blendOf(v, invShrunk(v, CANDIDATES, 0.8)),
  'inverse error 3w, shrink 0.5, all 5': (v) => blendOf(v, invShrunk(v, CANDIDATES, 0.5)),
  'inverse error 3w, shrink 0.8, members': (v) => blendOf(v, invShrunk(v, MEMBERS, 0.8)),
  'inverse error 3w, shrink 0.5, members': (v) => blendOf(v, invShrunk(v, MEMBERS, 0.5)),
  'inverse error 3w, no shrink, members': (v) => blendOf(v, invShrunk(v, MEMBERS, 0)),
  'combo, mstl added if it beats combo in every window (>=2 windows)': (v) =>
    gated(v, 'combo', 'mstl', 0, 2) ? blendOf(v, { 'auto-ets': 1, 'auto-arima': 1, theta: 1, mstl: 1 }) : v.c.final.combo!,
  'combo unless best single beats it in every window by 10% (>=2 windows)': (v) => {
    const best = ranked(v, MEMBERS)[0]!;
    return gated(v, 'combo', best, 0.1, 2) ? v.c.final[best]! : v.c.final.combo!;
  },
  'combo unless best single beats it in every window by 20% (>=2 windows)': (v) => {
    const best = ranked(v, MEMBERS)[0]!;
    return gated(v, 'combo', best, 0.2, 2) ? v.c.final[best]! : v.c.final.combo!;
  },
  'combo minus the member worst in every window (>=2 windows)': (v) => {
    const worst = ranked(v, ['auto-ets', 'auto-arima', 'theta']).at(-1)!;
    const others = ['auto-ets', 'auto-arima', 'theta'].filter((m) => m !== worst);
    const always = others.every((o) => v.err[worst]!.every((x, k) => x > v.err[o]![k]!));
    return always && v.c.windows >= 2 ? blendOf(v, equal(others)) : v.c.final.combo!;
  },
  'members beating snaive, equal (3w); combo if none': (v) => {
    const y = avg(v.snaive);
    const e = MEMBERS.filter((m) => sc(v, m) <= y);
    return e.length > 0 ? blendOf(v, equal(e)) : v.c.final.combo!;
  },
  'top 3 of members, weights inverse error shrunk 0.5 (3w)': (v) => blendOf(v, invShrunk(v, ranked(v, MEMBERS).slice(0, 3), 0.5)),
  'top 3 of all 5, equal, rank by 3w; members expanded': (v) => {
    const top = ranked(v, CANDIDATES).slice(0, 3);
    const w: Record<string, number> = {};
    for (const m of top) {
      if (m === 'combo') for (const x of ['auto-ets', 'auto-arima', 'theta']) w[x] = (w[x] ?? 0) + 1 / 3;
      else w[m] = (w[m] ?? 0) + 1;
    }
    return blendOf(v, w);
  },
};

/** Candidates left after dropping those worse than seasonal naive in every one of >= 2 windows by `margin`. */
const notClearlyBad = (v: View, ms: readonly string[], margin: number): string[] => {
  if (v.c.windows < 2) return [...ms];
  const keep = ms.filter((m) => !v.err[m]!.every((x, k) => x > v.snaive[k]! * (1 + margin)));
  return keep.length > 0 ? keep : ranked(v, ms).slice(0, 1);
};
/** Weights over base models: a derived candidate (combo) spreads its weight over its members. */
const expand = (w: Record<string, number>): Record<string, number> => {
  const out: Record<string, number> = {};
  for (const [m, x] of Object.entries(w)) {
    if (m === 'combo') for (const b of THREE) out[b] = (out[b] ?? 0) + x / 3;
    else out[m] = (out[m] ?? 0) + x;
  }
  return out;
};
for (const margin of [0, 0.1, 0.25]) {
  EXTRA[`all5 not clearly worse than snaive (${margin}), equal`] = (v) => blendOf(v, equal(notClearlyBad(v, CANDIDATES, margin)));
  EXTRA[`all5 not clearly worse than snaive (${margin}), inv sMAPE shrink 0.5`] = (v) => blendOf(v, invShrunk(v, notClearlyBad(v, CANDIDATES, margin), 0.5));
  EXTRA[`members not clearly worse than combo (${margin}), equal`] = (v) => {
    if (v.c.windows < 2) return v.c.final.combo!;
    const keep = MEMBERS.filter((m) => !v.err[m]!.every((x, k) => x > v.err.combo![k]! * (1 + margin)));
    return blendOf(v, equal(keep.length > 0 ? keep : THREE));
  };
}
// With ces (the default candidates since it joined the catalog): a model unlike the other three.
const CANDIDATES6 = [...CANDIDATES, 'ces'];
const FOUR = [...THREE, 'ces'];
for (const [label, w] of [
  ['1 window', 1],
  ['3 windows', MAX_W],
] as const) {
  EXTRA[`with ces: service rule, top 3 of 6 beating snaive (${label}), half 1/score half equal`] = (v) => {
    const ms = ranked(v, beatSn(v, CANDIDATES6, w), w).slice(0, 3);
    return blendOf(v, invShrunk(v, ms, 0.5, w));
  };
  EXTRA[`with ces: top 3 of 6 beating snaive (${label}), combo expanded, half 1/score`] = (v) => {
    const ms = ranked(v, beatSn(v, CANDIDATES6, w), w).slice(0, 3);
    return blendOf(v, expand(invShrunk(v, ms, 0.5, w)));
  };
  EXTRA[`with ces: top 4 of 6 beating snaive (${label}), half 1/score`] = (v) => {
    const ms = ranked(v, beatSn(v, CANDIDATES6, w), w).slice(0, 4);
    return blendOf(v, invShrunk(v, ms, 0.5, w));
  };
}
for (const [label, w] of [
  ['1 window', 1],
  ['3 windows', MAX_W],
] as const) {
  EXTRA[`combo4 tried: service rule, top 3 beating snaive (${label}), half 1/score half equal`] = (v) => {
    const ms = ranked(v, beatSn(v, NEW_DEFAULTS, w), w).slice(0, 3);
    return blendOf(v, invShrunk(v, ms, 0.5, w));
  };
}
EXTRA['combo4 tried: equal mean of all 6'] = (v) => blendOf(v, equal(NEW_DEFAULTS));
EXTRA['combo4 tried: combo4 alone'] = (v) => v.c.final.combo4!;
EXTRA['with ces: equal mean of ets, arima, theta, ces'] = (v) => blendOf(v, equal(FOUR));
EXTRA['with ces: equal mean of all 6'] = (v) => blendOf(v, equal(CANDIDATES6));
EXTRA['with ces: median of ets, arima, theta, ces (per step)'] = (v) => stepMedian(v, FOUR);
EXTRA['with ces: (combo + ces) / 2'] = (v) => blendOf(v, { combo: 1, ces: 1 });
EXTRA['with ces: equal mean of ets, arima, theta, ces, mstl'] = (v) => blendOf(v, equal([...FOUR, 'mstl']));
EXTRA['with ces: four, inverse MSE 3w shrink 0.8'] = (v) => blendOf(v, invMse(v, FOUR, 0.8));
for (const lambda of [0.5, 0.8]) {
  EXTRA[`top3 of 5 by 3w, inv sMAPE shrink ${lambda}, combo expanded`] = (v) => {
    const top = ranked(v, CANDIDATES).slice(0, 3);
    return blendOf(v, expand(invShrunk(v, top, lambda)));
  };
}
const out: Record<string, Record<string, { smape: number; mase: number }>> = {};
const lines: string[] = [];
lines.push(
  `${series.length} series (every ${every}th, offset ${offset}); windows: ${[1, 2, 3].map((w) => `${w}: ${cases.filter((c) => c.windows === w).length}`).join(', ')}`,
);
const singles: Record<string, (v: View) => number[]> = Object.fromEntries([...CANDIDATES, 'ces'].map((m) => [`single: ${m}`, (v: View) => v.c.final[m]!]));
for (const [name, rule] of Object.entries({ ...singles, ...RULES, ...EXTRA })) {
  const fc = views.map(rule);
  const row: Record<string, { smape: number; mase: number }> = {};
  for (const f of [...FREQUENCIES, 'all'] as const) {
    const idx = series.map((s, i) => (f === 'all' || s.frequency === f ? i : -1)).filter((i) => i >= 0);
    row[f] = {
      smape: avg(idx.map((i) => smape(series[i]!.test, fc[i]!))),
      mase: avg(idx.map((i) => mase(series[i]!.train, series[i]!.test, fc[i]!, series[i]!.seasonality))),
    };
  }
  out[name] = row;
  const base = out['single: combo']?.all;
  const wins = base && row.all!.smape < base.smape && row.all!.mase < base.mase ? ' BEATS combo' : '';
  // Paired standard error of the sMAPE difference from combo over the series.
  const comboFc = views.map((v) => v.c.final.combo!);
  const d = series.map((s, i) => smape(s.test, fc[i]!) - smape(s.test, comboFc[i]!));
  const md = avg(d);
  const se = Math.sqrt(d.reduce((a, x) => a + (x - md) ** 2, 0) / (d.length - 1) / d.length);
  row.diff = { smape: md, mase: se };
  lines.push(
    `${name.padEnd(72)} ${[...FREQUENCIES, 'all'].map((f) => `${row[f]!.smape.toFixed(2)}/${row[f]!.mase.toFixed(3)}`).join('  ')}  d=${md.toFixed(3)}±${se.toFixed(3)}${wins}`,
  );
}
console.log(lines.join('\n'));
if (values.json) writeFileSync(values.json, JSON.stringify({ every, offset, series: series.length, rules: out }, null, 2));
