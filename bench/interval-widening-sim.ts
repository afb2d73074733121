/**
 * The widening a calibration factor needs when it comes from few backtest windows (ADR 0027), under
 * the log-normal model of stats/calibrate.ts `effectiveOrigins`: each window's |z| are half-normal
 * times the window's scale exp(sigma u), the u of the windows and of the test window (H after the
 * newest origin) jointly Gaussian with correlation max(0, 1 - |distance| / H). The factor is the
 * service's (conformal Q0.8 of the pooled |z| / 1.2816); for each layout of origins the widening that
 * brings the test window's coverage to 80% is found by bisection.
 *   nice -n 19 node bench/interval-widening-sim.ts [sigma ...]      # default 0.45 0.64
 * Prints one line per horizon and sigma; writes nothing.
 */
import { conformalQuantile, effectiveOrigins } from '../src/engine/stats/calibrate.ts';
import { gaussian, mulberry32 } from '../src/engine/stats/prng.ts';
import { qnorm } from '../src/engine/stats/normal.ts';

const Z80 = qnorm(0.9);
const draw = gaussian(mulberry32(7));

function cholesky(a: number[][]): number[][] {
  const n = a.length;
  const l = a.map(() => new Array<number>(n).fill(0));
  for (let i = 0; i < n; i++) {
    for (let j = 0; j <= i; j++) {
      let s = a[i]![j]!;
      for (let k = 0; k < j; k++) s -= l[i]![k]! * l[j]![k]!;
      l[i]![j] = i === j ? Math.sqrt(Math.max(s, 1e-12)) : s / l[j]![j]!;
    }
  }
  return l;
}

/** Coverage of the test window's 80% interval at `widening` times the factor; `offsets`: origins' distances before the newest. */
function coverage(offsets: readonly number[], h: number, sigma: number, widening: number, reps: number): number {
  const at = [...offsets.map((d) => -d), h];
  const l = cholesky(at.map((a) => at.map((b) => Math.max(0, 1 - Math.abs(a - b) / h))));
  let inside = 0;
  let count = 0;
  for (let r = 0; r < reps; r++) {
    const e = at.map(() => draw());
    const u = l.map((row) => row.reduce((s, v, k) => s + v * e[k]!, 0));
    const z: number[] = [];
    for (let j = 0; j < offsets.length; j++) {
      const scale = Math.exp(sigma * u[j]!);
      for (let t = 0; t < h; t++) z.push(Math.abs(draw()) * scale);
    }
    z.sort((a, b) => a - b);
    const bound = (conformalQuantile(z, 0.8) / Z80) * widening * Z80;
    const scale = Math.exp(sigma * u[offsets.length]!);
    for (let t = 0; t < h; t++) {
      if (Math.abs(draw()) * scale <= bound) inside++;
      count++;
    }
  }
  return inside / count;
}

function needed(offsets: readonly number[], h: number, sigma: number): number {
  let lo = 0.9;
  let hi = 2;
  for (let it = 0; it < 12; it++) {
    const mid = (lo + hi) / 2;
    if (coverage(offsets, h, sigma, mid, 12000) < 0.8) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

const sigmas = process.argv.slice(2).map(Number);
for (const sigma of sigmas.length > 0 ? sigmas : [0.45, 0.64]) {
  for (const h of [6, 8, 18]) {
    const s = Math.ceil(h / 2);
    const layouts = [[0], [0, 1], [0, s], [0, h], [0, s, 2 * s], [0, s, 2 * s, 3 * s, 4 * s], [0, h, 2 * h]];
    const cells = layouts.map((o) => {
      const jEff = effectiveOrigins(
        o.map((d) => 100 - d),
        h,
      );
      return `[${o.join(',')}] J_eff ${jEff.toFixed(2)}: x${needed(o, h, sigma).toFixed(3)}`;
    });
    console.log(`sigma ${sigma}, H ${h}: ${cells.join(' | ')}`);
  }
}
