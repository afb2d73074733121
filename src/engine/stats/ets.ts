import { timeLine } from './regression.ts';
import { polyRoots } from './arima-core.ts';
import { nmmin } from './nmmin.ts';
import { seasonalFigure } from './season.ts';

/**
 * Port of R forecast's `ets` (Hyndman, Koehler, Snyder & Grose 2002; Hyndman, Koehler, Ord &
 * Snyder 2008): the innovations state-space exponential smoothing models ETS(error, trend,
 * season) with additive or multiplicative errors, none/additive/additive-damped trend and
 * none/additive/multiplicative season, fitted by maximum likelihood; `autoEts` chooses by AICc as R
 * does, `etsForms` returns every form for the Akaike-weighted combination models/ets.ts makes.
 * Function by function it follows forecast's R/ets.R (`ets`, `etsmodel`, `initparam`,
 * `initstate`, `check.param`, `admissible`), src/etscalc.c (`etscalc`, `forecast`, `update`),
 * src/etsTargetFunction.cpp (the objective) and R/etsforecast.R (`class1`/`class2`/`class3`
 * forecast means and variances), with R's defaults: bounds "both", opt.crit "lik", ic "aicc",
 * restrict TRUE, allow.multiplicative.trend FALSE, parameter bounds alpha, beta, gamma in
 * [1e-4, 0.9999] and phi in [0.8, 0.98], Nelder-Mead (R's nmmin, maxit 2000) over smoothing
 * parameters and initial states together.
 * Differences from R: multiplicative-trend models are not offered (R's default leaves them out
 * too); `class1`'s gamma goes to the first seasonal state also when the model has no trend (R's
 * code puts it one state further in that case, which affects only the interval width); series of
 * 6 points or fewer, which R hands to HoltWinters, are answered by the caller.
 */

export type ErrorType = 'A' | 'M';
export type TrendType = 'N' | 'A';
export type SeasonType = 'N' | 'A' | 'M';

export interface EtsSpec {
  error: ErrorType;
  trend: TrendType;
  season: SeasonType;
  damped: boolean;
}

export interface EtsFit extends EtsSpec {
  m: number;
  alpha: number;
  beta: number;
  gamma: number;
  phi: number;
  /** Initial state [l, b?, s_1..s_m] (s_1 the most recent season), as R's `initstate`. */
  initState: number[];
  /** State after the last observation, same layout. */
  lastState: number[];
  residuals: number[];
  /** -2 log-likelihood up to a constant (R's `lik`). */
  lik: number;
  loglik: number;
  aic: number;
  aicc: number;
  bic: number;
  sigma2: number;
  /** Parameters and free initial states (R's `length(par)`). */
  npar: number;
}

const LOWER = [0.0001, 0.0001, 0.0001, 0.8];
const UPPER = [0.9999, 0.9999, 0.9999, 0.98];
const TOL = 1.0e-10;
const HUGEN = 1.0e10;

export function etsName(s: EtsSpec): string {
  return `ETS(${s.error},${s.trend}${s.damped ? 'd' : ''},${s.season})`;
}

/** R's `initparam` with no parameter given. */
function initParam(trend: TrendType, season: SeasonType, damped: boolean, m: number): { alpha: number; beta: number; gamma: number; phi: number } {
  let alpha = LOWER[0]! + (0.2 * (UPPER[0]! - LOWER[0]!)) / m;
  if (alpha > 1 || alpha < 0) alpha = LOWER[0]! + 2e-3;
  let beta = 0;
  if (trend !== 'N') {
    const up = Math.min(UPPER[1]!, alpha);
    beta = LOWER[1]! + 0.1 * (up - LOWER[1]!);
    if (beta < 0 || beta > alpha) beta = alpha - 1e-3;
  }
  let gamma = 0;
  if (season !== 'N') {
    const up = Math.min(UPPER[2]!, 1 - alpha);
    gamma = LOWER[2]! + 0.05 * (up - LOWER[2]!);
    if (gamma < 0 || gamma > 1 - alpha) gamma = 1 - alpha - 1e-3;
  }
  let phi = 1;
  if (damped) {
    phi = LOWER[3]! + 0.99 * (UPPER[3]! - LOWER[3]!);
    if (phi < 0 || phi > 1) phi = UPPER[3]! - 1e-3;
  }
  return { alpha, beta, gamma, phi };
}

