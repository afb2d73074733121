/**
 * How many differences auto.arima takes, as R's forecast package decides by default:
 * `ndiffs` (KPSS level-stationarity test, urca's ur.kpss with lag trunc(3 sqrt(n) / 13), 5%)
 * and `nsdiffs` (test = "seas": the seasonal strength of an STL decomposition, as forecast's
 * mstl/seas.heuristic, above 0.64). STL is a port of Cleveland et al.'s stl.f as R's `stl`
 * runs it (non-robust: two inner passes, no outer).
 */

export function isConstant(x: ArrayLike<number>): boolean {
  for (let i = 1; i < x.length; i++) if (x[i] !== x[0]) return false;
  return true;
}

export function diff(x: readonly number[], lag = 1, differences = 1): number[] {
  let y = x.slice();
  for (let k = 0; k < differences; k++) y = y.slice(lag).map((v, i) => v - y[i]!);
  return y;
}

/** urca::ur.kpss(type = "mu", use.lag = lags) test statistic. */
export function kpssStat(x: readonly number[], lags: number): number {
  const n = x.length;
  const mean = x.reduce((s, v) => s + v, 0) / n;
  const e = x.map((v) => v - mean);
  let S = 0;
  let num = 0;
  for (const v of e) {
    S += v;
    num += S * S;
  }
  num /= n * n;
  let s2 = 0;
  for (const v of e) s2 += v * v;
  s2 /= n;
  let den = s2;
  for (let k = 1; k <= lags; k++) {
    let c = 0;
    for (let t = k; t < n; t++) c += e[t]! * e[t - k]!;
    den += (2 / n) * (1 - k / (lags + 1)) * c;
  }
  return num / den;
}

/** urca's critical values for type "mu" at 10%, 5%, 2.5%, 1%; p < 0.05 means stat > 0.463. */
const KPSS_CVAL = [0.347, 0.463, 0.574, 0.739];
const KPSS_P = [0.1, 0.05, 0.025, 0.01];

/** forecast's urca_pval: linear interpolation of the table, clamped (approx(rule = 2)). */
export function kpssPValue(stat: number): number {
  if (stat <= KPSS_CVAL[0]!) return KPSS_P[0]!;
  for (let i = 1; i < KPSS_CVAL.length; i++) {
    if (stat <= KPSS_CVAL[i]!) {
      const x0 = KPSS_CVAL[i - 1]!;
      const x1 = KPSS_CVAL[i]!;
      return KPSS_P[i - 1]! + ((stat - x0) / (x1 - x0)) * (KPSS_P[i]! - KPSS_P[i - 1]!);
    }
  }
  return KPSS_P[KPSS_P.length - 1]!;
}

/** forecast::ndiffs(x, test = "kpss", alpha = 0.05, max.d = 2). */
export function ndiffs(x0: readonly number[], maxD = 2, alpha = 0.05): number {
  let x = x0.filter((v) => !Number.isNaN(v));
  let d = 0;
  if (isConstant(x)) return d;
  const test = (v: number[]): boolean | null => {
    if (v.length < 2) return null;
    const stat = kpssStat(v, Math.trunc((3 * Math.sqrt(v.length)) / 13));
    if (!Number.isFinite(stat)) return null;
    return kpssPValue(stat) < alpha;
  };
  let dodiff = test(x);
  if (dodiff === null) return d;
  while (dodiff && d < maxD) {
    d++;
    x = diff(x);
    if (isConstant(x)) return d;
    dodiff = test(x);
    if (dodiff === null) return d - 1;
  }
  return d;
}

/** forecast::nsdiffs(x, test = "seas", max.D = 1): seasonal strength above 0.64. */
export function nsdiffs(x0: readonly number[], m: number, maxD = 1): number {
  let x = x0.slice();
  let D = 0;
  if (isConstant(x)) return D;
  if (m <= 1 || m >= x.length) return 0;
  const test = (v: number[]): boolean => {
    const s = seasonalStrength(v, m);
    return s !== null && s > 0.64;
  };
  let dodiff = test(x);
  while (dodiff && D < maxD) {
    D++;
    x = diff(x, m);
    if (isConstant(x)) return D;
    dodiff = x.length >= 2 * m && D < maxD ? test(x) : false;
  }
  return D;
}

function variance(v: readonly number[]): number {
  const n = v.length;
  const mean = v.reduce((s, x) => s + x, 0) / n;
  let s = 0;
  for (const x of v) s += (x - mean) ** 2;
  return s / (n - 1);
}

