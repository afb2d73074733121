/**
 * The numerical core of R's `stats::arima` (R src/library/stats/src/arima.c and R/arima.R),
 * ported to TypeScript: parameter transforms that keep AR parts stationary, the conditional sum
 * of squares, the exact Gaussian likelihood by the Kalman filter on Gardner et al.'s (1980)
 * state-space form with a diffuse prior (kappa) for the differenced part, and Kalman
 * prediction. Function names follow R's C entry points (ARIMA_transPars, ARIMA_CSS, ARIMA_Like,
 * getQ0, KalmanFore). Matrices are flat, column-major, as in R.
 */

/** arma = (p, q, P, Q, m, d, D), R's `arima()$arma`. */
export interface Arma {
  p: number;
  q: number;
  P: number;
  Q: number;
  m: number;
  d: number;
  D: number;
}

/**
 * Scratch buffers for the likelihood hot loops (called thousands of times per series): grown on
 * demand, never shared across a call boundary (the functions using them are synchronous and do
 * not call each other while holding one).
 */
const scratchBufs: Float64Array[] = [];
const nzBufs: Int32Array[] = [];
/** Indices of the non-zero entries of v (a scratch Int32Array per slot) and their count. */
function nonZero(slot: number, v: ArrayLike<number>): [Int32Array, number] {
  let b = nzBufs[slot];
  if (!b || b.length < v.length) {
    b = new Int32Array(Math.max(v.length, 64));
    nzBufs[slot] = b;
  }
  let k = 0;
  for (let i = 0; i < v.length; i++) if (v[i] !== 0) b[k++] = i;
  return [b, k];
}

function scratch(slot: number, len: number): Float64Array {
  let b = scratchBufs[slot];
  if (!b || b.length < len) {
    b = new Float64Array(Math.max(len, 64));
    scratchBufs[slot] = b;
  }
  return b;
}

/** R's partrans: tanh then Durbin-Levinson, maps R^p onto the stationary region. */
export function partrans(raw: ArrayLike<number>, off: number, p: number, out: number[]): void {
  const nw = new Array<number>(p);
  for (let j = 0; j < p; j++) nw[j] = Math.tanh(raw[off + j]!);
  const work = nw.slice();
  for (let j = 1; j < p; j++) {
    const a = nw[j]!;
    for (let k = 0; k < j; k++) work[k] = work[k]! - a * nw[j - k - 1]!;
    for (let k = 0; k < j; k++) nw[k] = work[k]!;
  }
  for (let j = 0; j < p; j++) out[off + j] = nw[j]!;
}

/** R's invpartrans: the inverse of partrans (NaN outside the stationary region). */
export function invpartrans(phi: ArrayLike<number>, off: number, p: number, out: number[]): void {
  const nw = new Array<number>(p);
  for (let j = 0; j < p; j++) nw[j] = phi[off + j]!;
  const work = nw.slice();
  for (let j = p - 1; j > 0; j--) {
    const a = nw[j]!;
    for (let k = 0; k < j; k++) work[k] = (nw[k]! + a * nw[j - k - 1]!) / (1 - a * a);
    for (let k = 0; k < j; k++) nw[k] = work[k]!;
  }
  for (let j = 0; j < p; j++) out[off + j] = Math.atanh(nw[j]!);
}

/** ARIMA_Invtrans: AR and seasonal AR blocks to the unconstrained scale, the rest unchanged. */
export function arimaInvtrans(par: readonly number[], arma: Arma): number[] {
  const out = par.slice();
  if (arma.p > 0) invpartrans(par, 0, arma.p, out);
  if (arma.P > 0) invpartrans(par, arma.p + arma.q, arma.P, out);
  return out;
}

/** ARIMA_undoPars: AR and seasonal AR blocks back from the unconstrained scale. */
export function arimaUndoPars(par: readonly number[], arma: Arma): number[] {
  const out = par.slice();
  if (arma.p > 0) partrans(par, 0, arma.p, out);
  if (arma.P > 0) partrans(par, arma.p + arma.q, arma.P, out);
  return out;
}

/** ARIMA_Gradtrans: Jacobian of undoPars by forward differences (eps 1e-3), row i = d/d par_i. */
export function arimaGradtrans(par: readonly number[], arma: Arma): number[][] {
  const n = par.length;
  const eps = 1e-3;
  const A: number[][] = Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => (i === j ? 1 : 0)));
  const block = (off: number, k: number): void => {
    if (k === 0) return;
    const w1 = par.slice(off, off + k);
    const w2 = new Array<number>(k);
    const w3 = new Array<number>(k);
    partrans(w1, 0, k, w2);
    for (let i = 0; i < k; i++) {
      w1[i] = w1[i]! + eps;
      partrans(w1, 0, k, w3);
      for (let j = 0; j < k; j++) A[off + i]![off + j] = (w3[j]! - w2[j]!) / eps;
      w1[i] = w1[i]! - eps;
    }
  };
  block(0, arma.p);
  block(arma.p + arma.q, arma.P);
  return A;
}