/** Least-squares fit of y on the columns of X (with the columns as given); null when singular. */
function leastSquares(X: number[][], y: readonly number[]): number[] | null {
  const k = X[0]!.length;
  const A = Array.from({ length: k }, () => new Array<number>(k + 1).fill(0));
  for (let r = 0; r < X.length; r++) {
    const row = X[r]!;
    for (let i = 0; i < k; i++) {
      for (let j = 0; j < k; j++) A[i]![j]! += row[i]! * row[j]!;
      A[i]![k]! += row[i]! * y[r]!;
    }
  }
  for (let c = 0; c < k; c++) {
    let piv = c;
    for (let r = c + 1; r < k; r++) if (Math.abs(A[r]![c]!) > Math.abs(A[piv]![c]!)) piv = r;
    if (Math.abs(A[piv]![c]!) < 1e-12) return null;
    [A[c], A[piv]] = [A[piv]!, A[c]!];
    for (let r = 0; r < k; r++) {
      if (r === c) continue;
      const fct = A[r]![c]! / A[c]![c]!;
      for (let j = c; j <= k; j++) A[r]![j]! -= fct * A[c]![j]!;
    }
  }
  return A.map((row, i) => row[k]! / row[i]!);
}

/** R's `initstate`: [l0, b0?, s_0..s_{m-2}] (the last seasonal state is implied). */
export function initState(y: readonly number[], trend: TrendType, season: SeasonType, m: number): number[] {
  const n = y.length;
  let initSeas: number[] = [];
  let ysa: number[] = y.slice();
  if (season !== 'N') {
    if (n < 4) throw new Error('not enough data');
    let seasonal: number[];
    if (n < 3 * m) {
      // Simple Fourier model: y ~ trend + sin/cos of the first harmonic (R's fourier(y, 1), tslm).
      const X: number[][] = [];
      for (let t = 1; t <= n; t++) {
        const row = [1, t];
        if (m !== 2) row.push(Math.sin((2 * Math.PI * t) / m));
        row.push(Math.cos((2 * Math.PI * t) / m));
        X.push(row);
      }
      const coef = leastSquares(X, y);
      if (!coef) throw new Error('singular Fourier regression');
      seasonal = y.map((v, i) => (season === 'A' ? v - coef[0]! - coef[1]! * (i + 1) : v / (coef[0]! + coef[1]! * (i + 1))));
    } else {
      const fig = seasonalFigure(y, m, season === 'A' ? 'additive' : 'multiplicative');
      seasonal = y.map((_, i) => fig[i % m]!);
    }
    for (let i = m - 1; i >= 1; i--) initSeas.push(seasonal[i]!);
    if (season === 'A') {
      ysa = y.map((v, i) => v - seasonal[i]!);
    } else {
      initSeas = initSeas.map((v) => Math.max(v, 1e-2));
      const sum = initSeas.reduce((a, b) => a + b, 0);
      if (sum > m) {
        const denom = initSeas.reduce((a, b) => a + b + 1e-2, 0);
        initSeas = initSeas.map((v) => v / denom);
      }
      ysa = y.map((v, i) => v / Math.max(seasonal[i]!, 1e-2));
    }
  }
  const mm = season === 'N' ? 1 : m;
  const maxn = Math.min(Math.max(10, 2 * mm), ysa.length);
  if (trend === 'N') {
    let l0 = 0;
    for (let i = 0; i < maxn; i++) l0 += ysa[i]! / maxn;
    return [l0, ...initSeas];
  }
  // Simple linear regression on the seasonally adjusted data (R's lsfit).
  const line = timeLine(ysa, maxn);
  let b0 = line.slope;
  let l0 = line.intercept;
  if (Math.abs(l0 + b0) < 1e-8) {
    l0 *= 1 + 1e-3;
    b0 *= 1 - 1e-3;
  }
  return [l0, b0, ...initSeas];
}

/** The likelihood recursion of etscalc.c; seasons live in a ring (logical s[k] = ring[(head + k) % m]). */
interface CalcOut {
  lik: number;
  residuals?: number[];
  last?: number[];
}

