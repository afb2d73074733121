/**
 * The numeric kernels of the TTM forward pass, on row-major Float32Array buffers.
 * Arithmetic is done in float64 (JavaScript numbers) and stored as float32.
 */

/**
 * out[m, o] = bias[o] + Σ_k a[m, k] · w[o, k]  (PyTorch Linear: w is [O, K], row-major).
 * Blocked 2 rows × 4 outputs so each loaded value is used several times from registers.
 */
export function linear(a: Float32Array, m: number, k: number, w: Float32Array, o: number, bias: Float32Array, out: Float32Array): void {
  const o4 = o - (o % 4);
  let r = 0;
  for (; r + 1 < m; r += 2) {
    const a0 = r * k;
    const a1 = a0 + k;
    const y0 = r * o;
    const y1 = y0 + o;
    let j = 0;
    for (; j < o4; j += 4) {
      const w0 = j * k;
      const w1 = w0 + k;
      const w2 = w1 + k;
      const w3 = w2 + k;
      let s00 = 0,
        s01 = 0,
        s02 = 0,
        s03 = 0,
        s10 = 0,
        s11 = 0,
        s12 = 0,
        s13 = 0;
      for (let i = 0; i < k; i++) {
        const x0 = a[a0 + i]!;
        const x1 = a[a1 + i]!;
        const v0 = w[w0 + i]!;
        const v1 = w[w1 + i]!;
        const v2 = w[w2 + i]!;
        const v3 = w[w3 + i]!;
        s00 += x0 * v0;
        s01 += x0 * v1;
        s02 += x0 * v2;
        s03 += x0 * v3;
        s10 += x1 * v0;
        s11 += x1 * v1;
        s12 += x1 * v2;
        s13 += x1 * v3;
      }
      const b0 = bias[j]!,
        b1 = bias[j + 1]!,
        b2 = bias[j + 2]!,
        b3 = bias[j + 3]!;
      out[y0 + j] = s00 + b0;
      out[y0 + j + 1] = s01 + b1;
      out[y0 + j + 2] = s02 + b2;
      out[y0 + j + 3] = s03 + b3;
      out[y1 + j] = s10 + b0;
      out[y1 + j + 1] = s11 + b1;
      out[y1 + j + 2] = s12 + b2;
      out[y1 + j + 3] = s13 + b3;
    }
    for (; j < o; j++) {
      const w0 = j * k;
      let s0 = 0,
        s1 = 0;
      for (let i = 0; i < k; i++) {
        const v = w[w0 + i]!;
        s0 += a[a0 + i]! * v;
        s1 += a[a1 + i]! * v;
      }
      out[y0 + j] = s0 + bias[j]!;
      out[y1 + j] = s1 + bias[j]!;
    }
  }
  for (; r < m; r++) {
    const a0 = r * k;
    for (let j = 0; j < o; j++) {
      const w0 = j * k;
      let s = 0;
      for (let i = 0; i < k; i++) s += a[a0 + i]! * w[w0 + i]!;
      out[r * o + j] = s + bias[j]!;
    }
  }
}

/** LayerNorm over the last axis (width d) of `rows` rows: biased variance, eps inside the sqrt. */
export function layerNorm(x: Float32Array, rows: number, d: number, gamma: Float32Array, beta: Float32Array, eps: number, out: Float32Array): void {
  for (let r = 0; r < rows; r++) {
    const base = r * d;
    let mean = 0;
    for (let i = 0; i < d; i++) mean += x[base + i]!;
    mean /= d;
    let v = 0;
    for (let i = 0; i < d; i++) {
      const t = x[base + i]! - mean;
      v += t * t;
    }
    const inv = 1 / Math.sqrt(v / d + eps);
    for (let i = 0; i < d; i++) out[base + i] = (x[base + i]! - mean) * inv * gamma[i]! + beta[i]!;
  }
}

/**
 * Gated attention, fused with the multiply: v[r, :] ← v[r, :] ⊙ softmax(logits[r, :]).
 * `logits` is overwritten.
 */
export function softmaxGate(v: Float32Array, logits: Float32Array, rows: number, d: number): void {
  for (let r = 0; r < rows; r++) {
    const base = r * d;
    let max = -Infinity;
    for (let i = 0; i < d; i++) if (logits[base + i]! > max) max = logits[base + i]!;
    let sum = 0;
    for (let i = 0; i < d; i++) {
      const e = Math.exp(logits[base + i]! - max);
      logits[base + i] = e;
      sum += e;
    }
    const inv = 1 / sum;
    for (let i = 0; i < d; i++) v[base + i] = v[base + i]! * (logits[base + i]! * inv);
  }
}

