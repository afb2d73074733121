import { nelderMead } from './optim.ts';
import { timeLine } from './regression.ts';

/**
 * Complex exponential smoothing (CES) of Svetunkov, Kourentzes & Ord (2022), "Complex exponential
 * smoothing", Naval Research Logistics 69:1108, as R's smooth::ces / auto.ces (v4, the ADAM engine)
 * fits it: a level l and an "information potential" c smoothed together by one complex parameter
 * a0 + i a1, which lets the model move between a level and a trend without choosing one:
 *   y_t = l_{t-1} + e_t
 *   l_t = l_{t-1} + (a1 - 1) c_{t-1} + (a0 - a1) e_t
 *   c_t = l_{t-1} + (1 - a0) c_{t-1} + (a0 + a1) e_t
 * Seasonal forms: "simple" (the same pair on lag m), "partial" (the pair plus an additive season with
 * a real parameter b), "full" (a second complex pair on lag m, parameter b0 + i b1).
 *
 * Ported from smooth's R code (R/adam-ces.R, creator/filler/initialiser/CF) and its C++ fitter
 * (src/headers/adamCore.h: fit with backcasting, two iterations, head refinement): the initial
 * states come from backcasting, so only the 2 to 4 smoothing parameters are optimised, whatever
 * the season length. R optimises with nloptr's BOBYQA then Nelder-Mead from the same start; this
 * port uses Nelder-Mead twice (stats/optim.ts). The admissibility bound (every eigenvalue of
 * F - g w' within the unit circle, per lag group) is smooth's default. No JavaScript library offers
 * CES, so it is written here.
 */
export type CesSeasonality = 'none' | 'simple' | 'partial' | 'full';

export const CES_FORMS: readonly CesSeasonality[] = ['none', 'simple', 'partial', 'full'];

interface Structure {
  /** Lag of each state component. */
  lags: number[];
  /** Measurement vector. */
  w: number[];
  /** Transition matrix (row-major) and persistence vector for parameters B. */
  fill(B: readonly number[]): { F: number[][]; g: number[] };
  /** 2x2 or 1x1 blocks of F - g w' whose eigenvalues must lie in the unit circle. */
  blocks(B: readonly number[]): number[][][];
  start: number[];
}

/** The complex pair's transition block and persistence for a0 + i a1. */
function pair(a0: number, a1: number): { F: number[][]; g: number[] } {
  return {
    F: [
      [1, a1 - 1],
      [1, 1 - a0],
    ],
    g: [a0 - a1, a0 + a1],
  };
}

/** F - g w' for the pair with w = (1, 0). */
function pairDiscount(a0: number, a1: number): number[][] {
  return [
    [1 - (a0 - a1), a1 - 1],
    [1 - (a0 + a1), 1 - a0],
  ];
}

function structure(form: CesSeasonality, m: number): Structure {
  switch (form) {
    case 'none':
    case 'simple': {
      const lag = form === 'none' ? 1 : m;
      return {
        lags: [lag, lag],
        w: [1, 0],
        fill: (B) => pair(B[0]!, B[1]!),
        blocks: (B) => [pairDiscount(B[0]!, B[1]!)],
        start: [1.3, 1],
      };
    }
    case 'partial':
      return {
        lags: [1, 1, m],
        w: [1, 0, 1],
        fill: (B) => {
          const p = pair(B[0]!, B[1]!);
          return {
            F: [
              [...p.F[0]!, 0],
              [...p.F[1]!, 0],
              [0, 0, 1],
            ],
            g: [...p.g, B[2]!],
          };
        },
        blocks: (B) => [pairDiscount(B[0]!, B[1]!), [[1 - B[2]!]]],
        start: [1.3, 1, 0.1],
      };
    case 'full':
      return {
        lags: [1, 1, m, m],
        w: [1, 0, 1, 0],
        fill: (B) => {
          const a = pair(B[0]!, B[1]!);
          const b = pair(B[2]!, B[3]!);
          return {
            F: [
              [...a.F[0]!, 0, 0],
              [...a.F[1]!, 0, 0],
              [0, 0, ...b.F[0]!],
              [0, 0, ...b.F[1]!],
            ],
            g: [...a.g, ...b.g],
          };
        },
        blocks: (B) => [pairDiscount(B[0]!, B[1]!), pairDiscount(B[2]!, B[3]!)],
        start: [1.3, 1, 1.3, 1],
      };
  }
}

/** Largest eigenvalue modulus of a 1x1 or 2x2 real matrix. */
export function spectralRadius(M: readonly (readonly number[])[]): number {
  if (M.length === 1) return Math.abs(M[0]![0]!);
  const [p, q] = M[0] as [number, number];
  const [r, s] = M[1] as [number, number];
  const tr = p + s;
  const det = p * s - q * r;
  const disc = tr * tr - 4 * det;
  if (disc < 0) return Math.sqrt(det); // complex pair: |lambda|^2 = det
  const root = Math.sqrt(disc);
  return Math.max(Math.abs((tr + root) / 2), Math.abs((tr - root) / 2));
}