/** ARIMA_transPars: expands (ar, ma, sar, sma) into the full phi and theta polynomials. */
export function transPars(par: readonly number[], arma: Arma, trans: boolean): { phi: Float64Array; theta: Float64Array } {
  const { p: mp, q: mq, P: msp, Q: msq, m: ns } = arma;
  const p = mp + ns * msp;
  const q = mq + ns * msq;
  const params = par.slice();
  if (trans) {
    if (mp > 0) partrans(par, 0, mp, params);
    if (msp > 0) partrans(par, mp + mq, msp, params);
  }
  const phi = new Float64Array(p);
  const theta = new Float64Array(q);
  for (let i = 0; i < mp; i++) phi[i] = params[i]!;
  for (let i = 0; i < mq; i++) theta[i] = params[i + mp]!;
  if (ns > 0) {
    for (let j = 0; j < msp; j++) {
      const s = params[j + mp + mq]!;
      phi[(j + 1) * ns - 1] = phi[(j + 1) * ns - 1]! + s;
      for (let i = 0; i < mp; i++) phi[(j + 1) * ns + i] = phi[(j + 1) * ns + i]! - params[i]! * s;
    }
    for (let j = 0; j < msq; j++) {
      const s = params[j + mp + mq + msp]!;
      theta[(j + 1) * ns - 1] = theta[(j + 1) * ns - 1]! + s;
      for (let i = 0; i < mq; i++) theta[(j + 1) * ns + i] = theta[(j + 1) * ns + i]! + params[i + mp]! * s;
    }
  }
  return { phi, theta };
}

/**
 * transPars into caller-owned phi (length p + m P) and theta (length q + m Q) buffers, for the
 * optimiser's objective functions (no allocation but partrans' small work arrays).
 */
export function transParsInto(par: readonly number[], arma: Arma, trans: boolean, phi: Float64Array, theta: Float64Array): void {
  const { p: mp, q: mq, P: msp, Q: msq, m: ns } = arma;
  let params: readonly number[] = par;
  if (trans && (mp > 0 || msp > 0)) {
    const t = par.slice();
    if (mp > 0) partrans(par, 0, mp, t);
    if (msp > 0) partrans(par, mp + mq, msp, t);
    params = t;
  }
  phi.fill(0);
  theta.fill(0);
  for (let i = 0; i < mp; i++) phi[i] = params[i]!;
  for (let i = 0; i < mq; i++) theta[i] = params[i + mp]!;
  if (ns > 0) {
    for (let j = 0; j < msp; j++) {
      const s = params[j + mp + mq]!;
      phi[(j + 1) * ns - 1] = phi[(j + 1) * ns - 1]! + s;
      for (let i = 0; i < mp; i++) phi[(j + 1) * ns + i] = phi[(j + 1) * ns + i]! - params[i]! * s;
    }
    for (let j = 0; j < msq; j++) {
      const s = params[j + mp + mq + msp]!;
      theta[(j + 1) * ns - 1] = theta[(j + 1) * ns - 1]! + s;
      for (let i = 0; i < mq; i++) theta[(j + 1) * ns + i] = theta[(j + 1) * ns + i]! + params[i + mp]! * s;
    }
  }
}

/** Differences x (lag 1, d times; lag m, D times) in place of a copy, as ARIMA_CSS does. */
function differenced(y: ArrayLike<number>, arma: Arma): Float64Array {
  const n = y.length;
  const w = Float64Array.from(y as ArrayLike<number>);
  for (let k = 0; k < arma.d; k++) for (let l = n - 1; l > 0; l--) w[l] = w[l]! - w[l - 1]!;
  for (let k = 0; k < arma.D; k++) for (let l = n - 1; l >= arma.m; l--) w[l] = w[l]! - w[l - arma.m]!;
  return w;
}

/** ARIMA_CSS: conditional sum of squares / nu, and the residuals. */
export function arimaCss(y: ArrayLike<number>, arma: Arma, phi: Float64Array, theta: Float64Array): { s2: number; resid: Float64Array } {
  const n = y.length;
  const p = phi.length;
  const q = theta.length;
  const ncond = arma.p + arma.d + arma.m * (arma.P + arma.D);
  const w = differenced(y, arma);
  const resid = new Float64Array(n);
  let ssq = 0;
  let nu = 0;
  for (let l = ncond; l < n; l++) {
    let tmp = w[l]!;
    for (let j = 0; j < p; j++) tmp -= phi[j]! * w[l - j - 1]!;
    const jmax = Math.min(l - ncond, q);
    for (let j = 0; j < jmax; j++) tmp -= theta[j]! * resid[l - j - 1]!;
    resid[l] = tmp;
    if (!Number.isNaN(tmp)) {
      nu++;
      ssq += tmp * tmp;
    }
  }
  return { s2: ssq / nu, resid };
}

/** x differenced as ARIMA_CSS does it (same length, leading values left as they are). */
export function cssDifferenced(y: ArrayLike<number>, arma: Arma): Float64Array {
  return differenced(y, arma);
}

/**
 * ARIMA_CSS's s2 only, on data already passed through cssDifferenced (what the optimiser
 * evaluates; the residuals go to a scratch buffer).
 */
export function arimaCssValue(w: ArrayLike<number>, arma: Arma, phi: Float64Array, theta: Float64Array): number {
  const n = w.length;
  const q = theta.length;
  const ncond = arma.p + arma.d + arma.m * (arma.P + arma.D);
  const resid = scratch(9, n);
  // Seasonal polynomials are mostly zeros: loop over the non-zero lags only.
  const [nzP, np] = nonZero(0, phi);
  const [nzQ, nq] = nonZero(1, theta);
  let ssq = 0;
  let nu = 0;
  for (let l = ncond; l < n; l++) {
    let tmp = w[l]!;
    for (let k = 0; k < np; k++) {
      const j = nzP[k]!;
      tmp -= phi[j]! * w[l - j - 1]!;
    }
    const jmax = Math.min(l - ncond, q);
    for (let k = 0; k < nq; k++) {
      const j = nzQ[k]!;
      if (j >= jmax) break;
      tmp -= theta[j]! * resid[l - j - 1]!;
    }
    resid[l] = tmp;
    if (!Number.isNaN(tmp)) {
      nu++;
      ssq += tmp * tmp;
    }
  }
  return ssq / nu;
}

