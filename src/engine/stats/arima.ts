/**
 * R's `stats::arima` (CSS-ML, CSS and ML methods) and forecast's `auto.arima` (Hyndman &
 * Khandakar 2008, forecast 8.x R/newarima2.R; statsforecast's arima.py follows the same code),
 * ported to TypeScript. Only what auto.arima needs: no fixed parameters other than "all fixed",
 * and the only regressors are the intercept (mean) and the drift.
 */
import {
  arCheck,
  arimaCss,
  arimaCssValue,
  cssDifferenced,
  arimaGradtrans,
  arimaInvtrans,
  arimaLike,
  arimaUndoPars,
  armaLikeChandrasekhar,
  deltaPoly,
  kalmanForecast,
  maInvert,
  makeArima,
  polyRoots,
  resetState,
  transPars,
  transParsInto,
  type Arma,
  type StateSpace,
} from './arima-core.ts';
import { bfgs, optimHess, solve } from './bfgs.ts';
import { diff, isConstant, ndiffs, nsdiffs } from './unitroot.ts';

export type ArimaMethod = 'CSS-ML' | 'ML' | 'CSS';

export interface ArimaFit {
  arma: Arma;
  /** ar, ma, sar, sma, then the regressor coefficient (intercept or drift) if any. */
  coef: number[];
  /** 'mean' adds an intercept column of ones; 'drift' a column 1..n. */
  regressor: 'none' | 'mean' | 'drift';
  sigma2: number;
  loglik: number;
  aic: number;
  /** Filled by myarima. */
  aicc: number;
  bic: number;
  ic: number;
  nUsed: number;
  /** Standardised innovations. */
  residuals: Float64Array;
  /**
   * Filtered state at the end of the data (prediction starts here). For a CSS fit the filter runs
   * on first access: auto.arima's approximate search fits dozens of CSS candidates and forecasts
   * none of them (the filter, O(r^2) per step with the d + D m differencing states, was half of
   * its time on 1,000 hourly points).
   */
  mod: StateSpace;
  /** The expanded AR and MA polynomials (the same arrays as mod.phi, mod.theta), readable without filtering. */
  polys: { phi: Float64Array; theta: Float64Array };
  /** NaN on the diagonal of var(coef) (R's checkarima) or a singular Hessian. */
  badVariance: boolean;
  /**
   * With hessian = 'deferred': computes badVariance (the numerical Hessian) when called, and
   * sets it; null once done or when no Hessian was asked for.
   */
  checkVariance: (() => boolean) | null;
  method: ArimaMethod;
  n: number;
}

export class ArimaError extends Error {}

const LOG_2PI = Math.log(2 * Math.PI);

/**
 * R's arima(x, order, seasonal, xreg = regressor, include.mean, method). Throws ArimaError
 * where R stops (non-stationary AR part from CSS, non-finite optimiser values, ...).
 * `fixed` fixes every coefficient (no optimisation), as Arima(model = ...) refits do.
 */
