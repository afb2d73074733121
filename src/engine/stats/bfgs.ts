/**
 * R's `optim(method = "BFGS")`: a port of `vmmin` (R src/appl/optim.c, Nash's variable metric
 * method) with optim's central-difference gradient (`ndeps` = 1e-3 on the `parscale`d
 * parameters) and `optimhess` (the Hessian from differences of that gradient). Written here
 * rather than taken from npm: the only candidates there (`fmin`, `optimization-js`) offer no
 * BFGS with R's line search and stopping rules, and auto.arima's model choice depends on them.
 */

export interface BfgsResult {
  x: number[];
  value: number;
  /** 0: converged; 1: iteration limit reached (R's `convergence` codes). */
  convergence: 0 | 1;
  fnCount: number;
}

const STEPREDN = 0.2;
const ACCTOL = 0.0001;
const RELTEST = 10.0;
const NDEPS = 1e-3;

/** The numerical gradient optim uses when none is given; throws on a non-finite difference (as R). */
export function numGrad(f: (x: number[]) => number, x: readonly number[], parscale: readonly number[]): number[] {
  const n = x.length;
  const g = new Array<number>(n);
  const p = x.slice();
  for (let i = 0; i < n; i++) {
    const xi = x[i]!;
    const step = NDEPS * parscale[i]!;
    p[i] = xi + step;
    const v1 = f(p);
    p[i] = xi - step;
    const v2 = f(p);
    p[i] = xi;
    // Gradient with respect to the scaled parameter x / parscale, as optim's fmingr.
    const d = (v1 - v2) / (2 * NDEPS);
    if (!Number.isFinite(d)) throw new Error(`non-finite finite-difference value [${i + 1}]`);
    g[i] = d;
  }
  return g;
}

/**
 * Minimises f from x0. `parscale` as in optim: the search runs on x / parscale. Throws when the
 * initial value is not finite ("initial value in 'vmmin' is not finite").
 */
export function bfgs(
  f: (x: number[]) => number,
  x0: readonly number[],
  opts: { parscale?: readonly number[]; maxit?: number; reltol?: number } = {},
): BfgsResult {
  const n = x0.length;
  const ps = opts.parscale ?? new Array<number>(n).fill(1);
  const maxit = opts.maxit ?? 100;
  const reltol = opts.reltol ?? 2 ** -26; // sqrt(double epsilon), R's default
  // Work on scaled parameters b = x / parscale.
  const fs = (b: number[]): number => f(b.map((v, i) => v * ps[i]!));
  const b = x0.map((v, i) => v / ps[i]!);
  let fnCount = 0;
  let fmin = fs(b);
  fnCount++;
  if (!Number.isFinite(fmin)) throw new Error("initial value in 'vmmin' is not finite");
  if (maxit <= 0) return { x: b.map((v, i) => v * ps[i]!), value: fmin, convergence: 0, fnCount };
  const ones = new Array<number>(n).fill(1);
  const grad = (p: number[]): number[] => {
    fnCount += 2 * n;
    return numGrad(fs, p, ones);
  };
  let g = grad(b);
  let gradcount = 1;
  let iter = 1;
  let ilast = gradcount;
  const B: number[][] = Array.from({ length: n }, () => new Array<number>(n).fill(0));
  const X = new Array<number>(n).fill(0);
  const c = new Array<number>(n).fill(0);
  const t = new Array<number>(n).fill(0);
  let count = 0;
  let fval = fmin;
  do {
    if (ilast === gradcount) {
      for (let i = 0; i < n; i++) {
        for (let j = 0; j < i; j++) B[i]![j] = 0;
        B[i]![i] = 1;
      }
    }
    for (let i = 0; i < n; i++) {
      X[i] = b[i]!;
      c[i] = g[i]!;
    }
    let gradproj = 0;
    for (let i = 0; i < n; i++) {
      let s = 0;
      for (let j = 0; j <= i; j++) s -= B[i]![j]! * g[j]!;
      for (let j = i + 1; j < n; j++) s -= B[j]![i]! * g[j]!;
      t[i] = s;
      gradproj += s * g[i]!;
    }
    if (gradproj < 0) {
      let steplength = 1.0;
      let accpoint = false;
      do {
        count = 0;
        for (let i = 0; i < n; i++) {
          b[i] = X[i]! + steplength * t[i]!;
          if (RELTEST + X[i]! === RELTEST + b[i]!) count++;
        }
        if (count < n) {
          fval = fs(b);
          fnCount++;
          accpoint = Number.isFinite(fval) && fval <= fmin + gradproj * steplength * ACCTOL;
          if (!accpoint) steplength *= STEPREDN;
        }
      } while (!(count === n || accpoint));
      const enough = fval > -Infinity && Math.abs(fval - fmin) > reltol * (Math.abs(fmin) + reltol);
      if (!enough) {
        count = n;
        fmin = fval;
      }
      if (count < n) {
        fmin = fval;
        g = grad(b);
        gradcount++;
        iter++;
        let D1 = 0;
        for (let i = 0; i < n; i++) {
          t[i] = steplength * t[i]!;
          c[i] = g[i]! - c[i]!;
          D1 += t[i]! * c[i]!;
        }
        if (D1 > 0) {
          let D2 = 0;
          for (let i = 0; i < n; i++) {
            let s = 0;
            for (let j = 0; j <= i; j++) s += B[i]![j]! * c[j]!;
            for (let j = i + 1; j < n; j++) s += B[j]![i]! * c[j]!;
            X[i] = s;
            D2 += s * c[i]!;
          }
          D2 = 1.0 + D2 / D1;
          for (let i = 0; i < n; i++) {
            for (let j = 0; j <= i; j++) B[i]![j] = B[i]![j]! + (D2 * t[i]! * t[j]! - X[i]! * t[j]! - t[i]! * X[j]!) / D1;
          }
        } else {
          ilast = gradcount;
        }
      } else if (ilast < gradcount) {
        count = 0;
        ilast = gradcount;
      }
    } else {
      count = 0;
      if (ilast === gradcount) count = n;
      else ilast = gradcount;
    }
    if (iter >= maxit) break;
    if (gradcount - ilast > 2 * n) ilast = gradcount;
  } while (count !== n || ilast !== gradcount);
  // A final rejected trial step leaves b at the trial point; vmmin returns b as it stands, and so
  // do we, except that the value reported is the best accepted one (fmin).
  return { x: b.map((v, i) => v * ps[i]!), value: fmin, convergence: iter < maxit ? 0 : 1, fnCount };
}

