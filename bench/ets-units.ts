/**
 * AutoETS fitted in R's units against unit-free fitting (ADR 0030), point forecasts only: every
 * form of the search, combined with Akaike weights as the service does (without the interval
 * calibration), scored by sMAPE per M3 frequency on a subset.
 *   SHARED_DIR=/work/shared node bench/ets-units.ts --every 10 --offset 0
 */
import { parseArgs } from 'node:util';
import { akaikeWeights, type EtsUnits, etsForms, forecastEts } from '../src/engine/stats/ets.ts';
import { loadM3, smape } from './lib/m3.ts';

const { values } = parseArgs({ options: { every: { type: 'string', default: '10' }, offset: { type: 'string', default: '0' } } });
const every = Number(values.every);
const offset = Number(values.offset);
const series = loadM3().filter((_, i) => i % every === offset);

function forecast(y: number[], m: number, h: number, units: EtsUnits): number[] {
  const { fits } = etsForms(y, m, units);
  const w = akaikeWeights(fits.map((f) => f.aicc));
  const out = new Array<number>(h).fill(0);
  fits.forEach((f, k) => {
    const mu = forecastEts(f, h).mean;
    if (mu.every(Number.isFinite)) for (let i = 0; i < h; i++) out[i]! += w[k]! * mu[i]!;
  });
  return out;
}

const acc = new Map<string, { r: number; free: number; n: number }>();
for (const s of series) {
  const a = acc.get(s.frequency) ?? { r: 0, free: 0, n: 0 };
  a.r += smape(s.test, forecast(s.train, s.seasonality, s.horizon, 'r'));
  a.free += smape(s.test, forecast(s.train, s.seasonality, s.horizon, 'free'));
  a.n++;
  acc.set(s.frequency, a);
}
let r = 0;
let free = 0;
let n = 0;
console.log(`every ${every}, offset ${offset}: frequency, series, sMAPE in R's units, sMAPE unit-free`);
for (const [f, a] of acc) {
  console.log(f, a.n, (a.r / a.n).toFixed(2), (a.free / a.n).toFixed(2));
  r += a.r;
  free += a.free;
  n += a.n;
}
console.log('all', n, (r / n).toFixed(2), (free / n).toFixed(2));