export function arima(
  x: readonly number[],
  arma: Arma,
  regressor: 'none' | 'mean' | 'drift',
  method: ArimaMethod,
  fixed?: readonly number[],
  hessian: boolean | 'deferred' = true,
): ArimaFit {
  const n = x.length;
  const narma = arma.p + arma.q + arma.P + arma.Q;
  const delta = deltaPoly(arma);
  const nd = arma.d + arma.D;
  const reg = regressor === 'mean' && nd > 0 ? 'none' : regressor;
  const ncxreg = reg === 'none' ? 0 : 1;
  const xreg: Float64Array | null = reg === 'none' ? null : Float64Array.from({ length: n }, (_, i) => (reg === 'drift' ? i + 1 : 1));
  const nUsed = x.filter((v) => !Number.isNaN(v)).length - delta.length;
  const init0 = new Array<number>(narma + ncxreg).fill(0);
  const parscale = new Array<number>(narma + ncxreg).fill(1);
  if (xreg) {
    // lm(dx ~ dxreg - 1) on the differenced data gives the start and the scale.
    let dx = x.slice();
    let dr = Array.from(xreg);
    if (arma.d > 0) {
      dx = diff(dx, 1, arma.d);
      dr = diff(dr, 1, arma.d);
    }
    if (arma.m > 1 && arma.D > 0) {
      dx = diff(dx, arma.m, arma.D);
      dr = diff(dr, arma.m, arma.D);
    }
    let sxy = 0;
    let sxx = 0;
    let k = 0;
    for (let i = 0; i < dx.length; i++) {
      if (Number.isNaN(dx[i]!) || Number.isNaN(dr[i]!)) continue;
      sxy += dx[i]! * dr[i]!;
      sxx += dr[i]! * dr[i]!;
      k++;
    }
    const beta = sxx > 0 ? sxy / sxx : 0;
    let rss = 0;
    for (let i = 0; i < dx.length; i++) {
      if (Number.isNaN(dx[i]!) || Number.isNaN(dr[i]!)) continue;
      rss += (dx[i]! - beta * dr[i]!) ** 2;
    }
    const se = k > 1 && sxx > 0 ? Math.sqrt(rss / (k - 1) / sxx) : NaN;
    init0[narma] = beta;
    parscale[narma] = Number.isFinite(se) && se > 0 ? 10 * se : Math.max(Math.abs(beta), 1) * 1e-3;
  }
  if (nUsed <= 0) throw new ArimaError('too few non-missing observations');
  const ncondCss = arma.d + arma.D * arma.m + arma.p + arma.P * arma.m;
  if (method !== 'ML' && ncondCss >= n) throw new ArimaError('too few observations for CSS');
  const noOptim = fixed !== undefined;
  const coef = fixed ? fixed.slice() : init0.slice();
  const transform = !noOptim;

  const xAdj = (par: readonly number[]): Float64Array => {
    const out = Float64Array.from(x);
    if (xreg) {
      const b = par[narma]!;
      for (let i = 0; i < n; i++) out[i] = out[i]! - b * xreg[i]!;
    }
    return out;
  };

  // Differencing is linear: the CSS objective differences x and the regressor once, and each
  // evaluation combines them (cssDifferenced(x - b xreg) up to rounding).
  const cssX = cssDifferenced(x, arma);
  const cssReg = xreg ? cssDifferenced(xreg, arma) : null;
  const cssBuf = new Float64Array(n);
  const phiBuf = new Float64Array(arma.p + arma.m * arma.P);
  const thetaBuf = new Float64Array(arma.q + arma.m * arma.Q);
  const armaCss = (p: readonly number[]): number => {
    transParsInto(p, arma, false, phiBuf, thetaBuf);
    const phi = phiBuf;
    const theta = thetaBuf;
    let w: Float64Array = cssX;
    if (cssReg) {
      const b = p[narma]!;
      for (let i = 0; i < n; i++) cssBuf[i] = cssX[i]! - b * cssReg[i]!;
      w = cssBuf;
    }
    const s2 = arimaCssValue(w, arma, phi, theta);
    if (!Number.isFinite(s2)) return Number.MAX_VALUE;
    if (s2 <= 0) return -Infinity;
    return 0.5 * Math.log(s2);
  };

  // The exact likelihood is evaluated on the differenced series with the ARMA state only (no
  // diffuse states): R's diffuse prior (kappa = 1e6) on the differencing states computes the
  // same likelihood up to O(1/kappa) and drops the first length(Delta) observations, which is
  // what differencing does. The state shrinks from r + d to r (27 to 14 for a seasonal model
  // with d = D = 1, m = 12), several times faster. The final fit below runs R's full filter.
  const wx = differencedSeries(x, arma);
  const wreg = xreg ? differencedSeries(Array.from(xreg), arma) : null;
  const wbuf = new Float64Array(wx.length);
  const noDelta = new Float64Array(0);
  // Without missing values the Chandrasekhar recursions give the same sums in O(r) a step.
  const complete = !wx.some((v) => Number.isNaN(v)) && !(wreg?.some((v) => Number.isNaN(v)) ?? false);
  let mod: StateSpace | null = null;
  const armafn = (p: readonly number[], trans: boolean): number => {
    transParsInto(p, arma, trans, phiBuf, thetaBuf);
    const phi = phiBuf;
    const theta = thetaBuf;
    if (wreg) {
      const b = p[narma]!;
      for (let i = 0; i < wx.length; i++) wbuf[i] = wx[i]! - b * wreg[i]!;
    } else wbuf.set(wx);
    let res: { ssq: number; sumlog: number; nu: number };
    if (complete) res = armaLikeChandrasekhar(wbuf, phi, theta);
    else {
      if (!mod) mod = makeArima(phi, theta, noDelta);
      else {
        mod.phi = phi;
        mod.theta.fill(0);
        mod.theta.set(theta.subarray(0, Math.min(theta.length, mod.theta.length)));
        resetState(mod);
      }
      res = arimaLike(wbuf, mod, false, true);
    }
    if (res.nu === 0) return Infinity;
    const s2 = res.ssq / res.nu;
    if (!(s2 > 0)) return NaN;
    return 0.5 * (Math.log(s2) + res.sumlog / res.nu);
  };

  let value: number;
  let varianceCheck: (() => boolean) | null = null;
  let final: number[];
  let sigma2: number;
  let residuals: Float64Array;
  let finalMod: StateSpace;
  let filterPending: (() => void) | null = null;

  if (method === 'CSS') {
    let par = coef;
    if (noOptim) value = armaCss(par);
    else {
      const res = bfgs(armaCss, init0, { parscale });
      par = res.x;
      value = res.value;
      if (hessian) {
        const at = par;
        varianceCheck = () => varianceBad(optimHess(armaCss, at, parscale), null, nUsed);
      }
    }
    final = par;
    const { phi, theta } = transPars(final, arma, false);
    finalMod = makeArima(phi, theta, delta);
    const xa = xAdj(final);
    const css = arimaCss(xa, arma, phi, theta);
    sigma2 = css.s2;
    residuals = css.resid;
    filterPending = () => arimaLike(xa, finalMod, false);
  } else {
    const init = coef.slice();
    if (method === 'CSS-ML' && !noOptim) {
      const res = bfgs(armaCss, init, { parscale });
      if (res.convergence === 0) for (let i = 0; i < init.length; i++) init[i] = res.x[i]!;
      if (arma.p > 0 && !arCheck(init.slice(0, arma.p))) throw new ArimaError('non-stationary AR part from CSS');
      if (arma.P > 0 && !arCheck(init.slice(arma.p + arma.q, arma.p + arma.q + arma.P))) {
        throw new ArimaError('non-stationary seasonal AR part from CSS');
      }
    }
    let start = init;
    if (transform) {
      start = arimaInvtrans(init, arma);
      if (arma.q > 0) splice(start, arma.p, maInvert(start.slice(arma.p, arma.p + arma.q)));
      if (arma.Q > 0) {
        const o = arma.p + arma.q + arma.P;
        splice(start, o, maInvert(start.slice(o, o + arma.Q)));
      }
      if (start.some((v) => !Number.isFinite(v))) throw new ArimaError('non-stationary start');
    }
    let par: number[];
    if (noOptim) {
      par = start;
      value = armafn(par, false);
    } else {
      const f = (p: number[]): number => armafn(p, true);
      const res = bfgs(f, start, { parscale });
      par = res.x;
      value = res.value;
      // Enforce invertibility; when that changed anything, R re-evaluates (maxit = 0) there.
      const inv = par.slice();
      if (arma.q > 0) splice(inv, arma.p, maInvert(inv.slice(arma.p, arma.p + arma.q)));
      if (arma.Q > 0) {
        const o = arma.p + arma.q + arma.P;
        splice(inv, o, maInvert(inv.slice(o, o + arma.Q)));
      }
      if (inv.some((v, i) => v !== par[i])) {
        par = inv;
        value = f(par);
      }
      if (hessian) {
        const at = par;
        varianceCheck = () => varianceBad(optimHess(f, at, parscale), arimaGradtrans(at, arma), nUsed);
      }
    }
    final = transform ? arimaUndoPars(par, arma) : par;
    const { phi, theta } = transPars(final, arma, false);
    finalMod = makeArima(phi, theta, delta);
    const ss = arimaLike(xAdj(final), finalMod, true);
    sigma2 = ss.ssq / nUsed;
    residuals = ss.resid!;
    // R's value at the optimum, from R's own (diffuse) filter.
    if (ss.nu > 0 && ss.ssq > 0) value = 0.5 * (Math.log(ss.ssq / ss.nu) + ss.sumlog / ss.nu);
  }
  if (!Number.isFinite(value)) throw new ArimaError('non-finite likelihood');
  const minus2ll = 2 * nUsed * value + nUsed + nUsed * LOG_2PI;
  const npar = noOptim ? 0 : narma + ncxreg;
  const aic = method !== 'CSS' ? minus2ll + 2 * npar + 2 : NaN;
  const out: ArimaFit = {
    arma,
    coef: final,
    regressor: reg,
    sigma2,
    loglik: -0.5 * minus2ll,
    aic,
    aicc: NaN,
    bic: NaN,
    ic: NaN,
    nUsed,
    residuals,
    mod: finalMod,
    polys: { phi: finalMod.phi, theta: finalMod.theta },
    badVariance: false,
    checkVariance: null,
    method,
    n,
  };
  if (filterPending) {
    const run = filterPending;
    let mod: StateSpace | null = null;
    Object.defineProperty(out, 'mod', {
      enumerable: true,
      get: () => {
        if (!mod) {
          run();
          mod = finalMod;
        }
        return mod;
      },
    });
  }
  if (varianceCheck) {
    const check = varianceCheck;
    if (hessian === 'deferred') {
      out.checkVariance = () => {
        out.badVariance = check();
        out.checkVariance = null;
        return out.badVariance;
      };
    } else out.badVariance = check();
  }
  return out;
}