function etsCalc(
  y: readonly number[],
  x0: readonly number[],
  m: number,
  spec: EtsSpec,
  alpha: number,
  beta: number,
  gamma: number,
  phi: number,
  keep: boolean,
): CalcOut {
  const n = y.length;
  const hasTrend = spec.trend !== 'N';
  const season = spec.season;
  const multErr = spec.error === 'M';
  let l = x0[0]!;
  let b = hasTrend ? x0[1]! : 0;
  const so = hasTrend ? 2 : 1;
  const mm = season === 'N' ? 1 : m;
  const ring = new Float64Array(mm);
  if (season !== 'N') for (let k = 0; k < mm; k++) ring[k] = x0[so + k]!;
  let head = 0;
  let sse = 0;
  let logsum = 0;
  const res = keep ? new Array<number>(n) : undefined;
  const ba = hasTrend ? beta / alpha : 0;
  for (let i = 0; i < n; i++) {
    const phib = hasTrend ? phi * b : 0;
    const q = l + phib;
    const yi = y[i]!;
    let f: number;
    let p: number;
    let sv = 0;
    const oldIdx = season === 'N' ? 0 : (head + mm - 1) % mm;
    if (season === 'N') {
      f = q;
      p = yi;
    } else if (season === 'A') {
      sv = ring[oldIdx]!;
      f = q + sv;
      p = yi - sv;
    } else {
      sv = ring[oldIdx]!;
      f = q * sv;
      p = Math.abs(sv) < TOL ? HUGEN : yi / sv;
    }
    if (Number.isNaN(f)) return { lik: NaN };
    const e = multErr ? (yi - f) / f : yi - f;
    if (res) res[i] = e;
    sse += e * e;
    if (multErr) logsum += Math.log(Math.abs(f));
    const ln = q + alpha * (p - q);
    if (hasTrend) b = phib + ba * (ln - l - phib);
    if (season !== 'N') {
      const t = season === 'A' ? yi - q : Math.abs(q) < TOL ? HUGEN : yi / q;
      head = oldIdx;
      ring[head] = sv + gamma * (t - sv);
    }
    l = ln;
  }
  let lik = n * Math.log(sse);
  if (multErr) lik += 2 * logsum;
  const out: CalcOut = { lik };
  if (keep) {
    out.residuals = res;
    const last = [l];
    if (hasTrend) last.push(b);
    if (season !== 'N') for (let k = 0; k < mm; k++) last.push(ring[(head + k) % mm]!);
    out.last = last;
  }
  return out;
}

/** etsTargetFunction.cpp's `admissible` (optGamma: the model is seasonal). */
function admissible(alpha: number, beta: number, gamma: number, phi: number, m: number, hasTrend: boolean, seasonal: boolean): boolean {
  if (phi < 0 || phi > 1 + 1e-8) return false;
  if (!seasonal) {
    if (alpha < 1 - 1 / phi || alpha > 1 + 1 / phi) return false;
    if (hasTrend && (beta < alpha * (phi - 1) || beta > (1 + phi) * (2 - alpha))) return false;
    return true;
  }
  if (m > 1) {
    const b = hasTrend ? beta : 0;
    const d = 1 - 1 / phi - alpha;
    if (gamma < Math.max(d, 0) || gamma > 1 + 1 / phi - alpha) return false;
    if (alpha < 1 - 1 / phi - (gamma * (1 - m + phi + phi * m)) / (2 * phi * m)) return false;
    if (b < -(1 - phi) * (gamma / m + alpha)) return false;
    const P = [phi * (1 - alpha - gamma), alpha + b - alpha * phi + gamma - 1];
    for (let i = 0; i < m - 2; i++) P.push(alpha + b - alpha * phi);
    P.push(alpha + b - phi, 1);
    let max = 0;
    for (const z of polyRoots(P)) max = Math.max(max, Math.hypot(z.re, z.im));
    if (max > 1 + 1e-10) return false;
  }
  return true;
}