/** The state-space model of makeARIMA; `a`, `P` and `Pn` are changed by the filter (as in R). */
export interface StateSpace {
  phi: Float64Array;
  /** Padded with zeros to length r - 1. */
  theta: Float64Array;
  delta: Float64Array;
  r: number;
  rd: number;
  a: Float64Array;
  P: Float64Array;
  Pn: Float64Array;
  kappa: number;
}

/** Delta: the coefficients of the differencing polynomial, negated and without the leading 1. */
export function deltaPoly(arma: Arma): Float64Array {
  let poly = [1];
  const mul = (b: number[]): void => {
    const out = new Array<number>(poly.length + b.length - 1).fill(0);
    for (let i = 0; i < poly.length; i++) for (let j = 0; j < b.length; j++) out[i + j]! += poly[i]! * b[j]!;
    poly = out;
  };
  for (let i = 0; i < arma.d; i++) mul([1, -1]);
  for (let i = 0; i < arma.D; i++) {
    const s = new Array<number>(arma.m + 1).fill(0);
    s[0] = 1;
    s[arma.m] = -1;
    mul(s);
  }
  return Float64Array.from(poly.slice(1).map((v) => -v));
}

/** makeARIMA (Gardner1980 initial covariance). */
export function makeArima(phi: Float64Array, theta0: Float64Array, delta: Float64Array, kappa = 1e6): StateSpace {
  const p = phi.length;
  const q0 = theta0.length;
  const r = Math.max(p, q0 + 1);
  const d = delta.length;
  const rd = r + d;
  const theta = new Float64Array(r - 1);
  theta.set(theta0.subarray(0, Math.min(q0, r - 1)));
  const mod: StateSpace = {
    phi,
    theta,
    delta,
    r,
    rd,
    a: new Float64Array(rd),
    P: new Float64Array(rd * rd),
    Pn: new Float64Array(rd * rd),
    kappa,
  };
  resetState(mod);
  return mod;
}

/** upARIMA plus a fresh Pn: the initial state and covariance for a new pass of the filter. */
export function resetState(mod: StateSpace): void {
  const { r, rd, phi, theta } = mod;
  mod.a.fill(0);
  mod.Pn.fill(0);
  if (r > 1) {
    const q0 = stationaryCov(phi, theta, r);
    for (let j = 0; j < r; j++) for (let i = 0; i < r; i++) mod.Pn[i + rd * j] = q0[i + r * j]!;
  } else {
    mod.Pn[0] = phi.length > 0 ? 1 / (1 - phi[0]! * phi[0]!) : 1;
  }
  for (let i = r; i < rd; i++) mod.Pn[i + rd * i] = mod.kappa;
}

/**
 * Row 0 of stationaryCov (cov(y_t, a_k), k < r): what the Chandrasekhar filter below needs,
 * computed from psi weights and autocovariances only, O(p^3 + r (p + q)).
 */
export function stationaryRow0(phi: ArrayLike<number>, theta: ArrayLike<number>, r: number, into?: Float64Array): Float64Array {
  const p = phi.length;
  const q = theta.length;
  // theta_0 = 1, theta_j for 1 <= j <= q, 0 beyond.
  const th = scratch(0, Math.max(r, q + 1) + 1);
  th.fill(0);
  th[0] = 1;
  for (let j = 1; j <= q; j++) th[j] = theta[j - 1]!;
  // psi weights psi_0..psi_r and autocovariances gamma(0..r).
  const psi = scratch(1, r + 1);
  for (let j = 0; j <= r; j++) {
    let v = th[j]!;
    const kmax = Math.min(j, p);
    for (let k = 1; k <= kmax; k++) v += phi[k - 1]! * psi[j - k]!;
    psi[j] = v;
  }
  // rhs_k = sum_{j=k}^{q} theta_j psi_{j-k}
  const rhs = (k: number): number => {
    let v = 0;
    for (let j = k; j <= q; j++) v += th[j]! * psi[j - k]!;
    return v;
  };
  const gamma = scratch(2, r + 1);
  if (p > 0) {
    // gamma(k) - sum_j phi_j gamma(|k - j|) = rhs_k, k = 0..p: Gaussian elimination with
    // partial pivoting on a flat (p + 1) x (p + 2) row-major matrix.
    const w = p + 2;
    const A = scratch(3, (p + 1) * w);
    A.fill(0, 0, (p + 1) * w);
    for (let k = 0; k <= p; k++) {
      const o = k * w;
      A[o + k] = A[o + k]! + 1;
      for (let j = 1; j <= p; j++) {
        const idx = o + Math.abs(k - j);
        A[idx] = A[idx]! - phi[j - 1]!;
      }
      A[o + p + 1] = rhs(k);
    }
    for (let c = 0; c <= p; c++) {
      let piv = c;
      for (let r2 = c + 1; r2 <= p; r2++) if (Math.abs(A[r2 * w + c]!) > Math.abs(A[piv * w + c]!)) piv = r2;
      if (piv !== c) {
        for (let j = 0; j < w; j++) {
          const t = A[piv * w + j]!;
          A[piv * w + j] = A[c * w + j]!;
          A[c * w + j] = t;
        }
      }
      const oc = c * w;
      const pv = A[oc + c]!;
      for (let r2 = c + 1; r2 <= p; r2++) {
        const o = r2 * w;
        const f = A[o + c]! / pv;
        if (f === 0) continue;
        for (let j = c; j < w; j++) A[o + j] = A[o + j]! - f * A[oc + j]!;
      }
    }
    const sol = scratch(4, p + 1);
    for (let c = p; c >= 0; c--) {
      const o = c * w;
      let v = A[o + p + 1]!;
      for (let j = c + 1; j <= p; j++) v -= A[o + j]! * sol[j]!;
      sol[c] = v / A[o + c]!;
    }
    for (let k = 0; k <= Math.min(p, r); k++) gamma[k] = sol[k]!;
    for (let k = p + 1; k <= r; k++) {
      let v = rhs(k);
      for (let j = 1; j <= p; j++) v += phi[j - 1]! * gamma[k - j]!;
      gamma[k] = v;
    }
  } else {
    for (let k = 0; k <= r; k++) gamma[k] = rhs(k);
  }
  // cov(y_t, a_k) = sum_{l>=k} phi_l gamma(1 + l - k) + theta_l psi_{l-k}.
  const out = into ?? new Float64Array(r);
  const pr = Math.min(p, r);
  for (let k = 0; k < r; k++) {
    let v = 0;
    for (let l = k; l < pr; l++) v += phi[l]! * gamma[1 + l - k]!;
    const lmax = Math.min(r - 1, q);
    for (let l = k; l <= lmax; l++) v += th[l]! * psi[l - k]!;
    out[k] = v;
  }
  return out;
}

