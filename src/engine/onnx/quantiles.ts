import { mulberry32 } from '../stats/prng.ts';
import { EngineError } from '../types.ts';

const EPS = 1e-9;

/** Refuses requested levels outside the graph's range: they cannot be read off the graph. */
export function checkLevels(graphLevels: readonly number[], requested: readonly number[], modelId: string): void {
  const lo = graphLevels[0] ?? 0.5;
  const hi = graphLevels[graphLevels.length - 1] ?? 0.5;
  const outside = requested.filter((q) => q < lo - EPS || q > hi + EPS);
  if (outside.length > 0) {
    throw new EngineError(
      'bad_input',
      `${modelId} gives quantiles between ${lo} and ${hi} only; level(s) ${outside.join(', ')} are outside that range`,
      undefined,
      'quantile_levels',
    );
  }
}

/**
 * The value at level `q` of a quantile function known at ascending `levels` with ascending
 * `values`: linear interpolation between neighbouring levels, the edge value outside them.
 */
export function valueAtLevel(levels: ArrayLike<number>, values: ArrayLike<number>, q: number): number {
  const n = levels.length;
  if (n === 0) return NaN;
  if (q <= (levels[0] ?? 0)) return values[0] ?? NaN;
  if (q >= (levels[n - 1] ?? 1)) return values[n - 1] ?? NaN;
  let lo = 0;
  let hi = n - 1;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if ((levels[mid] ?? 0) <= q) lo = mid;
    else hi = mid;
  }
  const l0 = levels[lo] ?? 0;
  const l1 = levels[hi] ?? 1;
  const v0 = values[lo] ?? NaN;
  const v1 = values[hi] ?? NaN;
  return l1 === l0 ? v0 : v0 + ((v1 - v0) * (q - l0)) / (l1 - l0);
}

/** Deterministic uniform numbers in [0, 1) (mulberry32): the same seed, the same samples. */
export const uniformStream = mulberry32;

/**
 * Sample paths from per-step quantile functions: each path draws one level u ~ U(0, 1) and
 * takes every step's value at u (so each step's marginal follows the model's quantiles, and
 * a path is a coherent "u-quantile" trajectory). Levels beyond the known range take the
 * edge value: the tails past the outermost level are not represented.
 */
export function samplePaths(
  stepLevels: (h: number) => ArrayLike<number>,
  stepValues: (h: number) => ArrayLike<number>,
  horizon: number,
  numSamples: number,
  seed: number,
): number[][] {
  const next = uniformStream(seed);
  const paths: number[][] = [];
  for (let s = 0; s < numSamples; s++) {
    const u = next();
    const path = new Array<number>(horizon);
    for (let h = 0; h < horizon; h++) path[h] = valueAtLevel(stepLevels(h), stepValues(h), u);
    paths.push(path);
  }
  return paths;
}

/** Sorts a short array ascending in place (insertion sort: faster than TypedArray#sort at 5–21 values). */
export function sortSmall(a: Float32Array): Float32Array {
  for (let i = 1; i < a.length; i++) {
    const v = a[i] ?? NaN;
    let j = i - 1;
    while (j >= 0 && (a[j] ?? NaN) > v) {
      a[j + 1] = a[j] ?? NaN;
      j--;
    }
    a[j + 1] = v;
  }
  return a;
}