/** forecast's seas.heuristic: max(0, min(1, 1 - var(remainder) / var(remainder + seasonal))) from mstl. */
export function seasonalStrength(x: readonly number[], m: number): number | null {
  // mstl keeps periods below n / 2; stl needs more than two periods.
  if (m <= 1 || m >= x.length / 2) return null;
  const { seasonal, trend } = stl(x, m, 11);
  const remainder = x.map((v, i) => v - seasonal[i]! - trend[i]!);
  const vare = variance(remainder);
  const vars = variance(remainder.map((v, i) => v + seasonal[i]!));
  if (!(vars > 0)) return null;
  return Math.max(0, Math.min(1, 1 - vare / vars));
}

function nextOdd(x: number): number {
  let v = Math.round(x);
  if (v % 2 === 0) v++;
  return v;
}

/**
 * R's stl(x, s.window = sWindow) with R's defaults: s.degree 0, t.window =
 * nextodd(ceiling(1.5 period / (1 - 1.5 / s.window))), l.window = nextodd(period), degrees 1,
 * jumps ceiling(window / 10), inner = 2, outer = 0.
 */
export function stl(y: readonly number[], period: number, sWindow: number): { seasonal: number[]; trend: number[] } {
  const n = y.length;
  const np = Math.max(2, period);
  let ns = Math.max(3, sWindow);
  let nt = Math.max(3, nextOdd(Math.ceil((1.5 * period) / (1 - 1.5 / sWindow))));
  let nl = Math.max(3, nextOdd(period));
  if (ns % 2 === 0) ns++;
  if (nt % 2 === 0) nt++;
  if (nl % 2 === 0) nl++;
  const nsjump = Math.ceil(ns / 10);
  const ntjump = Math.ceil(nt / 10);
  const nljump = Math.ceil(nl / 10);
  const isdeg = 0;
  const itdeg = 1;
  const ildeg = 1;
  const trend = new Float64Array(n);
  const season = new Float64Array(n);
  const work1 = new Float64Array(n + 2 * np);
  const work2 = new Float64Array(n + 2 * np);
  const work3 = new Float64Array(n + 2 * np);
  for (let it = 0; it < 2; it++) {
    for (let i = 0; i < n; i++) work1[i] = y[i]! - trend[i]!;
    stlss(work1, n, np, ns, isdeg, nsjump, work2);
    stlfts(work2, n + 2 * np, np, work3, work1);
    const low = new Float64Array(n);
    stless(work3, n, nl, ildeg, nljump, low);
    for (let i = 0; i < n; i++) season[i] = work2[np + i]! - low[i]!;
    const deseas = new Float64Array(n);
    for (let i = 0; i < n; i++) deseas[i] = y[i]! - season[i]!;
    stless(deseas, n, nt, itdeg, ntjump, trend);
  }
  return { seasonal: Array.from(season), trend: Array.from(trend) };
}

/** stlest: a local (degree 0 or 1) tricube-weighted fit at xs (1-based positions), or null. */
function stlest(y: ArrayLike<number>, n: number, len: number, ideg: number, xs: number, nleft: number, nright: number, w: Float64Array): number | null {
  const range = n - 1;
  let h = Math.max(xs - nleft, nright - xs);
  if (len > n) h += Math.floor((len - n) / 2);
  const h9 = 0.999 * h;
  const h1 = 0.001 * h;
  let a = 0;
  for (let j = nleft; j <= nright; j++) {
    w[j - 1] = 0;
    const r = Math.abs(j - xs);
    if (r <= h9) {
      w[j - 1] = r <= h1 ? 1 : (1 - (r / h) ** 3) ** 3;
      a += w[j - 1]!;
    }
  }
  if (a <= 0) return null;
  for (let j = nleft; j <= nright; j++) w[j - 1] = w[j - 1]! / a;
  if (h > 0 && ideg > 0) {
    a = 0;
    for (let j = nleft; j <= nright; j++) a += w[j - 1]! * j;
    let b = xs - a;
    let c = 0;
    for (let j = nleft; j <= nright; j++) c += w[j - 1]! * (j - a) * (j - a);
    if (Math.sqrt(c) > 0.001 * range) {
      b /= c;
      for (let j = nleft; j <= nright; j++) w[j - 1] = w[j - 1]! * (b * (j - a) + 1);
    }
  }
  let ys = 0;
  for (let j = nleft; j <= nright; j++) ys += w[j - 1]! * y[j - 1]!;
  return ys;
}