/**
 * The same matrix as getQ0 (the stationary covariance of the ARMA state, sigma^2 = 1), from
 * the process' autocovariances and psi weights instead of Gardner's AS 154 regression: state
 * element i is a_i = sum_{j>=i} phi_j y_{t-1-(j-i)} + theta_j e_{t-(j-i)} (theta_0 = 1), so
 * cov(a_i, a_k) is a double sum over the non-zero coefficients only. AS 154 costs O(r^6) and
 * dominated the run time for seasonal models (r = 25 for a seasonal AR(2) at m = 12); this
 * costs O(r^2 nz^2) with nz the number of non-zero coefficients. Tests compare it with getQ0.
 */
export function stationaryCov(phi: ArrayLike<number>, theta: ArrayLike<number>, r: number): Float64Array {
  const p = phi.length;
  const q = theta.length;
  const th = (j: number): number => (j === 0 ? 1 : j - 1 < q ? theta[j - 1]! : 0);
  const out = new Float64Array(r * r);
  const row = stationaryRow0(phi, theta, r);
  for (let k = 0; k < r; k++) {
    out[r * k] = row[k]!;
    out[k] = row[k]!;
  }
  // The rest from stationarity, P = T P T' + R R' (T companion):
  // P[i][k] = P[i+1][k+1] + phi_i P[0][k+1] + phi_k P[0][i+1] + phi_i phi_k P[0][0] + R_i R_k.
  const P00 = out[0]!;
  const row0 = (j: number): number => (j < r ? out[j]! : 0);
  for (let i = r - 1; i >= 1; i--) {
    const fi = i < p ? phi[i]! : 0;
    const ri = th(i);
    for (let k = r - 1; k >= i; k--) {
      const fk = k < p ? phi[k]! : 0;
      const next = i + 1 < r && k + 1 < r ? out[i + 1 + r * (k + 1)]! : 0;
      const v = next + fi * row0(k + 1) + fk * row0(i + 1) + fi * fk * P00 + ri * th(k);
      out[i + r * k] = v;
      out[k + r * i] = v;
    }
  }
  return out;
}

/** getQ0: the stationary covariance of the ARMA state (Gardner, Harvey & Phillips 1980, AS 154). */
export function getQ0(phi: ArrayLike<number>, theta: ArrayLike<number>): Float64Array {
  const p = phi.length;
  const q = theta.length;
  const r = Math.max(p, q + 1);
  const np = (r * (r + 1)) / 2;
  const nrbar = (np * (np - 1)) / 2;
  const res = new Float64Array(Math.max(r * r, np));
  const V = new Float64Array(np);
  {
    let ind = 0;
    for (let j = 0; j < r; j++) {
      const vj = j === 0 ? 1 : j - 1 < q ? theta[j - 1]! : 0;
      for (let i = j; i < r; i++) {
        const vi = i === 0 ? 1 : i - 1 < q ? theta[i - 1]! : 0;
        V[ind++] = vi * vj;
      }
    }
  }
  if (r === 1) {
    res[0] = p === 0 ? 1 : 1 / (1 - phi[0]! * phi[0]!);
    return res.subarray(0, 1);
  }
  if (p > 0) {
    const rbar = new Float64Array(nrbar);
    const thetab = new Float64Array(np);
    const xnext = new Float64Array(np);
    const xrow = new Float64Array(np);
    let ind = 0;
    let ind1 = -1;
    const npr = np - r;
    const npr1 = npr + 1;
    let indj = npr;
    let ind2 = npr - 1;
    for (let j = 0; j < r; j++) {
      const phij = j < p ? phi[j]! : 0;
      let indi = npr1 + j;
      xnext[indj++] = 0;
      for (let i = j; i < r; i++) {
        const ynext = V[ind++]!;
        const phii = i < p ? phi[i]! : 0;
        if (j !== r - 1) {
          xnext[indj] = -phii;
          if (i !== r - 1) {
            xnext[indi] = xnext[indi]! - phij;
            xnext[++ind1] = -1;
          }
        }
        xnext[npr] = -phii * phij;
        if (++ind2 >= np) ind2 = 0;
        xnext[ind2] = xnext[ind2]! + 1;
        inclu2(np, xnext, xrow, ynext, res, rbar, thetab);
        xnext[ind2] = 0;
        if (i !== r - 1) {
          xnext[indi++] = 0;
          xnext[ind1] = 0;
        }
      }
    }
    let ithisr = nrbar - 1;
    let im = np - 1;
    for (let i = 0; i < np; i++) {
      let bi = thetab[im]!;
      let jm = np - 1;
      for (let j = 0; j < i; j++) bi -= rbar[ithisr--]! * res[jm--]!;
      res[im--] = bi;
    }
    ind = npr;
    for (let i = 0; i < r; i++) xnext[i] = res[ind++]!;
    ind = np - 1;
    ind1 = npr - 1;
    for (let i = 0; i < npr; i++) res[ind--] = res[ind1--]!;
    for (let i = 0; i < r; i++) res[i] = xnext[i]!;
  } else {
    let ind = np;
    let indn = np;
    for (let i = 0; i < r; i++) {
      for (let j = 0; j < i + 1; j++) {
        --ind;
        res[ind] = V[ind]!;
        if (j !== 0) res[ind] = res[ind]! + res[--indn]!;
      }
    }
  }
  {
    let ind = np;
    for (let i = r - 1; i > 0; i--) for (let j = r - 1; j > i - 1; j--) res[r * i + j] = res[--ind]!;
    for (let i = 0; i < r - 1; i++) for (let j = i + 1; j < r; j++) res[i + r * j] = res[j + r * i]!;
  }
  return res.subarray(0, r * r);
}

