/**
 * R's Nelder-Mead (`nmmin` in R's src/appl/optim.c, Nash's Compact Numerical Methods, algorithm
 * 19), ported step by step because forecast's `ets` calls it directly (`etsNelderMead`: abstol
 * -Inf, reltol sqrt(eps), reflection 1, contraction 0.5, expansion 2, maxit 2000) and the model
 * it picks depends on this exact search: the initial simplex uses one step size for every
 * coordinate (a tenth of the largest |parameter|), non-finite values count as 1e35, and the
 * search stops when the simplex's values are within reltol of each other.
 * (stats/optim.ts holds a textbook Nelder-Mead used by the theta models.)
 */
export interface NmResult {
  x: number[];
  value: number;
  /** 0 converged, 1 iteration limit, 10 degenerate simplex (R's codes). */
  fail: 0 | 1 | 10;
  fnCount: number;
}

const BIG = 1.0e35;

export function nmmin(
  fminfn: (x: Float64Array) => number,
  start: readonly number[],
  opts: { abstol?: number; intol?: number; alpha?: number; beta?: number; gamma?: number; maxit?: number } = {},
): NmResult {
  const abstol = opts.abstol ?? -Infinity;
  const intol = opts.intol ?? Math.sqrt(Number.EPSILON);
  const alpha = opts.alpha ?? 1.0;
  const bet = opts.beta ?? 0.5;
  const gamm = opts.gamma ?? 2.0;
  const maxit = opts.maxit ?? 500;
  const n = start.length;
  const bvec = Float64Array.from(start);
  if (maxit <= 0 || n === 0) return { x: [...start], value: fminfn(bvec), fail: 0, fnCount: 0 };
  // P[i][j]: coordinate i (row n holds the function value) of vertex j; column n + 1 is the centroid.
  const n1 = n + 1;
  const C = n + 2;
  const P: Float64Array[] = Array.from({ length: n1 }, () => new Float64Array(C));
  let f = fminfn(bvec);
  if (!Number.isFinite(f)) throw new Error('function cannot be evaluated at initial parameters');
  let funcount = 1;
  const convtol = intol * (Math.abs(f) + intol);
  P[n1 - 1]![0] = f;
  for (let i = 0; i < n; i++) P[i]![0] = bvec[i]!;
  let L = 1;
  let size = 0;
  let step = 0;
  for (let i = 0; i < n; i++) if (0.1 * Math.abs(bvec[i]!) > step) step = 0.1 * Math.abs(bvec[i]!);
  if (step === 0) step = 0.1;
  for (let j = 2; j <= n1; j++) {
    for (let i = 0; i < n; i++) P[i]![j - 1] = bvec[i]!;
    let trystep = step;
    while (P[j - 2]![j - 1] === bvec[j - 2]) {
      P[j - 2]![j - 1] = bvec[j - 2]! + trystep;
      trystep *= 10;
    }
    size += trystep;
  }
  let oldsize = size;
  let calcvert = true;
  let fail: 0 | 1 | 10 = 0;
  const eval1 = (): number => {
    const v = fminfn(bvec);
    funcount++;
    return Number.isFinite(v) ? v : BIG;
  };
  do {
    if (calcvert) {
      for (let j = 0; j < n1; j++) {
        if (j + 1 !== L) {
          for (let i = 0; i < n; i++) bvec[i] = P[i]![j]!;
          P[n1 - 1]![j] = eval1();
        }
      }
      calcvert = false;
    }
    let VL = P[n1 - 1]![L - 1]!;
    let VH = VL;
    let H = L;
    for (let j = 1; j <= n1; j++) {
      if (j !== L) {
        const fj = P[n1 - 1]![j - 1]!;
        if (fj < VL) {
          L = j;
          VL = fj;
        }
        if (fj > VH) {
          H = j;
          VH = fj;
        }
      }
    }
    if (VH <= VL + convtol || VL <= abstol) break;
    for (let i = 0; i < n; i++) {
      let temp = -P[i]![H - 1]!;
      for (let j = 0; j < n1; j++) temp += P[i]![j]!;
      P[i]![C - 1] = temp / n;
    }
    for (let i = 0; i < n; i++) bvec[i] = (1.0 + alpha) * P[i]![C - 1]! - alpha * P[i]![H - 1]!;
    f = eval1();
    const VR = f;
    if (VR < VL) {
      P[n1 - 1]![C - 1] = f;
      for (let i = 0; i < n; i++) {
        const fx = gamm * bvec[i]! + (1 - gamm) * P[i]![C - 1]!;
        P[i]![C - 1] = bvec[i]!;
        bvec[i] = fx;
      }
      f = eval1();
      if (f < VR) {
        for (let i = 0; i < n; i++) P[i]![H - 1] = bvec[i]!;
        P[n1 - 1]![H - 1] = f;
      } else {
        for (let i = 0; i < n; i++) P[i]![H - 1] = P[i]![C - 1]!;
        P[n1 - 1]![H - 1] = VR;
      }
    } else {
      if (VR < VH) {
        for (let i = 0; i < n; i++) P[i]![H - 1] = bvec[i]!;
        P[n1 - 1]![H - 1] = VR;
      }
      for (let i = 0; i < n; i++) bvec[i] = (1 - bet) * P[i]![H - 1]! + bet * P[i]![C - 1]!;
      f = eval1();
      if (f < P[n1 - 1]![H - 1]!) {
        for (let i = 0; i < n; i++) P[i]![H - 1] = bvec[i]!;
        P[n1 - 1]![H - 1] = f;
      } else if (VR >= VH) {
        calcvert = true;
        size = 0;
        for (let j = 0; j < n1; j++) {
          if (j + 1 !== L) {
            for (let i = 0; i < n; i++) {
              P[i]![j] = bet * (P[i]![j]! - P[i]![L - 1]!) + P[i]![L - 1]!;
              size += Math.abs(P[i]![j]! - P[i]![L - 1]!);
            }
          }
        }
        if (size < oldsize) {
          oldsize = size;
        } else {
          fail = 10;
          break;
        }
      }
    }
  } while (funcount <= maxit);
  const x: number[] = [];
  for (let i = 0; i < n; i++) x.push(P[i]![L - 1]!);
  if (funcount > maxit) fail = 1;
  return { x, value: P[n1 - 1]![L - 1]!, fail, fnCount: funcount };
}