function checkParams(alpha: number, beta: number, gamma: number, phi: number, spec: EtsSpec, m: number): boolean {
  const hasTrend = spec.trend !== 'N';
  const seasonal = spec.season !== 'N';
  if (alpha < LOWER[0]! || alpha > UPPER[0]!) return false;
  if (hasTrend && (beta < LOWER[1]! || beta > alpha || beta > UPPER[1]!)) return false;
  if (spec.damped && (phi < LOWER[3]! || phi > UPPER[3]!)) return false;
  if (seasonal && (gamma < LOWER[2]! || gamma > 1 - alpha || gamma > UPPER[2]!)) return false;
  return admissible(alpha, beta, gamma, phi, m, hasTrend, seasonal);
}

/** 'free': fitted in units of the series' mean absolute value (the service); 'r': in the data's own units, as R does (R parity tests). */
export type EtsUnits = 'free' | 'r';

/**
 * R's `etsmodel` on the series divided by its mean absolute value, the fit then put back in the
 * series' units: the forecast does not depend on the units of the data.
 *
 * R's Nelder-Mead starts from a simplex whose step is a tenth of the largest parameter, and the
 * initial level is among the parameters: on data in the thousands every smoothing parameter is
 * first stepped by hundreds (rejected) and on data near 1 by a tenth, so R's ets fits the same
 * series differently in different units (on a 48-point monthly series, auto-ets's forecast moved
 * by 5% and its intervals by 19% when the series was divided by 16). Dividing by the mean absolute
 * value (which scales with the data) gives every series the search it gets near 1. The likelihood
 * of every form shifts by the same 2n log(scale), so AICc comparisons and weights are unchanged.
 */
export function etsModel(y: readonly number[], m0: number, spec: EtsSpec, units: EtsUnits = 'free'): EtsFit | null {
  let sum = 0;
  for (const v of y) sum += Math.abs(v);
  const scale = sum / y.length;
  if (units === 'r' || !(scale > 0 && Number.isFinite(scale))) return etsModelRaw(y, m0, spec);
  const fit = etsModelRaw(
    y.map((v) => v / scale),
    m0,
    spec,
  );
  return fit ? inUnits(fit, scale, y.length) : null;
}

/** A fit to y / scale in the units of y: additive states and errors times scale; the likelihood shifted by 2n log(scale). */
function inUnits(fit: EtsFit, scale: number, n: number): EtsFit {
  const so = fit.trend !== 'N' ? 2 : 1;
  const state = (x: readonly number[]): number[] => x.map((v, i) => (i < so || fit.season === 'A' ? v * scale : v));
  const shift = 2 * n * Math.log(scale);
  const additiveError = fit.error === 'A';
  return {
    ...fit,
    initState: state(fit.initState),
    lastState: state(fit.lastState),
    residuals: additiveError ? fit.residuals.map((e) => e * scale) : fit.residuals,
    lik: fit.lik + shift,
    loglik: fit.loglik - shift / 2,
    aic: fit.aic + shift,
    aicc: fit.aicc + shift,
    bic: fit.bic + shift,
    sigma2: additiveError ? fit.sigma2 * scale * scale : fit.sigma2,
  };
}