/** x differenced d times at lag 1 and D times at lag m (shorter by d + D m). */
function differencedSeries(x: readonly number[], arma: Arma): Float64Array {
  let v = x.slice();
  if (arma.d > 0) v = diff(v, 1, arma.d);
  if (arma.D > 0) v = diff(v, arma.m, arma.D);
  return Float64Array.from(v);
}

function splice(target: number[], at: number, values: readonly number[]): void {
  for (let i = 0; i < values.length; i++) target[at + i] = values[i]!;
}

/** checkarima: var = A' solve(H n) A has a negative (NaN sqrt) diagonal, or H is singular. */
function varianceBad(H: number[][], A: number[][] | null, nUsed: number): boolean {
  const k = H.length;
  if (k === 0) return false;
  const Hn = H.map((row) => row.map((v) => v * nUsed));
  const rhs = A ?? H.map((_, i) => H.map((__, j) => (i === j ? 1 : 0)));
  const sol = solve(Hn, rhs);
  if (!sol) return true;
  for (let j = 0; j < k; j++) {
    // diag(A' sol)_j = sum_i A[i][j] sol[i][j]
    let v = 0;
    for (let i = 0; i < k; i++) v += rhs[i]![j]! * sol[i]![j]!;
    if (!(v >= 0)) return true;
  }
  return false;
}