/** optim's `hessian = TRUE`: central differences of the numerical gradient, symmetrised. */
export function optimHess(f: (x: number[]) => number, x: readonly number[], parscale: readonly number[]): number[][] {
  const n = x.length;
  const H: number[][] = Array.from({ length: n }, () => new Array<number>(n).fill(0));
  const p = x.slice();
  for (let i = 0; i < n; i++) {
    const xi = x[i]!;
    p[i] = xi + NDEPS;
    const g1 = numGrad(f, p, parscale);
    p[i] = xi - NDEPS;
    const g2 = numGrad(f, p, parscale);
    p[i] = xi;
    // numGrad returns d f / d(x_j / parscale_j); divide by parscale_j for d f / d x_j.
    for (let j = 0; j < n; j++) H[i]![j] = (g1[j]! - g2[j]!) / (2 * NDEPS * parscale[j]!);
  }
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < i; j++) {
      const v = 0.5 * (H[i]![j]! + H[j]![i]!);
      H[i]![j] = v;
      H[j]![i] = v;
    }
  }
  return H;
}

/** Solves A X = B (B given by columns as a matrix n x k) by Gaussian elimination with partial pivoting; null when singular. */
export function solve(A: readonly (readonly number[])[], Bm: readonly (readonly number[])[]): number[][] | null {
  const n = A.length;
  const k = Bm[0]?.length ?? 0;
  const M = A.map((row, i) => [...row, ...Bm[i]!]);
  let maxAbs = 0;
  for (const row of A) for (const v of row) maxAbs = Math.max(maxAbs, Math.abs(v));
  for (let col = 0; col < n; col++) {
    let piv = col;
    for (let r = col + 1; r < n; r++) if (Math.abs(M[r]![col]!) > Math.abs(M[piv]![col]!)) piv = r;
    const pv = M[piv]![col]!;
    if (!Number.isFinite(pv) || Math.abs(pv) <= 2.220446049250313e-16 * maxAbs || pv === 0) return null;
    if (piv !== col) [M[piv], M[col]] = [M[col]!, M[piv]!];
    const rowc = M[col]!;
    for (let r = 0; r < n; r++) {
      if (r === col) continue;
      const row = M[r]!;
      const fac = row[col]! / pv;
      if (fac === 0) continue;
      for (let j = col; j < n + k; j++) row[j] = row[j]! - fac * rowc[j]!;
    }
  }
  return M.map((row, i) => row.slice(n).map((v) => v / M[i]![i]!));
}