function etsModelRaw(y: readonly number[], m0: number, spec: EtsSpec): EtsFit | null {
  const m = spec.season === 'N' ? 1 : m0;
  const start = initParam(spec.trend, spec.season, spec.damped, m);
  if (!checkParams(start.alpha, start.beta, start.gamma, start.phi, spec, m)) return null;
  const state = initState(y, spec.trend, spec.season, m);
  const hasTrend = spec.trend !== 'N';
  const par = [start.alpha];
  if (hasTrend) par.push(start.beta);
  if (spec.season !== 'N') par.push(start.gamma);
  if (spec.damped) par.push(start.phi);
  const nfix = par.length;
  par.push(...state);
  const np = par.length;
  if (np >= y.length - 1) return null;
  const nstate = state.length;
  const so = hasTrend ? 2 : 1;
  const full = (p: ArrayLike<number>): number[] => {
    const s: number[] = [];
    for (let i = nfix; i < np; i++) s.push(p[i]!);
    if (spec.season !== 'N') {
      let sum = 0;
      for (let i = so; i < nstate; i++) sum += s[i]!;
      s.push((spec.season === 'M' ? m : 0) - sum);
    }
    return s;
  };
  const unpack = (p: ArrayLike<number>): { alpha: number; beta: number; gamma: number; phi: number } => {
    let j = 0;
    const alpha = p[j++]!;
    const beta = hasTrend ? p[j++]! : 0;
    const gamma = spec.season !== 'N' ? p[j++]! : 0;
    const phi = spec.damped ? p[j++]! : 1;
    return { alpha, beta, gamma, phi };
  };
  const objective = (p: Float64Array): number => {
    const { alpha, beta, gamma, phi } = unpack(p);
    if (!checkParams(alpha, beta, gamma, phi, spec, m)) return Infinity;
    const x0 = full(p);
    if (spec.season === 'M') {
      for (let i = so; i < x0.length; i++) if (x0[i]! < 0) return Infinity;
    }
    let lik = etsCalc(y, x0, m, spec, alpha, beta, gamma, phi, false).lik;
    if (lik < -1e10) lik = -1e10;
    if (Number.isNaN(lik)) return Infinity;
    return lik;
  };
  const opt = nmmin(objective, par, { abstol: -Infinity, intol: Math.sqrt(Number.EPSILON), alpha: 1, beta: 0.5, gamma: 2, maxit: 2000 });
  const { alpha, beta, gamma, phi } = unpack(opt.x);
  const x0 = full(opt.x);
  const calc = etsCalc(y, x0, m, spec, alpha, beta, gamma, phi, true);
  if (!Number.isFinite(calc.lik)) return null;
  const ny = y.length;
  const k = np + 1;
  const aic = calc.lik + 2 * k;
  const bic = calc.lik + Math.log(ny) * k;
  const aicc = aic + (2 * k * (k + 1)) / (ny - k - 1);
  const residuals = calc.residuals!;
  let sse = 0;
  for (const e of residuals) sse += e * e;
  return {
    ...spec,
    m,
    alpha,
    beta,
    gamma,
    phi,
    initState: x0,
    lastState: calc.last!,
    residuals,
    lik: calc.lik,
    loglik: -0.5 * calc.lik,
    aic,
    aicc,
    bic,
    sigma2: sse / (ny - np),
    npar: np,
  };
}

/**
 * Every ETS form R's `ets(y)` search considers, fitted: error A/M (M only on positive data), trend
 * N/A/Ad, season N/A/M (seasons only for 1 < m <= 24 and more than m points, no A error with an M
 * season). Forms that cannot be fitted are left out; `tried` counts them all.
 */
export function etsForms(y: readonly number[], m: number, units: EtsUnits = 'free'): { fits: EtsFit[]; tried: number } {
  const seasonalOk = m > 1 && m <= 24 && y.length > m;
  const positive = y.every((v) => v > 0);
  const fits: EtsFit[] = [];
  let tried = 0;
  for (const error of ['A', 'M'] as const) {
    if (error === 'M' && !positive) continue;
    for (const trend of ['N', 'A'] as const) {
      for (const season of (seasonalOk ? ['N', 'A', 'M'] : ['N']) as SeasonType[]) {
        if (error === 'A' && season === 'M') continue;
        for (const damped of [true, false]) {
          if (trend === 'N' && damped) continue;
          tried++;
          let fit: EtsFit | null = null;
          try {
            fit = etsModel(y, m, { error, trend, season, damped }, units);
          } catch {
            fit = null;
          }
          if (fit && Number.isFinite(fit.aicc)) fits.push(fit);
        }
      }
    }
  }
  return { fits, tried };
}

/** R's `ets(y)` model search (AICc); null when no model can be fitted. */
export function autoEts(y: readonly number[], m: number, units: EtsUnits = 'free'): { fit: EtsFit; tried: number } | null {
  const { fits, tried } = etsForms(y, m, units);
  let best: EtsFit | null = null;
  for (const fit of fits) if (!best || fit.aicc < best.aicc) best = fit;
  return best ? { fit: best, tried } : null;
}

/**
 * Akaike weights of models by their AICc: w_i proportional to exp(-(AICc_i - min AICc) / 2)
 * (Burnham & Anderson 2002, ch. 2.9; for ETS forecasts Kolassa 2011, IJF 27(2)). Sum to 1.
 */
export function akaikeWeights(aicc: readonly number[]): number[] {
  const best = Math.min(...aicc);
  const raw = aicc.map((a) => Math.exp(-0.5 * (a - best)));
  const total = raw.reduce((s, v) => s + v, 0);
  return raw.map((v) => v / total);
}