function inclu2(np: number, xnext: Float64Array, xrow: Float64Array, ynext0: number, d: Float64Array, rbar: Float64Array, thetab: Float64Array): void {
  let ynext = ynext0;
  for (let i = 0; i < np; i++) xrow[i] = xnext[i]!;
  let ithisr = 0;
  for (let i = 0; i < np; i++) {
    if (xrow[i] !== 0) {
      const xi = xrow[i]!;
      const di = d[i]!;
      const dpi = di + xi * xi;
      d[i] = dpi;
      const cbar = dpi === 0 ? Infinity : di / dpi;
      const sbar = dpi === 0 ? Infinity : xi / dpi;
      for (let k = i + 1; k < np; k++) {
        const xk = xrow[k]!;
        const rbthis = rbar[ithisr]!;
        xrow[k] = xk - xi * rbthis;
        rbar[ithisr++] = cbar * rbthis + sbar * xk;
      }
      const xk = ynext;
      ynext = xk - xi * thetab[i]!;
      thetab[i] = cbar * thetab[i]! + sbar * xk;
      if (di === 0) return;
    } else {
      ithisr += np - i - 1;
    }
  }
}

export interface LikeResult {
  ssq: number;
  sumlog: number;
  nu: number;
  /** Standardised innovations (NaN where y is missing); only when asked for. */
  resid?: Float64Array;
}

/**
 * ARIMA_Like with up = 0: the Kalman filter over y starting from mod.a / mod.Pn; leaves the
 * filtered state at the last observation in mod.a / mod.P (what prediction starts from).
 */
