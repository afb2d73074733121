/**
 * Every ETS form on long hourly series, fitted once and saved, so that rules for combining or
 * choosing forms can be scored offline in seconds (bench/ets-forms-rules.ts).
 *
 * Cases: every column of ETTh1 and ETTh2 (shared/data/ett), a 1,000-point context ending at each
 * origin, horizon 48, season length 24. Two origin sets that share no test point: "design" (rows
 * 2,000 to 9,500, 1,500 apart, in the ETT training part) and "check" (rows 11,520 to 16,520, 1,000
 * apart, the part bench/ett-hourly.ts scores). For each case every form of `etsForms` on the context
 * (its AICc, its forecast mean and variance) and on the context without its last 48 points (the
 * holdout: its AICc and its forecast of those 48 points).
 *   SHARED_DIR=/work/shared node bench/ets-forms-hourly.ts --part 0/2 --out /tmp/forms-0.json
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { etsForms, etsName, forecastEts } from '../src/engine/stats/ets.ts';
import { readEttColumns } from './lib/ett.ts';

const { values } = parseArgs({ options: { part: { type: 'string', default: '0/1' }, out: { type: 'string' } } });
const [part, parts] = values.part!.split('/').map(Number) as [number, number];
const H = 48;
const M = 24;
const CONTEXT = 1000;
const sets: Record<string, number[]> = {
  design: [2000, 3500, 5000, 6500, 8000, 9500],
  check: [11520, 12520, 13520, 14520, 15520, 16520],
};

interface FormOut {
  model: string;
  aicc: number;
  mean: number[];
  sd: number[];
}
const out: unknown[] = [];
let k = 0;
for (const file of ['ETTh1.csv', 'ETTh2.csv']) {
  for (const col of readEttColumns(file)) {
    for (const [set, origins] of Object.entries(sets)) {
      for (const origin of origins) {
        if (k++ % parts !== part) continue;
        const context = col.values.slice(origin - CONTEXT, origin);
        const actual = col.values.slice(origin, origin + H);
        const t0 = performance.now();
        const forms = (y: number[]): FormOut[] =>
          etsForms(y, M).fits.map((f) => {
            const fc = forecastEts(f, H);
            return { model: etsName(f), aicc: f.aicc, mean: fc.mean, sd: fc.variance.map((v) => Math.sqrt(Math.max(0, v))) };
          });
        const full = forms(context);
        const holdout = forms(context.slice(0, CONTEXT - H));
        out.push({ id: `${col.name}@${origin}`, set, context, actual, full, holdout });
        console.log(`${col.name}@${origin} ${set} ${full.length} forms ${((performance.now() - t0) / 1000).toFixed(1)} s`);
      }
    }
  }
}
writeFileSync(values.out ?? `/tmp/ets-forms-${part}.json`, JSON.stringify(out));