/** Point forecasts from a state (etscalc.c's `forecast`). */
function pointForecast(fit: EtsFit, h: number): number[] {
  const st = fit.lastState;
  const l = st[0]!;
  const hasTrend = fit.trend !== 'N';
  const b = hasTrend ? st[1]! : 0;
  const so = hasTrend ? 2 : 1;
  const m = fit.m;
  const out: number[] = [];
  let phistar = fit.phi;
  for (let i = 0; i < h; i++) {
    let f = hasTrend ? l + phistar * b : l;
    if (fit.season !== 'N') {
      let j = m - 1 - i;
      while (j < 0) j += m;
      f = fit.season === 'A' ? f + st[so + j]! : f * st[so + j]!;
    }
    out.push(f);
    phistar += Math.abs(fit.phi - 1) < TOL ? 1 : fit.phi ** (i + 1);
  }
  return out;
}

/** forecast.ets's class 1 (additive error, linear): mean, variance and the c_j weights. */
function class1(fit: EtsFit, h: number): { mu: number[]; variance: number[]; cj: number[] } {
  const st = fit.lastState;
  const p = st.length;
  const hasTrend = fit.trend !== 'N';
  const seasonal = fit.season !== 'N';
  const m = fit.m;
  const phi = fit.damped ? fit.phi : 1;
  // x_{t+1} = F x_t + G e_t, y_t = H x_{t-1} + e_t
  const H = new Array<number>(p).fill(0);
  H[0] = 1;
  if (hasTrend) H[1] = phi;
  if (seasonal) H[p - 1] = 1;
  const G = new Array<number>(p).fill(0);
  G[0] = fit.alpha;
  if (hasTrend) G[1] = fit.beta;
  if (seasonal) G[hasTrend ? 2 : 1] = fit.gamma;
  const applyF = (v: readonly number[]): number[] => {
    const o = new Array<number>(p).fill(0);
    o[0] = v[0]! + (hasTrend ? phi * v[1]! : 0);
    if (hasTrend) o[1] = phi * v[1]!;
    if (seasonal) {
      o[p - m] = v[p - 1]!;
      for (let k = p - m + 1; k < p; k++) o[k] = v[k - 1]!;
    }
    return o;
  };
  const dot = (a: readonly number[], b: readonly number[]): number => a.reduce((s, v, i) => s + v * b[i]!, 0);
  const mu: number[] = [];
  const cj: number[] = [];
  let x = st.slice();
  let g = G.slice();
  for (let i = 0; i < h; i++) {
    mu.push(dot(H, x));
    cj.push(dot(H, g));
    x = applyF(x);
    g = applyF(g);
  }
  const variance: number[] = [fit.sigma2];
  let cum = 0;
  for (let i = 1; i < h; i++) {
    cum += cj[i - 1]! ** 2;
    variance.push(fit.sigma2 * (1 + cum));
  }
  return { mu, variance, cj };
}

/** forecast.ets's class 2 (multiplicative error, linear states). */
function class2(fit: EtsFit, h: number): { mu: number[]; variance: number[] } {
  const c1 = class1(fit, h);
  const s2 = fit.sigma2;
  const theta: number[] = [c1.mu[0]! ** 2];
  for (let j = 1; j < h; j++) {
    let s = 0;
    for (let k = 0; k < j; k++) s += c1.cj[k]! ** 2 * theta[j - 1 - k]!;
    theta.push(c1.mu[j]! ** 2 + s2 * s);
  }
  return { mu: c1.mu, variance: theta.map((t, j) => (1 + s2) * t - c1.mu[j]! ** 2) };
}