export function arimaLike(y: ArrayLike<number>, mod: StateSpace, useResid: boolean, steadyState = false): LikeResult {
  const n = y.length;
  // Optional shortcut (used inside the optimiser, never for the final fit): without
  // differencing states and without missing values, once the innovation variance stops
  // changing (relative change below 1e-11) the covariance recursion has converged and is frozen;
  // each further step costs O(r) instead of O(r^2). Pure AR models converge after r steps.
  let canFreeze = steadyState && mod.delta.length === 0;
  if (canFreeze) for (let i = 0; i < n; i++) if (Number.isNaN(y[i]!)) canFreeze = false;
  let frozen = false;
  let prevGain = NaN;
  const { phi, theta, delta, r, rd, a, P } = mod;
  const Pnew = mod.Pn;
  const p = phi.length;
  const q = theta.length;
  const d = delta.length;
  let ssq = 0;
  let sumlog = 0;
  let nu = 0;
  const anew = new Float64Array(rd);
  const M = new Float64Array(rd);
  const mm = d > 0 ? new Float64Array(rd * rd) : new Float64Array(0);
  const rsResid = useResid ? new Float64Array(n) : undefined;
  const g = new Float64Array(r);
  const nzPhi: number[] = [];
  for (let i = 0; i < p; i++) if (phi[i] !== 0) nzPhi.push(i);
  const nzR: number[] = [0];
  for (let i = 1; i < r; i++) if (i - 1 < q && theta[i - 1] !== 0) nzR.push(i);
  for (let l = 0; l < n; l++) {
    for (let i = 0; i < r; i++) {
      let tmp = i < r - 1 ? a[i + 1]! : 0;
      if (i < p) tmp += phi[i]! * a[0]!;
      anew[i] = tmp;
    }
    if (d > 0) {
      for (let i = r + 1; i < rd; i++) anew[i] = a[i - 1]!;
      let tmp = a[0]!;
      for (let i = 0; i < d; i++) tmp += delta[i]! * a[r + i]!;
      anew[r] = tmp;
    }
    if (frozen) {
      const resid = y[l]! - anew[0]!;
      const gain = M[0]!;
      ssq += (resid * resid) / gain;
      sumlog += Math.log(gain);
      nu++;
      const f = resid / gain;
      for (let i = 0; i < rd; i++) a[i] = anew[i]! + M[i]! * f;
      continue;
    }
    if (l > 0) {
      if (d === 0) {
        // Pnew = T P T' + R R', written for a companion T with sparse phi: the shifted P,
        // plus phi_i g_j + phi_j g_i with g_j = P[0, j+1] + phi_j P00 / 2, plus R R'.
        // Only the upper triangle (row <= column) is kept while filtering (mirrored at the end).
        const P00 = P[0]!;
        for (let j = 0; j < r - 1; j++) {
          const src = r * (j + 1) + 1;
          const dst = r * j;
          for (let i = 0; i <= j; i++) Pnew[dst + i] = P[src + i]!;
          g[j] = P[r * (j + 1)]!;
        }
        for (let i = 0; i < r; i++) Pnew[i + r * (r - 1)] = 0;
        g[r - 1] = 0;
        for (let j = 0; j < p; j++) g[j] = g[j]! + 0.5 * phi[j]! * P00;
        for (const i of nzPhi) {
          const fi = phi[i]!;
          for (let j = 0; j < r; j++) {
            const idx = i <= j ? i + r * j : j + r * i;
            Pnew[idx] = Pnew[idx]! + fi * g[j]!;
          }
          Pnew[i + r * i] = Pnew[i + r * i]! + fi * g[i]!;
        }
        for (const i of nzR) {
          const ri = i === 0 ? 1 : theta[i - 1]!;
          for (const j of nzR) if (i <= j) Pnew[i + r * j] = Pnew[i + r * j]! + ri * (j === 0 ? 1 : theta[j - 1]!);
        }
      } else {
        // mm = T P
        for (let i = 0; i < r; i++) {
          const ph = i < p ? phi[i]! : 0;
          const last = i >= r - 1;
          for (let j = 0; j < rd; j++) {
            let tmp = ph !== 0 ? ph * P[rd * j]! : 0;
            if (!last) tmp += P[i + 1 + rd * j]!;
            mm[i + rd * j] = tmp;
          }
        }
        for (let j = 0; j < rd; j++) {
          let tmp = P[rd * j]!;
          for (let k = 0; k < d; k++) tmp += delta[k]! * P[r + k + rd * j]!;
          mm[r + rd * j] = tmp;
        }
        for (let i = 1; i < d; i++) for (let j = 0; j < rd; j++) mm[r + i + rd * j] = P[r + i - 1 + rd * j]!;
        // Pnew = mm T'
        for (let i = 0; i < r; i++) {
          const ph = i < p ? phi[i]! : 0;
          const last = i >= r - 1;
          for (let j = 0; j < rd; j++) {
            let tmp = ph !== 0 ? ph * mm[j]! : 0;
            if (!last) tmp += mm[rd * (i + 1) + j]!;
            Pnew[j + rd * i] = tmp;
          }
        }
        for (let j = 0; j < rd; j++) {
          let tmp = mm[j]!;
          for (let k = 0; k < d; k++) tmp += delta[k]! * mm[rd * (r + k) + j]!;
          Pnew[rd * r + j] = tmp;
        }
        for (let i = 1; i < d; i++) for (let j = 0; j < rd; j++) Pnew[rd * (r + i) + j] = mm[rd * (r + i - 1) + j]!;
        for (let i = 0; i <= q; i++) {
          const vi = i === 0 ? 1 : theta[i - 1]!;
          for (let j = 0; j <= q; j++) Pnew[i + rd * j] = Pnew[i + rd * j]! + (j === 0 ? vi : vi * theta[j - 1]!);
        }
      }
    }
    const yl = y[l]!;
    if (!Number.isNaN(yl)) {
      let resid = yl - anew[0]!;
      for (let i = 0; i < d; i++) resid -= delta[i]! * anew[r + i]!;
      if (d === 0) {
        for (let i = 0; i < r; i++) M[i] = Pnew[r * i]!;
      } else {
        for (let i = 0; i < rd; i++) {
          let tmp = Pnew[i]!;
          for (let j = 0; j < d; j++) tmp += Pnew[i + (r + j) * rd]! * delta[j]!;
          M[i] = tmp;
        }
      }
      let gain = M[0]!;
      for (let j = 0; j < d; j++) gain += delta[j]! * M[r + j]!;
      if (canFreeze && gain > 0 && gain < 1e4) {
        if (Math.abs(gain - prevGain) <= 1e-11 * gain) frozen = true;
        prevGain = gain;
      }
      if (gain < 1e4) {
        nu++;
        ssq = gain === 0 ? Infinity : ssq + (resid * resid) / gain;
        sumlog += Math.log(gain);
      }
      if (rsResid) rsResid[l] = gain === 0 ? Infinity : resid / Math.sqrt(gain);
      if (gain === 0) {
        a.fill(Infinity);
        Pnew.fill(Infinity);
      } else {
        for (let i = 0; i < rd; i++) a[i] = anew[i]! + (M[i]! * resid) / gain;
        if (d === 0) {
          for (let j = 0; j < r; j++) {
            const mj = M[j]! / gain;
            const col = r * j;
            for (let i = 0; i <= j; i++) P[col + i] = Pnew[col + i]! - M[i]! * mj;
          }
        } else {
          for (let i = 0; i < rd; i++) {
            const mi = M[i]! / gain;
            for (let j = 0; j < rd; j++) P[i + j * rd] = Pnew[i + j * rd]! - mi * M[j]!;
          }
        }
      }
    } else {
      a.set(anew);
      P.set(Pnew);
      if (rsResid) rsResid[l] = NaN;
    }
  }
  if (d === 0) {
    // Mirror the upper triangles into full symmetric matrices for prediction.
    for (let j = 0; j < r; j++) {
      for (let i = j + 1; i < r; i++) {
        P[i + r * j] = P[j + r * i]!;
        Pnew[i + r * j] = Pnew[j + r * i]!;
      }
    }
  }
  return rsResid ? { ssq, sumlog, nu, resid: rsResid } : { ssq, sumlog, nu };
}