export type InfoCriterion = 'aicc' | 'aic' | 'bic';

/**
 * forecast's myarima: fit, information criteria, unit-root and variance checks; ic Infinity on
 * failure. The variance check (a numerical Hessian, as many likelihood evaluations as the fit
 * itself) only runs when the candidate's criterion is below `icBound`: a caller that only asks
 * "is this better than icBound?" gets R's answer without paying for candidates that lose anyway
 * (the check can only raise ic to Infinity). The default bound, Infinity, always runs it.
 */
export function myarima(
  x: readonly number[],
  arma: Arma,
  constant: boolean,
  ic: InfoCriterion,
  approximation: boolean,
  offset: number,
  hessian: boolean,
  icBound = Infinity,
): ArimaFit | null {
  const n = x.filter((v) => !Number.isNaN(v)).length;
  const diffs = arma.d + arma.D;
  const method: ArimaMethod = approximation ? 'CSS' : 'CSS-ML';
  let fit: ArimaFit;
  try {
    const reg = constant ? (diffs === 1 ? 'drift' : diffs === 0 ? 'mean' : 'none') : 'none';
    fit = arima(x, arma, reg, method, undefined, hessian ? 'deferred' : false);
  } catch {
    // R's myarima: any failure of the fit makes the candidate's criterion infinite.
    return null;
  }
  const nstar = n - arma.d - arma.D * arma.m;
  const npar = arma.p + arma.q + arma.P + arma.Q + (fit.regressor === 'none' ? 0 : 1) + 1;
  if (method === 'CSS') fit.aic = fit.sigma2 <= 0 ? -Infinity : offset + nstar * Math.log(fit.sigma2) + 2 * npar;
  if (!Number.isNaN(fit.aic)) {
    fit.bic = fit.aic + npar * (Math.log(nstar) - 2);
    fit.aicc = nstar - npar - 1 !== 0 ? fit.aic + (2 * npar * (npar + 1)) / (nstar - npar - 1) : Infinity;
    fit.ic = ic === 'aicc' ? fit.aicc : ic === 'aic' ? fit.aic : fit.bic;
  } else {
    fit.ic = fit.aic = fit.bic = fit.aicc = Infinity;
  }
  let ss = 0;
  for (const r of fit.residuals) if (!Number.isNaN(r)) ss += r * r;
  fit.sigma2 = ss / (nstar - npar + 1);
  let minroot = 2;
  if (arma.p + arma.P > 0) minroot = Math.min(minroot, minRootModulus(Array.from(fit.polys.phi).map((v) => -v)));
  if (arma.q + arma.Q > 0 && fit.ic < Infinity) minroot = Math.min(minroot, minRootModulus(Array.from(fit.polys.theta)));
  if (minroot < 1 + 1e-2) fit.ic = Infinity;
  else if (fit.ic < icBound && fit.checkVariance?.()) fit.ic = Infinity;
  return fit;
}