/**
 * smooth's msdecompose(y, m, "additive", smoother = "global") seasonal figure: the per-position
 * mean of y minus its least-squares line, centred on zero.
 */
export function globalSeason(y: readonly number[], m: number): number[] {
  const n = y.length;
  const { intercept, slope } = timeLine(y);
  const sums = new Array<number>(m).fill(0);
  const counts = new Array<number>(m).fill(0);
  for (let t = 0; t < n; t++) {
    sums[t % m]! += y[t]! - (intercept + slope * (t + 1));
    counts[t % m]! += 1;
  }
  const figure = sums.map((s, j) => (counts[j]! > 0 ? s / counts[j]! : 0));
  const centre = figure.reduce((s, v) => s + v, 0) / m;
  return figure.map((v) => v - centre);
}

/**
 * The initial states before backcasting (smooth's creator): the level the mean of the first season
 * (of the first max(10, m) points without one), the potential the level / 1.1; the season from a
 * classical additive decomposition; the simple form starts from the first season's values.
 */
function initialProfiles(y: readonly number[], form: CesSeasonality, m: number): number[][] {
  const mean = (k: number): number => {
    let s = 0;
    for (let t = 0; t < k; t++) s += y[t]!;
    return s / k;
  };
  if (form === 'none') {
    const l = mean(Math.min(Math.max(10, m), y.length));
    return [[l], [l / 1.1]];
  }
  if (form === 'simple') {
    const first = y.slice(0, m);
    return [first, first.map((v) => v / 1.1)];
  }
  const l = mean(m);
  const season = globalSeason(y, m);
  const rows = [[l], [l / 1.1], season.slice()];
  if (form === 'full') rows.push(season.map((v) => v / 1.1));
  return rows;
}

export interface CesFilter {
  fitted: Float64Array;
  errors: Float64Array;
  /** The states after the last observation, one ring per component (position t % lag). */
  profiles: Float64Array[];
  sse: number;
}

/**
 * smooth's fitter with backcasting (nIterations 2, refineHead): forward pass, the same recursion
 * run backwards over the data, F applied once per head position, then the forward pass whose
 * errors are the fit's.
 */
export function cesFilter(
  y: readonly number[],
  lags: readonly number[],
  w: readonly number[],
  F: readonly (readonly number[])[],
  g: readonly number[],
  init: readonly (readonly number[])[],
): CesFilter {
  const K = lags.length;
  const n = y.length;
  const lagMax = Math.max(...lags);
  const prof = lags.map((L, j) => {
    const ring = new Float64Array(L);
    for (let p = 0; p < L; p++) ring[p] = init[j]![p] ?? init[j]![0]!;
    return ring;
  });
  const v = new Float64Array(K);
  const fitted = new Float64Array(n);
  const errors = new Float64Array(n);
  const step = (t: number, record: boolean): void => {
    let yhat = 0;
    for (let j = 0; j < K; j++) {
      v[j] = prof[j]![t % lags[j]!]!;
      yhat += w[j]! * v[j]!;
    }
    const e = y[t]! - yhat;
    if (record) {
      fitted[t] = yhat;
      errors[t] = e;
    }
    for (let j = 0; j < K; j++) {
      const row = F[j]!;
      let s = g[j]! * e;
      for (let k = 0; k < K; k++) s += row[k]! * v[k]!;
      prof[j]![t % lags[j]!] = s;
    }
  };
  for (let t = 0; t < n; t++) step(t, false);
  for (let t = n - 1; t >= 0; t--) step(t, false);
  for (let i = lagMax - 1; i >= 0; i--) {
    for (let j = 0; j < K; j++) v[j] = prof[j]![i % lags[j]!]!;
    for (let j = 0; j < K; j++) {
      const row = F[j]!;
      let s = 0;
      for (let k = 0; k < K; k++) s += row[k]! * v[k]!;
      prof[j]![i % lags[j]!] = s;
    }
  }
  let sse = 0;
  for (let t = 0; t < n; t++) {
    step(t, true);
    sse += errors[t]! ** 2;
  }
  return { fitted, errors, profiles: prof, sse };
}

const LN_SQRT_2PI = 0.5 * Math.log(2 * Math.PI);

/** Negative Gaussian log-likelihood at the ML scale sqrt(SSE / n) (smooth's CF for loss "likelihood"). */
function negLogLik(sse: number, n: number): number {
  const scale = Math.sqrt(sse / n);
  return n * (LN_SQRT_2PI + 0.5 + Math.log(scale));
}

export interface CesFit {
  form: CesSeasonality;
  m: number;
  /** a0, a1 (then b for partial, b0, b1 for full). */
  B: number[];
  lags: number[];
  w: number[];
  F: number[][];
  g: number[];
  negLogLik: number;
  /** Parameters counted by the information criteria: B and the scale. */
  k: number;
  aicc: number;
  /** The one-step error variance SSE / (n - k), the forecast variances' scale. */
  sigma2: number;
  fitted: number[];
  errors: number[];
  profiles: Float64Array[];
  n: number;
}