/** stless: loess smoothing of y[0..n) into ys[off..off+n), evaluated every njump points and interpolated. */
function stless(y: ArrayLike<number>, n: number, len: number, ideg: number, njump: number, ys: Float64Array, off = 0): void {
  const w = new Float64Array(n);
  if (n < 2) {
    ys[off] = y[0]!;
    return;
  }
  const newnj = Math.min(njump, n - 1);
  let nleft = 1;
  let nright = n;
  const put = (i: number): void => {
    const v = stlest(y, n, len, ideg, i, nleft, nright, w);
    ys[off + i - 1] = v ?? y[i - 1]!;
  };
  if (len >= n) {
    nleft = 1;
    nright = n;
    for (let i = 1; i <= n; i += newnj) put(i);
  } else if (newnj === 1) {
    const nsh = Math.floor((len + 1) / 2);
    nleft = 1;
    nright = len;
    for (let i = 1; i <= n; i++) {
      if (i > nsh && nright !== n) {
        nleft++;
        nright++;
      }
      put(i);
    }
  } else {
    const nsh = Math.floor((len + 1) / 2);
    for (let i = 1; i <= n; i += newnj) {
      if (i < nsh) {
        nleft = 1;
        nright = len;
      } else if (i >= n - nsh + 1) {
        nleft = n - len + 1;
        nright = n;
      } else {
        nleft = i - nsh + 1;
        nright = len + i - nsh;
      }
      put(i);
    }
  }
  if (newnj !== 1) {
    for (let i = 1; i <= n - newnj; i += newnj) {
      const delta = (ys[off + i + newnj - 1]! - ys[off + i - 1]!) / newnj;
      for (let j = i + 1; j <= i + newnj - 1; j++) ys[off + j - 1] = ys[off + i - 1]! + delta * (j - i);
    }
    const k = Math.floor((n - 1) / newnj) * newnj + 1;
    if (k !== n) {
      put(n);
      if (k !== n - 1) {
        const delta = (ys[off + n - 1]! - ys[off + k - 1]!) / (n - k);
        for (let j = k + 1; j <= n - 1; j++) ys[off + j - 1] = ys[off + k - 1]! + delta * (j - k);
      }
    }
  }
}

/** stlss: smooths each cycle-subseries, extended one period at both ends, into season[0..n+2np). */
function stlss(y: Float64Array, n: number, np: number, ns: number, isdeg: number, nsjump: number, season: Float64Array): void {
  const maxk = Math.floor((n - 1) / np) + 1;
  const work1 = new Float64Array(maxk);
  const work2 = new Float64Array(maxk + 2);
  const w = new Float64Array(maxk);
  for (let j = 1; j <= np; j++) {
    const k = Math.floor((n - j) / np) + 1;
    for (let i = 1; i <= k; i++) work1[i - 1] = y[(i - 1) * np + j - 1]!;
    stless(work1, k, ns, isdeg, nsjump, work2, 1);
    const nright = Math.min(ns, k);
    const first = stlest(work1, k, ns, isdeg, 0, 1, nright, w);
    work2[0] = first ?? work2[1]!;
    const nleft = Math.max(1, k - ns + 1);
    const lastv = stlest(work1, k, ns, isdeg, k + 1, nleft, k, w);
    work2[k + 1] = lastv ?? work2[k]!;
    for (let m = 1; m <= k + 2; m++) season[(m - 1) * np + j - 1] = work2[m - 1]!;
  }
}

/** stlma: moving average of length len; n - len + 1 values. */
function stlma(x: Float64Array, n: number, len: number, ave: Float64Array): void {
  const newn = n - len + 1;
  let v = 0;
  for (let i = 0; i < len; i++) v += x[i]!;
  ave[0] = v / len;
  for (let j = 1; j < newn; j++) {
    v = v - x[j - 1]! + x[len + j - 1]!;
    ave[j] = v / len;
  }
}

/** stlfts: the low-pass filter (moving averages of np, np and 3). */
function stlfts(x: Float64Array, n: number, np: number, trend: Float64Array, work: Float64Array): void {
  stlma(x, n, np, trend);
  stlma(trend, n - np + 1, np, work);
  stlma(work, n - 2 * np + 2, 3, trend);
}