/** Smallest root modulus of 1 + c_1 z + ... (truncated after its last coefficient above 1e-8), 2 when none. */
function minRootModulus(c: readonly number[]): number {
  let last = -1;
  for (let i = 0; i < c.length; i++) if (Math.abs(c[i]!) > 1e-8) last = i;
  if (last < 0) return 2;
  // R's test: max(which(abs(testvec) > 1e-8)) > 0 in 1-based terms, i.e. any such coefficient.
  const roots = polyRoots([1, ...c.slice(0, last + 1)]);
  let m = Infinity;
  for (const z of roots) m = Math.min(m, Math.hypot(z.re, z.im));
  return m;
}

export interface AutoArimaOptions {
  seasonalPeriod: number;
  maxP?: number;
  maxQ?: number;
  maxSP?: number;
  maxSQ?: number;
  maxD?: number;
  maxSD?: number;
  startP?: number;
  startQ?: number;
  startSP?: number;
  startSQ?: number;
  ic?: InfoCriterion;
  nmodels?: number;
  /** Default as R: length > 150 or period > 12. */
  approximation?: boolean;
  /** R's checkarima via the numerical Hessian (default true). */
  hessian?: boolean;
}

export interface AutoArimaResult {
  fit: ArimaFit;
  /** The series the model was fitted to (leading missing values removed). */
  x: number[];
  constantSeries: boolean;
  modelsTried: number;
}

