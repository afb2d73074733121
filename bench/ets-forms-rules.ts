/**
 * Rules for combining or choosing ETS forms, scored offline on the forms bench/ets-forms-hourly.ts
 * saved. MASE scaled by the context's in-sample seasonal-naive error (season 24); the mean, the
 * median and the geometric mean of the ratio to seasonal naive's MASE, per origin set.
 *   node bench/ets-forms-rules.ts /tmp/ets-forms-0.json /tmp/ets-forms-1.json
 */
import { readFileSync } from 'node:fs';

interface Form {
  model: string;
  aicc: number;
  mean: number[];
  sd: number[];
}
interface Case {
  id: string;
  set: string;
  context: number[];
  actual: number[];
  full: Form[];
  holdout: Form[];
}
const cases: Case[] = process.argv.slice(2).flatMap((f) => JSON.parse(readFileSync(f, 'utf8')) as Case[]);
const H = 48;
const M = 24;

function akaike(forms: Form[], keep = 0.99, temp = 1): { form: Form; w: number }[] {
  const best = Math.min(...forms.map((f) => f.aicc));
  const raw = forms.map((f) => ({ form: f, w: Math.exp((-0.5 * (f.aicc - best)) / temp) }));
  const tot = raw.reduce((s, r) => s + r.w, 0);
  raw.forEach((r) => {
    r.w /= tot;
  });
  raw.sort((a, b) => b.w - a.w);
  const kept: typeof raw = [];
  let c = 0;
  for (const r of raw) {
    kept.push(r);
    c += r.w;
    if (c >= keep) break;
  }
  return kept.map((r) => ({ form: r.form, w: r.w / c }));
}
const blend = (ws: { form: Form; w: number }[]): number[] => Array.from({ length: H }, (_, i) => ws.reduce((s, r) => s + r.w * r.form.mean[i]!, 0));
const mae = (a: readonly number[], f: readonly number[]): number => a.reduce((s, y, i) => s + Math.abs(y - f[i]!), 0) / a.length;
function snaive(y: readonly number[], h: number): number[] {
  return Array.from({ length: h }, (_, i) => y[y.length - M + (i % M)]!);
}
function scaleOf(y: readonly number[]): number {
  let s = 0;
  for (let t = M; t < y.length; t++) s += Math.abs(y[t]! - y[t - M]!);
  return s / (y.length - M);
}
const isTrend = (f: Form): boolean => /^ETS\([AM],Ad?,/.test(f.model);
const isUndampedTrend = (f: Form): boolean => /^ETS\([AM],A,[NAM]\)$/.test(f.model);
const holdoutErr = (c: Case, name: string): number => {
  const f = c.holdout.find((x) => x.model === name);
  return f ? mae(c.context.slice(-H), f.mean) : Number.POSITIVE_INFINITY;
};

type Rule = (c: Case) => number[];
const rules: Record<string, Rule> = {
  'seasonal naive': (c) => snaive(c.context, H),
  'R: lowest AICc': (c) => akaike(c.full, 0)[0]!.form.mean,
  'Akaike weights (today)': (c) => blend(akaike(c.full)),
  'Akaike, damped or no trend': (c) => blend(akaike(c.full.filter((f) => !isUndampedTrend(f)))),
  'Akaike, no trend at all': (c) => blend(akaike(c.full.filter((f) => !isTrend(f)))),
  'equal mean of all forms': (c) => blend(c.full.map((f) => ({ form: f, w: 1 / c.full.length }))),
  'form with the best holdout MAE': (c) => {
    let best = c.full[0]!;
    for (const f of c.full) if (holdoutErr(c, f.model) < holdoutErr(c, best.model)) best = f;
    return best.mean;
  },
  'Akaike of forms beating snaive on holdout (else snaive)': (c) => {
    const sn = mae(c.context.slice(-H), snaive(c.context.slice(0, -H), H));
    const ok = c.full.filter((f) => holdoutErr(c, f.model) <= sn);
    return ok.length ? blend(akaike(ok)) : snaive(c.context, H);
  },
  'Akaike; snaive if the Akaike blend loses to it on holdout': (c) => {
    const sn = mae(c.context.slice(-H), snaive(c.context.slice(0, -H), H));
    const hb = mae(c.context.slice(-H), blend(akaike(c.holdout)));
    return hb <= sn ? blend(akaike(c.full)) : snaive(c.context, H);
  },
  'half Akaike, half snaive': (c) => {
    const a = blend(akaike(c.full));
    const s = snaive(c.context, H);
    return a.map((v, i) => 0.5 * v + 0.5 * s[i]!);
  },
  'Akaike; half snaive if the blend loses to snaive on holdout': (c) => {
    const sn = mae(c.context.slice(-H), snaive(c.context.slice(0, -H), H));
    const hb = mae(c.context.slice(-H), blend(akaike(c.holdout)));
    const a = blend(akaike(c.full));
    const s = snaive(c.context, H);
    return hb <= sn ? a : a.map((v, i) => 0.5 * v + 0.5 * s[i]!);
  },
  'inverse-holdout-MAE blend of Akaike and snaive': (c) => {
    const sn = mae(c.context.slice(-H), snaive(c.context.slice(0, -H), H));
    const hb = mae(c.context.slice(-H), blend(akaike(c.holdout)));
    const a = blend(akaike(c.full));
    const s = snaive(c.context, H);
    const wa = 1 / Math.max(hb, 1e-12) / (1 / Math.max(hb, 1e-12) + 1 / Math.max(sn, 1e-12));
    return a.map((v, i) => wa * v + (1 - wa) * s[i]!);
  },
  'Akaike temp 10': (c) => blend(akaike(c.full, 0.99, 10)),
  'Akaike temp 100': (c) => blend(akaike(c.full, 0.99, 100)),
  'inverse holdout MAE over all forms': (c) => {
    const ws = c.full.map((f) => ({ form: f, w: 1 / Math.max(1e-12, holdoutErr(c, f.model)) }));
    const t = ws.reduce((s, r) => s + r.w, 0);
    return blend(ws.map((r) => ({ form: r.form, w: r.w / t })));
  },
};

const sets = ['design', 'check', 'all'];
console.log(`${cases.length} cases`);
const rows: string[] = [];
for (const [name, rule] of Object.entries(rules)) {
  const parts: string[] = [];
  for (const set of sets) {
    const cs = cases.filter((c) => set === 'all' || c.set === set);
    const mases: number[] = [];
    const ratios: number[] = [];
    for (const c of cs) {
      const sc = scaleOf(c.context);
      const m = mae(c.actual, rule(c)) / sc;
      const s = mae(c.actual, snaive(c.context, H)) / sc;
      mases.push(m);
      if (s > 0 && m > 0) ratios.push(Math.log(m / s));
    }
    const mean = mases.reduce((a, b) => a + b, 0) / mases.length;
    const med = mases.slice().sort((a, b) => a - b)[Math.floor(mases.length / 2)]!;
    const gm = Math.exp(ratios.reduce((a, b) => a + b, 0) / ratios.length);
    parts.push(`${mean.toFixed(3)} / ${med.toFixed(3)} / ${gm.toFixed(3)}`);
  }
  rows.push(`| ${name} | ${parts.join(' | ')} |`);
}
console.log(`| rule | ${sets.map((s) => `${s}: MASE mean / median / geo-mean ratio to snaive`).join(' | ')} |`);
console.log(`|---|${sets.map(() => '---').join('|')}|`);
console.log(rows.join('\n'));
