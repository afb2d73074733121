/**
 * Rules for blending a model with seasonal naive by their errors on the calibration backtests
 * (ADR 0029), scored offline on what bench/naive-blend-dump.ts saved. sMAPE and MASE (seasonal
 * scale) per set (M3 frequency, or the ETT origin set). The rule the service uses: "MAE^-1,
 * seasonal, oldest origin >= 0.8 n".
 *   node bench/naive-blend-rules.ts /tmp/bt-m3-0.json /tmp/bt-m3-1.json
 */
import { readFileSync } from 'node:fs';
import { mase, smape } from './lib/m3.ts';
import type { BlendSaved } from './lib/naive-blend.ts';

type Saved = BlendSaved;
const all: Saved[] = process.argv.slice(2).flatMap((f) => JSON.parse(readFileSync(f, 'utf8')) as Saved[]);

function snaive(y: readonly number[], h: number, m: number): number[] {
  const p = y.length >= m ? m : 1;
  return Array.from({ length: h }, (_, i) => y[y.length - p + (i % p)]!);
}
/** Pooled backtest errors of ETS and seasonal naive: sums of |e| and e^2, and per-window MAE. */
function backtest(s: Saved): { ae: number; as: number; se: number; ss: number; wins: { e: number; s: number }[] } {
  let ae = 0;
  let as = 0;
  let se = 0;
  let ss = 0;
  const wins: { e: number; s: number }[] = [];
  for (const w of s.windows) {
    const train = s.y.slice(0, w.origin);
    const sn = snaive(train, w.mean.length, s.m);
    let we = 0;
    let ws = 0;
    w.mean.forEach((f, i) => {
      const y = s.y[w.origin + i]!;
      ae += Math.abs(y - f);
      as += Math.abs(y - sn[i]!);
      se += (y - f) ** 2;
      ss += (y - sn[i]!) ** 2;
      we += Math.abs(y - f);
      ws += Math.abs(y - sn[i]!);
    });
    wins.push({ e: we, s: ws });
  }
  return { ae, as, se, ss, wins };
}
/** The weight w in [0, 1] minimising the backtests' squared error of w model + (1 - w) snaive. */
function optimalWeight(s: Saved): number {
  let a = 0;
  let b = 0;
  for (const w of s.windows) {
    const sn = snaive(s.y.slice(0, w.origin), w.mean.length, s.m);
    w.mean.forEach((f, i) => {
      const y = s.y[w.origin + i]!;
      const d = f - sn[i]!; // e_snaive - e_model
      a += d * d;
      b += (y - sn[i]!) * d;
    });
  }
  return a > 0 ? Math.min(1, Math.max(0, b / a)) : 1;
}
/** The weight on a grid of 0.05 minimising the backtests' absolute error. */
function maeOptimalWeight(s: Saved): number {
  let best = 1;
  let bestE = Number.POSITIVE_INFINITY;
  for (let k = 20; k >= 0; k--) {
    const wt = k / 20;
    let e = 0;
    for (const w of s.windows) {
      const sn = snaive(s.y.slice(0, w.origin), w.mean.length, s.m);
      w.mean.forEach((f, i) => {
        e += Math.abs(s.y[w.origin + i]! - (wt * f + (1 - wt) * sn[i]!));
      });
    }
    if (e < bestE - 1e-12) {
      bestE = e;
      best = wt;
    }
  }
  return best;
}
const mix = (a: readonly number[], b: readonly number[], wa: number): number[] => a.map((v, i) => wa * v + (1 - wa) * b[i]!);

