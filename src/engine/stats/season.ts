import { augurs } from './wasm.ts';

/** Sample autocorrelations at lags 1..maxLag (demeaned, denominator n, as R's acf). */
export function acf(y: readonly number[], maxLag: number): number[] {
  const n = y.length;
  const mean = y.reduce((s, v) => s + v, 0) / n;
  let c0 = 0;
  for (const v of y) c0 += (v - mean) ** 2;
  const out: number[] = [];
  for (let k = 1; k <= maxLag; k++) {
    let c = 0;
    for (let t = k; t < n; t++) c += (y[t]! - mean) * (y[t - k]! - mean);
    out.push(c0 > 0 ? c / c0 : 0);
  }
  return out;
}

/**
 * The seasonality test of R's forecast::thetaf (and statsforecast's Theta models): lag-m
 * autocorrelation significant at the 90% level (one-sided 1.645) against Bartlett's standard
 * error. Only attempted when there are more than two full seasons.
 */
export function isSeasonal(y: readonly number[], m: number): boolean {
  const n = y.length;
  if (m <= 1 || n <= 2 * m) return false;
  if (y.every((v) => v === y[0])) return false;
  const r = acf(y, m);
  let sum = 0;
  for (let i = 0; i < m - 1; i++) sum += r[i]! ** 2;
  const stat = Math.sqrt((1 + 2 * sum) / n);
  return Math.abs(r[m - 1]!) / stat > 1.6448536269514722;
}

export type DecompositionType = 'multiplicative' | 'additive';

/**
 * Classical decomposition as R's `decompose`: centred moving-average trend, seasonal figure as
 * the per-position mean of the detrended series, normalised to mean 1 (multiplicative) or 0
 * (additive). Returns the seasonal index for time t (0 = first observation) as figure[t % m].
 */
export function seasonalFigure(y: readonly number[], m: number, type: DecompositionType): number[] {
  const n = y.length;
  const weights = m % 2 === 0 ? [0.5, ...new Array<number>(m - 1).fill(1), 0.5].map((w) => w / m) : new Array<number>(m).fill(1 / m);
  const half = Math.floor(weights.length / 2);
  const sums = new Array<number>(m).fill(0);
  const counts = new Array<number>(m).fill(0);
  for (let t = half; t < n - half; t++) {
    let trend = 0;
    for (let j = 0; j < weights.length; j++) trend += weights[j]! * y[t - half + j]!;
    const detrended = type === 'multiplicative' ? y[t]! / trend : y[t]! - trend;
    if (!Number.isFinite(detrended)) continue;
    sums[t % m]! += detrended;
    counts[t % m]! += 1;
  }
  const figure = sums.map((s, i) => (counts[i]! > 0 ? s / counts[i]! : type === 'multiplicative' ? 1 : 0));
  const mean = figure.reduce((s, v) => s + v, 0) / m;
  return figure.map((v) => (type === 'multiplicative' ? v / mean : v - mean));
}

export interface Deseasonalised {
  adjusted: number[];
  /** Seasonal index for 0-based time t (t >= n for forecasts). */
  index(t: number): number;
  type: DecompositionType | 'none';
  /** Puts the season back on a forecast value (or an sd, for the multiplicative case). */
  reseasonalise(value: number, t: number): number;
  scaleSd(sd: number, t: number): number;
}

/**
 * Seasonal adjustment used by theta, auto-ets and the combination (the M3/M4 benchmark
 * recipe): when the test above finds seasonality, a classical multiplicative decomposition
 * (additive when the data has zero or negative values) is removed before fitting and put back
 * on the forecasts.
 */
export function deseasonalise(y: readonly number[], m: number): Deseasonalised {
  if (!isSeasonal(y, m)) {
    return { adjusted: y.slice(), index: () => 1, type: 'none', reseasonalise: (v) => v, scaleSd: (sd) => sd };
  }
  let type: DecompositionType = y.every((v) => v > 0) ? 'multiplicative' : 'additive';
  let figure = seasonalFigure(y, m, type);
  // A near-zero multiplicative index would blow the adjusted series up (statsforecast's guard).
  if (type === 'multiplicative' && figure.some((v) => v < 0.01)) {
    type = 'additive';
    figure = seasonalFigure(y, m, type);
  }
  const index = (t: number): number => figure[t % m]!;
  if (type === 'multiplicative') {
    return {
      adjusted: y.map((v, t) => v / index(t)),
      index,
      type,
      reseasonalise: (v, t) => v * index(t),
      scaleSd: (sd, t) => sd * index(t),
    };
  }
  return { adjusted: y.map((v, t) => v - index(t)), index, type, reseasonalise: (v, t) => v + index(t), scaleSd: (sd) => sd };
}

/**
 * Season length detection when the request gives no frequency: candidate periods come from
 * augurs' periodogram detector and from the local peaks of the autocorrelation function of the
 * first differences (differencing removes a trend that would otherwise dominate every lag);
 * a candidate must pass `isSeasonal` (so the series holds more than two seasons); the one with
 * the largest autocorrelation wins. Returns 1 (non-seasonal) when none qualifies.
 */
export function detectSeasonLength(y: readonly number[]): number {
  return detectSeasonLengths(y)[0] ?? 1;
}

/** Up to this maximum lag, `periodogramCouldAdd` is cheaper than the periodogram (O(n · maxLag²), n ≤ 27). */
const PERIODOGRAM_ALWAYS_ABOVE_LAG = 12;

/** Whether a period the ACF did not propose could pass detectSeasonLengths' filter. */
function periodogramCouldAdd(diff: readonly number[], maxLag: number, candidates: ReadonlySet<number>): boolean {
  for (let m = 2; m <= maxLag; m++) if (!candidates.has(m) && isSeasonal(diff, m)) return true;
  return false;
}

/** Every qualifying period, strongest first (MSTL uses several). */
export function detectSeasonLengths(y: readonly number[]): number[] {
  const n = y.length;
  if (n < 8) return [];
  const diff = y.slice(1).map((v, i) => v - y[i]!);
  const maxLag = Math.min(Math.floor((n - 1) / 2) - 1, 400);
  if (maxLag < 2) return [];
  const r = acf(diff, maxLag);
  const candidates = new Set<number>();
  for (let k = 2; k < maxLag; k++) {
    const here = r[k - 1]!;
    if (here > 0 && here >= r[k - 2]! && here >= r[k]!) candidates.add(k);
  }
  // The periodogram can only add a period that passes the filter below: an integer in [2, maxLag]
  // passing isSeasonal. On a short series, when no such period is missing from the candidates,
  // its answer cannot change the result, and the call into WebAssembly is skipped (ADR 0023).
  if (maxLag > PERIODOGRAM_ALWAYS_ABOVE_LAG || periodogramCouldAdd(diff, maxLag, candidates)) {
    try {
      for (const p of augurs().seasons.seasonalities(Float64Array.from(y), null)) candidates.add(p);
    } catch {
      // The periodogram detector is a second opinion; the ACF candidates stand on their own.
    }
  }
  const passing = [...candidates].filter((m) => m >= 2 && m <= maxLag && isSeasonal(diff, m));
  const strength = (m: number): number => r[m - 1]!;
  // A multiple of a period that is nearly as strong is an echo of it (24 after 12), not news;
  // a multiple that is clearly stronger is a season of its own (168 after 24 in hourly data).
  const kept = passing.filter((m) => !passing.some((k) => k < m && m % k === 0 && strength(k) >= 0.8 * strength(m))).sort((a, b) => strength(b) - strength(a));
  return kept;
}