/**
 * The likelihood terms of arimaLike for an ARMA model without differencing states and without
 * missing values, started from the stationary covariance (what the optimiser evaluates on the
 * differenced series), by the Chandrasekhar recursions (Morf, Sidhu & Kailath 1974; Herbst
 * 2015) instead of the Riccati covariance update. The model is time-invariant and starts at its
 * stationary covariance P_1 = Q0, so P_{t+1} - P_t = W_t M_t W_t' has rank one: with
 * F_t = P_t[0,0] and the gain K_t = T P_t e_0,
 *   F_{t+1} = F_t + M_t W_t[0]^2,   K_{t+1} = K_t + M_t W_t[0] T W_t,
 *   W_{t+1} = T W_t - K_{t+1} W_t[0] / F_{t+1},   M_{t+1} = M_t F_{t+1} / F_t,
 * from W_1 = K_1, M_1 = -1 / F_1. Each step costs O(r) instead of O(r^2) and only the first row
 * of Q0 is needed. The sums are those of arimaLike (innovations with F >= 1e4 are left out, as
 * R's filter does); the state is not kept (the final fit runs arimaLike).
 */
export function armaLikeChandrasekhar(y: ArrayLike<number>, phi: Float64Array, theta: Float64Array): { ssq: number; sumlog: number; nu: number } {
  const n = y.length;
  const p = phi.length;
  const r = Math.max(p, theta.length + 1);
  const row = stationaryRow0(phi, theta, r, scratch(5, r));
  const a = scratch(6, r);
  a.fill(0, 0, r);
  const K = scratch(7, r);
  const W = scratch(8, r);
  let F = row[0]!;
  // K_1 = T Q0 e_0: (T x)_i = phi_i x_0 + x_{i+1}.
  for (let i = 0; i < r; i++) K[i] = (i < p ? phi[i]! * F : 0) + (i + 1 < r ? row[i + 1]! : 0);
  for (let i = 0; i < r; i++) W[i] = K[i]!;
  let M = -1 / F;
  const [nzP, np] = nonZero(0, phi);
  let ssq = 0;
  let sumlog = 0;
  let nu = 0;
  let frozen = false;
  for (let l = 0; l < n; l++) {
    const v = y[l]! - a[0]!;
    if (F === 0) return { ssq: NaN, sumlog, nu };
    if (F < 1e4) {
      nu++;
      ssq += (v * v) / F;
      sumlog += Math.log(F);
    }
    // a <- T a + K v / F  ((T x)_i = phi_i x_0 + x_{i+1}; phi has few non-zero lags)
    const f = v / F;
    const a0 = a[0]!;
    for (let i = 0; i < r - 1; i++) a[i] = a[i + 1]! + K[i]! * f;
    a[r - 1] = K[r - 1]! * f;
    for (let k = 0; k < np; k++) {
      const i = nzP[k]!;
      a[i] = a[i]! + phi[i]! * a0;
    }
    if (frozen || l === n - 1) continue;
    // Chandrasekhar step; W becomes T W first.
    const w0 = W[0]!;
    const mw0 = M * w0;
    const Fn = F + mw0 * w0;
    for (let i = 0; i < r - 1; i++) W[i] = W[i + 1]!;
    W[r - 1] = 0;
    for (let k = 0; k < np; k++) {
      const i = nzP[k]!;
      W[i] = W[i]! + phi[i]! * w0;
    }
    const c = w0 / Fn;
    let wmax = 0;
    for (let i = 0; i < r; i++) {
      const ki = K[i]! + mw0 * W[i]!;
      K[i] = ki;
      const wi = W[i]! - ki * c;
      W[i] = wi;
      wmax = Math.max(wmax, Math.abs(wi));
    }
    M = (M * Fn) / F;
    F = Fn;
    // Converged: the remaining change of P (|M| |W|^2) is negligible next to F, so F and K
    // stay as they are (each step then costs only the state update).
    if (Math.abs(M) * wmax * wmax <= 1e-13 * F) frozen = true;
  }
  return { ssq, sumlog, nu };
}

/**
 * KalmanForecast: h-step predictions from the filtered state, and their variances in units of
 * sigma^2 (Z' P_h Z with h = 0 observation noise).
 */
export function kalmanForecast(nAhead: number, mod: StateSpace): { pred: number[]; variance: number[] } {
  const { phi, theta, delta, r, rd } = mod;
  const p = phi.length;
  const d = delta.length;
  // Build T, Z and V explicitly: the horizon is short, clarity wins.
  const T = new Float64Array(rd * rd);
  for (let i = 0; i < p; i++) T[i] = phi[i]!;
  for (let i = 1; i < r; i++) T[i - 1 + rd * i] = 1;
  const Z = new Float64Array(rd);
  Z[0] = 1;
  for (let i = 0; i < d; i++) Z[r + i] = delta[i]!;
  if (d > 0) {
    for (let j = 0; j < rd; j++) T[r + rd * j] = Z[j]!;
    for (let i = 1; i < d; i++) T[r + i + rd * (r + i - 1)] = 1;
  }
  const R = new Float64Array(rd);
  R[0] = 1;
  for (let i = 0; i < r - 1; i++) R[i + 1] = theta[i]!;
  let a = Float64Array.from(mod.a);
  let P = Float64Array.from(mod.P);
  const pred: number[] = [];
  const variance: number[] = [];
  const tmp = new Float64Array(rd * rd);
  for (let l = 0; l < nAhead; l++) {
    const an = new Float64Array(rd);
    for (let i = 0; i < rd; i++) {
      let s = 0;
      for (let k = 0; k < rd; k++) s += T[i + rd * k]! * a[k]!;
      an[i] = s;
    }
    a = an;
    let fc = 0;
    for (let i = 0; i < rd; i++) fc += Z[i]! * a[i]!;
    pred.push(fc);
    // tmp = T P
    for (let i = 0; i < rd; i++) {
      for (let j = 0; j < rd; j++) {
        let s = 0;
        for (let k = 0; k < rd; k++) s += T[i + rd * k]! * P[k + rd * j]!;
        tmp[i + rd * j] = s;
      }
    }
    const Pn = new Float64Array(rd * rd);
    for (let i = 0; i < rd; i++) {
      for (let j = 0; j < rd; j++) {
        let s = R[i]! * R[j]!;
        for (let k = 0; k < rd; k++) s += tmp[i + rd * k]! * T[j + rd * k]!;
        Pn[i + rd * j] = s;
      }
    }
    P = Pn;
    let v = 0;
    for (let i = 0; i < rd; i++) for (let j = 0; j < rd; j++) v += Z[i]! * P[i + rd * j]! * Z[j]!;
    variance.push(v);
  }
  return { pred, variance };
}