/** Per-block transpose: for each of `blocks` blocks, [rows, cols] → [cols, rows]. */
export function transposeBlocks(x: Float32Array, blocks: number, rows: number, cols: number, out: Float32Array): void {
  const size = rows * cols;
  for (let b = 0; b < blocks; b++) {
    const base = b * size;
    for (let r = 0; r < rows; r++) {
      const src = base + r * cols;
      for (let c = 0; c < cols; c++) out[base + c * rows + r] = x[src + c]!;
    }
  }
}

/** h[b, r, c] += x[b, c, r] for each block: adds a transposed block (the patch-mixer residual). */
export function addTransposedBlocks(h: Float32Array, x: Float32Array, blocks: number, rows: number, cols: number): void {
  const size = rows * cols;
  for (let b = 0; b < blocks; b++) {
    const base = b * size;
    for (let c = 0; c < cols; c++) {
      const src = base + c * rows;
      for (let r = 0; r < rows; r++) h[base + r * cols + c] = h[base + r * cols + c]! + x[src + r]!;
    }
  }
}

/** h += x, element-wise over the first n values. */
export function addInPlace(h: Float32Array, x: Float32Array, n: number): void {
  for (let i = 0; i < n; i++) h[i] = h[i]! + x[i]!;
}

// ---- GELU (exact erf form) -------------------------------------------------------------------

/**
 * erf on [0, 6] from a table of cubic Hermite pieces (step 1/64). The nodes come from the
 * all-positive series erf(x) = 2/√π · e^(−x²) · Σ (2x²)ⁿ x / (2n+1)!!, exact to double rounding;
 * the interpolation error is below 1e-9, far below float32 resolution. Above 6, erf = 1 in double.
 */
const ERF_STEPS_PER_UNIT = 64;
const ERF_MAX = 6;
const ERF_COEF = buildErfTable();

function erfSeries(x: number): number {
  const x2 = x * x;
  let term = x;
  let sum = x;
  for (let n = 1; n < 400; n++) {
    term *= (2 * x2) / (2 * n + 1);
    sum += term;
    if (term < sum * 1e-18) break;
  }
  return (2 / Math.sqrt(Math.PI)) * Math.exp(-x2) * sum;
}

function buildErfTable(): Float64Array {
  const n = ERF_MAX * ERF_STEPS_PER_UNIT;
  const h = 1 / ERF_STEPS_PER_UNIT;
  const f = new Float64Array(n + 1);
  const df = new Float64Array(n + 1);
  for (let i = 0; i <= n; i++) {
    const x = i * h;
    f[i] = erfSeries(x);
    df[i] = (2 / Math.sqrt(Math.PI)) * Math.exp(-x * x) * h; // derivative in units of u = (x − xᵢ)/h
  }
  const c = new Float64Array(n * 4);
  for (let i = 0; i < n; i++) {
    const f0 = f[i]!,
      f1 = f[i + 1]!,
      d0 = df[i]!,
      d1 = df[i + 1]!;
    c[4 * i] = f0;
    c[4 * i + 1] = d0;
    c[4 * i + 2] = 3 * (f1 - f0) - 2 * d0 - d1;
    c[4 * i + 3] = 2 * (f0 - f1) + d0 + d1;
  }
  return c;
}

export function erf(x: number): number {
  const z = x < 0 ? -x : x;
  let e: number;
  if (z >= ERF_MAX) e = 1;
  else {
    const t = z * ERF_STEPS_PER_UNIT;
    const j = t | 0;
    const u = t - j;
    const p = 4 * j;
    e = ERF_COEF[p]! + u * (ERF_COEF[p + 1]! + u * (ERF_COEF[p + 2]! + u * ERF_COEF[p + 3]!));
  }
  return x < 0 ? -e : e;
}

/** In-place exact GELU: 0.5·x·(1 + erf(x/√2)). */
export function gelu(x: Float32Array, n: number): void {
  const c = ERF_COEF;
  for (let i = 0; i < n; i++) {
    const v = x[i]!;
    const z = (v < 0 ? -v : v) * Math.SQRT1_2;
    let e: number;
    if (z >= ERF_MAX) e = 1;
    else {
      const t = z * ERF_STEPS_PER_UNIT;
      const j = t | 0;
      const u = t - j;
      const p = 4 * j;
      e = c[p]! + u * (c[p + 1]! + u * (c[p + 2]! + u * c[p + 3]!));
    }
    x[i] = 0.5 * v * (1 + (v < 0 ? -e : e));
  }
}