type Rule = (s: Saved, sn: number[]) => number[];
const invWeight = (e: number, s: number): number => (e <= 0 ? 1 : s <= 0 ? 0 : 1 / e / (1 / e + 1 / s));
const rules: Record<string, Rule> = {
  'the model alone': (s) => s.mean,
  'seasonal naive': (_, sn) => sn,
  'inverse backtest MAE (seasonal only)': (s, sn) => {
    if (s.m <= 1 || s.windows.length === 0) return s.mean;
    const b = backtest(s);
    return mix(s.mean, sn, invWeight(b.ae, b.as));
  },
  'inverse backtest MAE (any)': (s, sn) => {
    if (s.windows.length === 0) return s.mean;
    const b = backtest(s);
    return mix(s.mean, sn, invWeight(b.ae, b.as));
  },
  'inverse backtest MSE (seasonal only)': (s, sn) => {
    if (s.m <= 1 || s.windows.length === 0) return s.mean;
    const b = backtest(s);
    return mix(s.mean, sn, invWeight(b.se, b.ss));
  },
  'inverse MAE, only if snaive wins the pooled backtest (seasonal)': (s, sn) => {
    if (s.m <= 1 || s.windows.length === 0) return s.mean;
    const b = backtest(s);
    return b.as < b.ae ? mix(s.mean, sn, invWeight(b.ae, b.as)) : s.mean;
  },
  'inverse MAE, only if snaive wins every window (seasonal)': (s, sn) => {
    if (s.m <= 1 || s.windows.length === 0) return s.mean;
    const b = backtest(s);
    return b.wins.every((w) => w.s < w.e) ? mix(s.mean, sn, invWeight(b.ae, b.as)) : s.mean;
  },
  'inverse MAE squared (seasonal)': (s, sn) => {
    if (s.m <= 1 || s.windows.length === 0) return s.mean;
    const b = backtest(s);
    return mix(s.mean, sn, invWeight(b.ae ** 2, b.as ** 2));
  },
  'inverse MAE, seasonal and n >= 10 m': (s, sn) => {
    if (s.m <= 1 || s.windows.length === 0 || s.y.length < 10 * s.m) return s.mean;
    const b = backtest(s);
    return mix(s.mean, sn, invWeight(b.ae, b.as));
  },
  ...Object.fromEntries(
    [3, 4, 6, 8, 12, 15, 20].map((k) => [
      `inverse MAE, seasonal and n >= ${k} m`,
      (s: Saved, sn: number[]) => {
        if (s.m <= 1 || s.windows.length === 0 || s.y.length < k * s.m) return s.mean;
        const b = backtest(s);
        return mix(s.mean, sn, invWeight(b.ae, b.as));
      },
    ]),
  ),
  ...Object.fromEntries(
    [3, 4, 6, 8, 12, 15, 20].map((k) => [
      `inverse MAE, n >= ${k} max(m, h)`,
      (s: Saved, sn: number[]) => {
        if (s.m <= 1 || s.windows.length === 0 || s.y.length < k * Math.max(s.m, s.h)) return s.mean;
        const b = backtest(s);
        return mix(s.mean, sn, invWeight(b.ae, b.as));
      },
    ]),
  ),
  'inverse MAE, seasonal, oldest origin >= 0.6 n': (s, sn) => {
    if (s.m <= 1 || s.windows.length === 0 || Math.min(...s.windows.map((w) => w.origin)) < 0.6 * s.y.length) return s.mean;
    const b = backtest(s);
    return mix(s.mean, sn, invWeight(b.ae, b.as));
  },
  'inverse MAE, seasonal, oldest origin >= 0.7 n': (s, sn) => {
    if (s.m <= 1 || s.windows.length === 0 || Math.min(...s.windows.map((w) => w.origin)) < 0.7 * s.y.length) return s.mean;
    const b = backtest(s);
    return mix(s.mean, sn, invWeight(b.ae, b.as));
  },
  'inverse MAE, seasonal, 3 windows': (s, sn) => {
    if (s.m <= 1 || s.windows.length < 3) return s.mean;
    const b = backtest(s);
    return mix(s.mean, sn, invWeight(b.ae, b.as));
  },
  ...Object.fromEntries(
    [1.5, 2, 3, 4, 6].map((q) => [
      `MAE^-${q} weights (seasonal)`,
      (s: Saved, sn: number[]) => {
        if (s.m <= 1 || s.windows.length === 0) return s.mean;
        const b = backtest(s);
        return mix(s.mean, sn, invWeight(b.ae ** q, b.as ** q));
      },
    ]),
  ),
  ...Object.fromEntries(
    [0.6, 0.65, 0.7, 0.75, 0.8, 0.85].flatMap((th) =>
      [1, 2].map((q) => [
        `MAE^-${q}, seasonal, oldest origin >= ${th} n`,
        (s: Saved, sn: number[]) => {
          if (s.m <= 1 || s.windows.length === 0 || Math.min(...s.windows.map((w) => w.origin)) < th * s.y.length) return s.mean;
          const b = backtest(s);
          return mix(s.mean, sn, invWeight(b.ae ** q, b.as ** q));
        },
      ]),
    ),
  ),
  ...Object.fromEntries(
    [0.8, 0.7, 0].flatMap((th) => [
      [
        `MSE-optimal weight in [0, 1], seasonal, oldest origin >= ${th} n`,
        (s: Saved, sn: number[]) => {
          if (s.m <= 1 || s.windows.length === 0 || Math.min(...s.windows.map((w) => w.origin)) < th * s.y.length) return s.mean;
          return mix(s.mean, sn, optimalWeight(s));
        },
      ],
      ...[4, 8].map((q) => [
        `MAE^-${q}, seasonal, oldest origin >= ${th} n`,
        (s: Saved, sn: number[]) => {
          if (s.m <= 1 || s.windows.length === 0 || Math.min(...s.windows.map((w) => w.origin)) < th * s.y.length) return s.mean;
          const b = backtest(s);
          return mix(s.mean, sn, invWeight(b.ae ** q, b.as ** q));
        },
      ]),
      [
        `MAE-optimal weight (grid), seasonal, oldest origin >= ${th} n`,
        (s: Saved, sn: number[]) => {
          if (s.m <= 1 || s.windows.length === 0 || Math.min(...s.windows.map((w) => w.origin)) < th * s.y.length) return s.mean;
          return mix(s.mean, sn, maeOptimalWeight(s));
        },
      ],
    ]),
  ),
  'SERVICE: MAE^-1, m >= 24, oldest origin >= 0.8 n': (s, sn) => {
    if (s.m < 24 || s.windows.length === 0 || Math.min(...s.windows.map((w) => w.origin)) < 0.8 * s.y.length) return s.mean;
    const b = backtest(s);
    return mix(s.mean, sn, invWeight(b.ae, b.as));
  },
  'SERVICE and h >= m': (s, sn) => {
    if (s.m < 24 || s.h < s.m || s.windows.length === 0 || Math.min(...s.windows.map((w) => w.origin)) < 0.8 * s.y.length) return s.mean;
    const b = backtest(s);
    return mix(s.mean, sn, invWeight(b.ae, b.as));
  },
  'SERVICE, only if snaive wins the pooled backtest': (s, sn) => {
    if (s.m < 24 || s.windows.length === 0 || Math.min(...s.windows.map((w) => w.origin)) < 0.8 * s.y.length) return s.mean;
    const b = backtest(s);
    return b.as < b.ae ? mix(s.mean, sn, invWeight(b.ae, b.as)) : s.mean;
  },
  'SERVICE, only if snaive is within 10% of the model': (s, sn) => {
    if (s.m < 24 || s.windows.length === 0 || Math.min(...s.windows.map((w) => w.origin)) < 0.8 * s.y.length) return s.mean;
    const b = backtest(s);
    return b.as < 1.1 * b.ae ? mix(s.mean, sn, invWeight(b.ae, b.as)) : s.mean;
  },
  'SERVICE, only if snaive is within 20% of the model': (s, sn) => {
    if (s.m < 24 || s.windows.length === 0 || Math.min(...s.windows.map((w) => w.origin)) < 0.8 * s.y.length) return s.mean;
    const b = backtest(s);
    return b.as < 1.2 * b.ae ? mix(s.mean, sn, invWeight(b.ae, b.as)) : s.mean;
  },
  'SERVICE, snaive weight scaled down linearly to 0 at MAE ratio 1.5': (s, sn) => {
    if (s.m < 24 || s.windows.length === 0 || Math.min(...s.windows.map((w) => w.origin)) < 0.8 * s.y.length) return s.mean;
    const b = backtest(s);
    const r = b.ae > 0 ? b.as / b.ae : 1;
    const ws = (1 - invWeight(b.ae, b.as)) * Math.max(0, Math.min(1, (1.5 - r) / 0.5));
    return mix(s.mean, sn, 1 - ws);
  },
  'inverse MAE squared, seasonal, snaive wins pooled': (s, sn) => {
    if (s.m <= 1 || s.windows.length === 0) return s.mean;
    const b = backtest(s);
    return b.as < b.ae ? mix(s.mean, sn, invWeight(b.ae ** 2, b.as ** 2)) : s.mean;
  },
};