/** Roots of c[0] + c[1] z + ... + c[k] z^k (c[k] != 0) by the Durand-Kerner iteration; moduli only are needed. */
export function polyRoots(c: readonly number[]): { re: number; im: number }[] {
  const k = c.length - 1;
  if (k < 1) return [];
  const lead = c[k]!;
  const a = c.map((v) => v / lead);
  if (k === 1) return [{ re: -a[0]!, im: 0 }];
  // Initial guesses on a circle of the Cauchy bound's radius.
  let bound = 0;
  for (let i = 0; i < k; i++) bound = Math.max(bound, Math.abs(a[i]!));
  const rad = 1 + bound;
  const re = new Float64Array(k);
  const im = new Float64Array(k);
  for (let i = 0; i < k; i++) {
    const ang = (2 * Math.PI * i) / k + 0.4;
    re[i] = rad * Math.cos(ang);
    im[i] = rad * Math.sin(ang);
  }
  for (let iter = 0; iter < 500; iter++) {
    let change = 0;
    for (let i = 0; i < k; i++) {
      // p(z) by Horner
      let pr = 1;
      let pi = 0;
      const zr = re[i]!;
      const zi = im[i]!;
      for (let j = k - 1; j >= 0; j--) {
        const nr = pr * zr - pi * zi + a[j]!;
        const ni = pr * zi + pi * zr;
        pr = nr;
        pi = ni;
      }
      // denominator prod (z - z_j)
      let dr = 1;
      let di = 0;
      for (let j = 0; j < k; j++) {
        if (j === i) continue;
        const xr = zr - re[j]!;
        const xi = zi - im[j]!;
        const nr = dr * xr - di * xi;
        const ni = dr * xi + di * xr;
        dr = nr;
        di = ni;
      }
      const den = dr * dr + di * di;
      if (den === 0) continue;
      const qr = (pr * dr + pi * di) / den;
      const qi = (pi * dr - pr * di) / den;
      re[i] = zr - qr;
      im[i] = zi - qi;
      change = Math.max(change, Math.hypot(qr, qi) / (1 + Math.hypot(zr, zi)));
    }
    if (change < 1e-14) break;
  }
  return Array.from(re, (r, i) => ({ re: r, im: im[i]! }));
}

/** R's arCheck: every root of 1 - ar_1 z - ... lies outside the unit circle. */
export function arCheck(ar: readonly number[]): boolean {
  let p = 0;
  for (let i = 0; i < ar.length; i++) if (ar[i] !== 0) p = i + 1;
  if (p === 0) return true;
  const roots = polyRoots([1, ...ar.slice(0, p).map((v) => -v)]);
  return roots.every((z) => Math.hypot(z.re, z.im) > 1);
}

/** R's maInvert: reflects MA roots inside the unit circle to make the MA part invertible. */
export function maInvert(ma: readonly number[]): number[] {
  const q = ma.length;
  let q0 = 0;
  for (let i = 0; i < q; i++) if (ma[i] !== 0) q0 = i + 1;
  if (q0 === 0) return ma.slice();
  const roots = polyRoots([1, ...ma.slice(0, q0)]);
  const inside = roots.map((z) => Math.hypot(z.re, z.im) < 1);
  if (!inside.some(Boolean)) return ma.slice();
  if (q0 === 1) return [1 / ma[0]!, ...new Array<number>(q - q0).fill(0)];
  // x <- 1; for (r in roots) x <- c(x, 0) - c(0, x) / r   (complex arithmetic)
  let xr = [1];
  let xi = [0];
  roots.forEach((z, idx) => {
    let zr = z.re;
    let zi = z.im;
    if (inside[idx]) {
      const m2 = zr * zr + zi * zi;
      zr = zr / m2;
      zi = -zi / m2;
    }
    // 1 / z
    const m2 = zr * zr + zi * zi;
    const ir = zr / m2;
    const ii = -zi / m2;
    const nr = [...xr, 0];
    const ni = [...xi, 0];
    for (let j = 0; j < xr.length; j++) {
      nr[j + 1] = nr[j + 1]! - (xr[j]! * ir - xi[j]! * ii);
      ni[j + 1] = ni[j + 1]! - (xr[j]! * ii + xi[j]! * ir);
    }
    xr = nr;
    xi = ni;
  });
  return [...xr.slice(1), ...new Array<number>(q - q0).fill(0)];
}