type Mat = number[][];
const zeros = (r: number, c: number): Mat => Array.from({ length: r }, () => new Array<number>(c).fill(0));
function mul(A: Mat, B: Mat): Mat {
  const r = A.length;
  const k = B.length;
  const c = B[0]!.length;
  const O = zeros(r, c);
  for (let i = 0; i < r; i++) {
    const Ai = A[i]!;
    const Oi = O[i]!;
    for (let t = 0; t < k; t++) {
      const a = Ai[t]!;
      if (a === 0) continue;
      const Bt = B[t]!;
      for (let j = 0; j < c; j++) Oi[j]! += a * Bt[j]!;
    }
  }
  return O;
}
const tr = (A: Mat): Mat => A[0]!.map((_, j) => A.map((row) => row[j]!));
function kron(A: Mat, B: Mat): Mat {
  const O = zeros(A.length * B.length, A[0]!.length * B[0]!.length);
  for (let i = 0; i < A.length; i++)
    for (let j = 0; j < A[0]!.length; j++)
      for (let k = 0; k < B.length; k++) for (let l = 0; l < B[0]!.length; l++) O[i * B.length + k]![j * B[0]!.length + l] = A[i]![j]! * B[k]![l]!;
  return O;
}
const add = (...ms: Mat[]): Mat => ms[0]!.map((row, i) => row.map((_v, j) => ms.reduce((s, M) => s + M[i]![j]!, 0)));
const scale = (A: Mat, s: number): Mat => A.map((row) => row.map((v) => v * s));

/** forecast.ets's class 3 (multiplicative error and season, additive or no trend). */
function class3(fit: EtsFit, h: number): { mu: number[]; variance: number[] } {
  const st = fit.lastState;
  const p = st.length;
  const m = fit.m;
  const hasTrend = fit.trend !== 'N';
  const s2 = fit.sigma2;
  const H1: Mat = [hasTrend ? [1, 1] : [1]];
  const H2: Mat = [[...new Array<number>(m - 1).fill(0), 1]];
  const phi = fit.damped ? fit.phi : 1;
  const F1: Mat = hasTrend
    ? [
        [1, 1],
        [0, phi],
      ]
    : [[1]];
  const G1: Mat = hasTrend
    ? [
        [fit.alpha, fit.alpha],
        [fit.beta, fit.beta],
      ]
    : [[fit.alpha]];
  const F2: Mat = zeros(m, m);
  F2[0]![m - 1] = 1;
  for (let i = 1; i < m; i++) F2[i]![i - 1] = 1;
  const G2: Mat = zeros(m, m);
  G2[0]![m - 1] = fit.gamma;
  let Mh: Mat = mul(
    st.slice(0, p - m).map((v) => [v]),
    [st.slice(p - m)],
  );
  const q = Mh.length * m;
  let Vh: Mat = zeros(q, q);
  const H21 = kron(H2, H1);
  const F21 = kron(F2, F1);
  const G21 = kron(G2, G1);
  const K = add(kron(G2, F1), kron(F2, G1));
  const F21t = tr(F21);
  const G21t = tr(G21);
  const Kt = tr(K);
  const H21t = tr(H21);
  const mu: number[] = [];
  const variance: number[] = [];
  for (let i = 0; i < h; i++) {
    const mi = mul(mul(H1, Mh), tr(H2))[0]![0]!;
    mu.push(mi);
    variance.push((1 + s2) * mul(mul(H21, Vh), H21t)[0]![0]! + s2 * mi * mi);
    // vec(Mh): column-major
    const vec: number[] = [];
    for (let c = 0; c < Mh[0]!.length; c++) for (let r = 0; r < Mh.length; r++) vec.push(Mh[r]![c]!);
    const vv: Mat = vec.map((a) => vec.map((b) => a * b));
    Vh = add(
      mul(mul(F21, Vh), F21t),
      scale(
        add(mul(mul(F21, Vh), G21t), mul(mul(G21, Vh), F21t), mul(mul(K, add(Vh, vv)), Kt), scale(mul(mul(G21, add(scale(Vh, 3), scale(vv, 2))), G21t), s2)),
        s2,
      ),
    );
    Mh = add(mul(mul(F1, Mh), tr(F2)), scale(mul(mul(G1, Mh), tr(G2)), s2));
  }
  return { mu, variance };
}

/** forecast.ets without simulation: mean and variance per step (class 1, 2 or 3 by the model). */
export function forecastEts(fit: EtsFit, h: number): { mean: number[]; variance: number[] } {
  if (fit.error === 'A') {
    const c = class1(fit, h);
    return { mean: c.mu, variance: c.variance };
  }
  if (fit.season !== 'M') {
    const c = class2(fit, h);
    return { mean: c.mu, variance: c.variance };
  }
  const c = class3(fit, h);
  return { mean: c.mu, variance: c.variance };
}

export { pointForecast as etsPointForecast };
