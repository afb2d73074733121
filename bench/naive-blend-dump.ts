/**
 * A model's own forecast and its calibration backtests, saved once so that rules for blending it
 * with seasonal naive (ADR 0029) can be scored offline (bench/naive-blend-rules.ts). For each series:
 * the model's fitter's forecast (without calibration or blend) and the forecasts of its refits at
 * the calibration's origins (calibrationOrigins with calibrationOptions, as
 * src/engine/models/common.ts plans them). Data: all of M3 (official horizons), or ETTh1/ETTh2,
 * every column, 1,000-point contexts, horizon 48, season 24, at "design" origins (rows 2,000-9,500)
 * and "check" origins (rows 11,520-16,520, those of bench/ett-hourly.ts --origins 6).
 *   SHARED_DIR=/work/shared node bench/naive-blend-dump.ts --model auto-ets --data m3 --part 0/2 --out /tmp/bt-m3-0.json
 *   SHARED_DIR=/work/shared node bench/naive-blend-dump.ts --model theta --data ett --out /tmp/bt-ett-theta.json
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { calibrationOptions } from '../src/engine/models/common.ts';
import { arimaForecast } from '../src/engine/models/arima.ts';
import { etsForecast } from '../src/engine/models/ets.ts';
import { mstlForecast } from '../src/engine/models/mstl.ts';
import { thetaForecast } from '../src/engine/models/theta.ts';
import { calibrationOrigins } from '../src/engine/stats/calibrate.ts';
import { readEttColumns } from './lib/ett.ts';
import { loadM3 } from './lib/m3.ts';
import type { BlendSaved, BlendSeries } from './lib/naive-blend.ts';

const { values } = parseArgs({
  options: {
    model: { type: 'string', default: 'auto-ets' },
    data: { type: 'string', default: 'm3' },
    freq: { type: 'string' },
    horizon: { type: 'string' },
    season: { type: 'string' },
    context: { type: 'string' },
    part: { type: 'string', default: '0/1' },
    out: { type: 'string' },
  },
});
const [part, parts] = values.part!.split('/').map(Number) as [number, number];

const series: BlendSeries[] = [];
if (values.data === 'm3') {
  // --freq monthly --horizon 6: one frequency, a shorter horizon than the official (the test's first steps).
  for (const s of loadM3()) {
    if (values.freq && s.frequency !== values.freq) continue;
    const h = values.horizon ? Math.min(Number(values.horizon), s.horizon) : s.horizon;
    series.push({ id: s.id, set: s.frequency, m: s.seasonality, h, y: s.train, actual: s.test.slice(0, h) });
  }
} else {
  const origins: Record<string, number[]> = { design: [2000, 3500, 5000, 6500, 8000, 9500], check: [11520, 12520, 13520, 14520, 15520, 16520] };
  for (const file of ['ETTh1.csv', 'ETTh2.csv']) {
    for (const col of readEttColumns(file)) {
      for (const [set, os] of Object.entries(origins)) {
        // --season 168 --horizon 168 --context 2000: the weekly profile of hourly data.
        const h = values.horizon ? Number(values.horizon) : 48;
        const m = values.season ? Number(values.season) : 24;
        const n = values.context ? Number(values.context) : 1000;
        for (const o of os) {
          if (o - n < 0 || o + h > col.values.length) continue;
          series.push({ id: `${col.name}@${o}`, set, m, h, y: col.values.slice(o - n, o), actual: col.values.slice(o, o + h) });
        }
      }
    }
  }
}
const fitters = {
  'auto-ets': etsForecast,
  theta: (y: readonly number[], ctx: { horizon: number; seasonLength: number }) => thetaForecast(y, ctx),
  mstl: mstlForecast,
  'auto-arima': arimaForecast,
};
const fitter = fitters[values.model as keyof typeof fitters];
if (!fitter) throw new Error(`--model: one of ${Object.keys(fitters).join(', ')}`);
const minPoints = { 'auto-ets': 4, theta: 4, mstl: 4, 'auto-arima': 4 }[values.model as keyof typeof fitters];
const out: BlendSaved[] = [];
const t0 = performance.now();
series.forEach((s, k) => {
  if (k % parts !== part) return;
  const fc = fitter(s.y, { horizon: s.h, seasonLength: s.m });
  const windows: { origin: number; mean: number[] }[] = [];
  for (const o of calibrationOrigins(s.y.length, s.h, calibrationOptions(minPoints, s.m))) {
    const h = Math.min(s.h, s.y.length - o);
    try {
      const r = (fc.refit ?? ((train: number[], steps: number) => fitter(train, { horizon: steps, seasonLength: s.m })))(s.y.slice(0, o), h);
      windows.push({ origin: o, mean: r.mean });
    } catch {
      // a refit that fails is left out, as the calibration leaves it out
    }
  }
  out.push({ ...s, mean: fc.mean, windows });
  if (out.length % 100 === 0) console.log(`${out.length} series, ${((performance.now() - t0) / 1000).toFixed(0)} s`);
});
writeFileSync(values.out ?? `/tmp/bt-${values.data}-${part}.json`, JSON.stringify(out));
console.log(`done: ${out.length} series, ${((performance.now() - t0) / 1000).toFixed(0)} s`);