/** forecast::auto.arima(x, stepwise = TRUE) for a series without regressors. Throws ArimaError when no model fits. */
export function autoArima(x0: readonly number[], opts: AutoArimaOptions): AutoArimaResult {
  const firstObs = x0.findIndex((v) => !Number.isNaN(v));
  if (firstObs < 0) throw new ArimaError('all data are missing');
  let lastObs = x0.length - 1;
  while (Number.isNaN(x0[lastObs]!)) lastObs--;
  const x = x0.slice(firstObs);
  const serieslength = x0.slice(firstObs, lastObs + 1).filter((v) => !Number.isNaN(v)).length;
  const m = Math.max(1, Math.round(opts.seasonalPeriod));
  const hessian = opts.hessian ?? true;
  let ic: InfoCriterion = opts.ic ?? 'aicc';
  const obs = x.filter((v) => !Number.isNaN(v));
  if (isConstant(obs)) {
    const mean = obs[0]!;
    const fit = arima(x, { p: 0, q: 0, P: 0, Q: 0, m, d: 0, D: 0 }, 'mean', 'CSS-ML', [mean], false);
    return { fit, x, constantSeries: true, modelsTried: 1 };
  }
  let maxP = Math.min(opts.maxP ?? 5, Math.floor(serieslength / 3));
  let maxQ = Math.min(opts.maxQ ?? 5, Math.floor(serieslength / 3));
  let maxSP = Math.min(opts.maxSP ?? 2, Math.floor(serieslength / 3 / m));
  let maxSQ = Math.min(opts.maxSQ ?? 2, Math.floor(serieslength / 3 / m));
  if (serieslength <= 3) ic = 'aic';
  const approximation = opts.approximation ?? (x.length > 150 || m > 12);
  const nmodels = opts.nmodels ?? 94;
  let D: number;
  if (m === 1) {
    D = 0;
    maxSP = 0;
    maxSQ = 0;
  } else if (x.length <= 2 * m) D = 0;
  else {
    D = nsdiffs(
      x.filter((v) => !Number.isNaN(v)),
      m,
      opts.maxSD ?? 1,
    );
    if (D > 0 && diff(x, m, D).every((v) => Number.isNaN(v))) D--;
  }
  let dx = D > 0 ? diff(x, m, D) : x.slice();
  let d = ndiffs(dx, opts.maxD ?? 2);
  if (d > 0 && diff(dx, 1, d).every((v) => Number.isNaN(v))) d--;
  if (d > 0) dx = diff(dx, 1, d);
  const dxObs = dx.filter((v) => !Number.isNaN(v));
  if (dxObs.length === 0) throw new ArimaError('not enough data to proceed');
  if (isConstant(dxObs)) {
    // The differenced series is constant: R fits the corresponding exact model.
    const arma: Arma = { p: 0, q: 0, P: 0, Q: 0, m, d, D };
    let fit: ArimaFit;
    if (D > 0 && d === 0) fit = arima(x, arma, 'drift', 'CSS-ML', [dxObs[0]! / m], false);
    else if (D > 0 || d === 2) fit = arima(x, arma, 'none', 'CSS-ML', [], false);
    else if (d < 2) fit = arima(x, arma, d === 1 ? 'drift' : 'mean', 'CSS-ML', [dxObs[0]!], false);
    else throw new ArimaError('data follow a simple polynomial and are not suitable for ARIMA modelling');
    return { fit, x, constantSeries: false, modelsTried: 1 };
  }
  if (m > 1) {
    if (maxP > 0) maxP = Math.min(maxP, m - 1);
    if (maxQ > 0) maxQ = Math.min(maxQ, m - 1);
  }
  let offset = 0;
  if (approximation) {
    try {
      const f0 = arima(x, { p: 0, q: 0, P: 0, Q: 0, m, d, D }, 'mean', 'CSS-ML', undefined, false);
      offset = -2 * f0.loglik - serieslength * Math.log(f0.sigma2);
    } catch {
      offset = 0;
    }
  }
  const allowDrift = d + D === 1;
  const allowMean = d + D === 0;
  let constant = allowDrift || allowMean;
  let startP = opts.startP ?? 2;
  let startQ = opts.startQ ?? 2;
  let startSP = opts.startSP ?? 1;
  let startSQ = opts.startSQ ?? 1;
  if (x.length < 10) {
    startP = Math.min(startP, 1);
    startQ = Math.min(startQ, 1);
    startSP = 0;
    startSQ = 0;
  }
  let p = Math.min(startP, maxP);
  let q = Math.min(startQ, maxQ);
  let P = Math.min(startSP, maxSP);
  let Q = Math.min(startSQ, maxSQ);

  const results: { p: number; q: number; P: number; Q: number; c: boolean; ic: number }[] = [];
  const icOf = (f: ArimaFit | null): number => (f ? f.ic : Infinity);
  // Without the approximation a candidate only matters if it beats the best so far, so its
  // variance check runs only then (myarima's icBound); with it, every criterion is kept for
  // the re-fitting order below and each is checked.
  const fitOne = (pp: number, qq: number, PP: number, QQ: number, c: boolean, bound: number): ArimaFit | null => {
    const f = myarima(x, { p: pp, q: qq, P: PP, Q: QQ, m, d, D }, c, ic, approximation, offset, hessian, approximation ? Infinity : bound);
    results.push({ p: pp, q: qq, P: PP, Q: QQ, c, ic: icOf(f) });
    return f;
  };
  const seen = (pp: number, qq: number, PP: number, QQ: number, c: boolean): boolean =>
    results.some((r) => r.p === pp && r.q === qq && r.P === PP && r.Q === QQ && r.c === c);

  let bestfit = fitOne(p, q, P, Q, constant, Infinity);
  let fit = fitOne(0, 0, 0, 0, constant, icOf(bestfit));
  if (icOf(fit) < icOf(bestfit)) {
    bestfit = fit;
    p = q = P = Q = 0;
  }
  if (maxP > 0 || maxSP > 0) {
    const pp = maxP > 0 ? 1 : 0;
    const PP = m > 1 && maxSP > 0 ? 1 : 0;
    fit = fitOne(pp, 0, PP, 0, constant, icOf(bestfit));
    if (icOf(fit) < icOf(bestfit)) {
      bestfit = fit;
      p = pp;
      P = PP;
      q = Q = 0;
    }
  }
  if (maxQ > 0 || maxSQ > 0) {
    const qq = maxQ > 0 ? 1 : 0;
    const QQ = m > 1 && maxSQ > 0 ? 1 : 0;
    fit = fitOne(0, qq, 0, QQ, constant, icOf(bestfit));
    if (icOf(fit) < icOf(bestfit)) {
      bestfit = fit;
      p = P = 0;
      q = qq;
      Q = QQ;
    }
  }
  if (constant) {
    fit = fitOne(0, 0, 0, 0, false, icOf(bestfit));
    if (icOf(fit) < icOf(bestfit)) {
      bestfit = fit;
      p = q = P = Q = 0;
      // R leaves `constant` as it was here (a quirk kept for fidelity).
    }
  }
  let startk = 0;
  while (startk < results.length && results.length < nmodels) {
    startk = results.length;
    // Neighbours in R's order: seasonal moves, then non-seasonal, then the constant.
    const moves: [number, number, number, number, boolean][] = [
      [p, q, P - 1, Q, P > 0],
      [p, q, P, Q - 1, Q > 0],
      [p, q, P + 1, Q, P < maxSP],
      [p, q, P, Q + 1, Q < maxSQ],
      [p, q, P - 1, Q - 1, Q > 0 && P > 0],
      [p, q, P - 1, Q + 1, Q < maxSQ && P > 0],
      [p, q, P + 1, Q - 1, Q > 0 && P < maxSP],
      [p, q, P + 1, Q + 1, Q < maxSQ && P < maxSP],
      [p - 1, q, P, Q, p > 0],
      [p, q - 1, P, Q, q > 0],
      [p + 1, q, P, Q, p < maxP],
      [p, q + 1, P, Q, q < maxQ],
      [p - 1, q - 1, P, Q, q > 0 && p > 0],
      [p - 1, q + 1, P, Q, q < maxQ && p > 0],
      [p + 1, q - 1, P, Q, q > 0 && p < maxP],
      [p + 1, q + 1, P, Q, q < maxQ && p < maxP],
    ];
    let improved = false;
    for (const [pp, qq, PP, QQ, ok] of moves) {
      if (!ok || seen(pp, qq, PP, QQ, constant)) continue;
      if (results.length >= nmodels) break;
      fit = fitOne(pp, qq, PP, QQ, constant, icOf(bestfit));
      if (icOf(fit) < icOf(bestfit)) {
        bestfit = fit;
        p = pp;
        q = qq;
        P = PP;
        Q = QQ;
        improved = true;
        break;
      }
    }
    if (improved) continue;
    if ((allowDrift || allowMean) && !seen(p, q, P, Q, !constant) && results.length < nmodels) {
      fit = fitOne(p, q, P, Q, !constant, icOf(bestfit));
      if (icOf(fit) < icOf(bestfit)) {
        bestfit = fit;
        constant = !constant;
      }
    }
  }
  if (approximation && bestfit) {
    // Re-fit the candidates, best first, without the approximation; keep the first that works.
    const order = results
      .map((_r, i) => i)
      .filter((i) => !Number.isNaN(results[i]!.ic))
      .sort((a, b) => results[a]!.ic - results[b]!.ic);
    bestfit = null;
    for (const i of order) {
      const r = results[i]!;
      const f = myarima(x, { p: r.p, q: r.q, P: r.P, Q: r.Q, m, d, D }, r.c, ic, false, 0, hessian);
      if (f && f.ic < Infinity) {
        bestfit = f;
        break;
      }
    }
  }
  if (!bestfit || !(bestfit.ic < Infinity)) throw new ArimaError('no suitable ARIMA model found');
  return { fit: bestfit, x, constantSeries: false, modelsTried: results.length };
}