/** Fits one CES form with the parameters B (no optimisation). */
export function cesWith(y: readonly number[], form: CesSeasonality, m: number, B: readonly number[]): CesFit {
  const s = structure(form, m);
  const { F, g } = s.fill(B);
  const f = cesFilter(y, s.lags, s.w, F, g, initialProfiles(y, form, m));
  const n = y.length;
  const k = B.length + 1;
  const nll = negLogLik(f.sse, n);
  const aic = 2 * nll + 2 * k;
  return {
    form,
    m,
    B: B.slice(),
    lags: s.lags,
    w: s.w,
    F,
    g,
    negLogLik: nll,
    k,
    aicc: n - k - 1 > 0 ? aic + (2 * k * (k + 1)) / (n - k - 1) : Number.POSITIVE_INFINITY,
    sigma2: f.sse / Math.max(1, n - k),
    fitted: Array.from(f.fitted),
    errors: Array.from(f.errors),
    profiles: f.profiles,
    n,
  };
}

/** smooth's cost: the negative log-likelihood, 1e100 times the largest eigenvalue when inadmissible. */
export function cesCost(y: readonly number[], form: CesSeasonality, m: number, B: readonly number[], init?: number[][]): number {
  const s = structure(form, m);
  let worst = 0;
  for (const block of s.blocks(B)) worst = Math.max(worst, spectralRadius(block));
  if (!(worst <= 1)) return 1e100 * (Number.isFinite(worst) ? worst : 1);
  const { F, g } = s.fill(B);
  const f = cesFilter(y, s.lags, s.w, F, g, init ?? initialProfiles(y, form, m));
  const v = negLogLik(f.sse, y.length);
  return Number.isFinite(v) ? v : 1e300;
}

/** Fits one form: Nelder-Mead from smooth's start, then once more from its optimum (R: BOBYQA, then Nelder-Mead). */
export function fitCes(y: readonly number[], form: CesSeasonality, m: number): CesFit {
  const s = structure(form, m);
  const init = initialProfiles(y, form, m);
  const f = (B: number[]): number => cesCost(y, form, m, B, init);
  const maxIter = 40 * s.start.length * 5;
  let best = nelderMead(f, s.start, { maxIter, tol: 1e-10 });
  best = nelderMead(f, best.x, { maxIter, tol: 1e-12 });
  return cesWith(y, form, m, best.x);
}

/** The forms auto.ces may fit on n points with season m (its sample-size rules). */
export function cesFormsFor(n: number, m: number): CesSeasonality[] {
  if (m <= 1) return n > 3 ? ['none'] : [];
  const forms: CesSeasonality[] = [];
  if (n > 3) forms.push('none');
  if (n > 2 * m + 3) forms.push('simple');
  if (n > m + 6) forms.push('partial');
  if (n > 2 * m + 7) forms.push('full');
  return forms;
}

/** auto.ces: every admissible form fitted, the lowest AICc kept. Null when none can be fitted. */
export function autoCes(
  y: readonly number[],
  m: number,
  forms: readonly CesSeasonality[] = cesFormsFor(y.length, m),
): { best: CesFit; tried: CesFit[] } | null {
  const tried: CesFit[] = [];
  for (const form of forms) {
    const fit = fitCes(y, form, m);
    if (Number.isFinite(fit.aicc) && fit.negLogLik < 1e99) tried.push(fit);
  }
  if (tried.length === 0) return null;
  let best = tried[0]!;
  for (const f of tried) if (f.aicc < best.aicc) best = f;
  return { best, tried };
}

/**
 * Point forecasts and their variances: the recursion run on without errors from the last states;
 * the h-step variance sigma2 (1 + sum_{j<h} psi_j^2) with psi_j the response of y_{t+j} to a unit
 * error at t (the model is linear, so these are exact).
 */
export function forecastCes(fit: CesFit, horizon: number): { mean: number[]; variance: number[] } {
  const K = fit.lags.length;
  const prof = fit.profiles.map((r) => Float64Array.from(r));
  const mean: number[] = [];
  const v = new Float64Array(K);
  const advance = (rings: Float64Array[], t: number, shock: number): number => {
    let yhat = 0;
    for (let j = 0; j < K; j++) {
      v[j] = rings[j]![t % fit.lags[j]!]!;
      yhat += fit.w[j]! * v[j]!;
    }
    for (let j = 0; j < K; j++) {
      const row = fit.F[j]!;
      let s = fit.g[j]! * shock;
      for (let k = 0; k < K; k++) s += row[k]! * v[k]!;
      rings[j]![t % fit.lags[j]!] = s;
    }
    return yhat;
  };
  for (let h = 0; h < horizon; h++) mean.push(advance(prof, fit.n + h, 0));
  // Impulse response: zero states, a unit error at the first step.
  const zero = fit.lags.map((L) => new Float64Array(L));
  const variance: number[] = [];
  let acc = 1;
  for (let h = 0; h < horizon; h++) {
    if (h > 0) acc += advance(zero, h, 0) ** 2;
    else advance(zero, 0, 1);
    variance.push(fit.sigma2 * acc);
  }
  return { mean, variance };
}