const sets = [...new Set(all.map((s) => s.set))];
const header = `| rule | ${[...sets, 'all'].map((s) => `${s} sMAPE / MASE`).join(' | ')} | mean ETS weight (seasonal) |`;
console.log(`${all.length} series`);
console.log(header);
console.log(`|---|${[...sets, 'all'].map(() => '---').join('|')}|---|`);
for (const [name, rule] of Object.entries(rules)) {
  const cells: string[] = [];
  let wsum = 0;
  let wn = 0;
  for (const set of [...sets, 'all']) {
    const ss = all.filter((s) => set === 'all' || s.set === set);
    let sm = 0;
    let ma = 0;
    for (const s of ss) {
      const sn = snaive(s.y, s.h, s.m);
      const f = rule(s, sn);
      sm += smape(s.actual, f);
      ma += mase(s.y, s.actual, f, s.y.length > s.m ? s.m : 1);
      if (set === 'all' && s.m > 1) {
        const d = s.mean.reduce((q, v, i) => q + Math.abs(v - sn[i]!), 0);
        if (d > 0) {
          wsum += f.reduce((q, v, i) => q + Math.abs(v - sn[i]!), 0) / d;
          wn++;
        }
      }
    }
    cells.push(`${(sm / ss.length).toFixed(3)} / ${(ma / ss.length).toFixed(4)}`);
  }
  console.log(`| ${name} | ${cells.join(' | ')} | ${wn ? (wsum / wn).toFixed(2) : ''} |`);
}