/** forecast.Arima: mean and standard errors (sqrt of the Kalman variance times sigma2). */
export function forecastArima(res: AutoArimaResult, h: number): { mean: number[]; se: number[] } {
  const { fit, x } = res;
  if (isConstant(x.filter((v) => !Number.isNaN(v)))) {
    const v = x.find((y) => !Number.isNaN(y))!;
    return { mean: new Array<number>(h).fill(v), se: new Array<number>(h).fill(0) };
  }
  const narma = fit.arma.p + fit.arma.q + fit.arma.P + fit.arma.Q;
  const { pred, variance } = kalmanForecast(h, fit.mod);
  const b = fit.regressor === 'none' ? 0 : fit.coef[narma]!;
  const n = fit.n;
  const mean = pred.map((v, i) => v + (fit.regressor === 'drift' ? b * (n + i + 1) : fit.regressor === 'mean' ? b : 0));
  const se = variance.map((v) => Math.sqrt(Math.max(0, v) * fit.sigma2));
  return { mean, se };
}

/** "ARIMA(p,d,q)(P,D,Q)[m] with drift" as R prints it. */
export function arimaString(fit: ArimaFit): string {
  const a = fit.arma;
  let s = `ARIMA(${a.p},${a.d},${a.q})`;
  if (a.m > 1 && a.P + a.D + a.Q > 0) s += `(${a.P},${a.D},${a.Q})[${a.m}]`;
  if (fit.regressor === 'drift') s += ' with drift';
  else if (fit.regressor === 'mean') s += ' with non-zero mean';
  else if (a.d + a.D === 0) s += ' with zero mean';
  return s;
}
