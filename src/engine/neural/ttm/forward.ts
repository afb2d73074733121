import { addInPlace, addTransposedBlocks, gelu, layerNorm, linear, softmaxGate, transposeBlocks } from './kernels.ts';
import { TTM_CONTEXT, TTM_D_MODEL, TTM_DECODER_D, TTM_HORIZON, TTM_NORM_EPS, TTM_PATCHES, TTM_SCALER_MIN } from './weights.ts';
import type { LayerW, LinearW, TtmWeights } from './weights.ts';

/**
 * TinyTimeMixer R2 forward pass (reference/ARCHITECTURE.md), batched over univariate series
 * (channels folded into the batch: common_channel mode never mixes them).
 *
 * Series are processed in chunks so the activations of one chunk (≈ 36 KB per series) stay in
 * the L2 cache while every weight matrix is streamed once per chunk.
 */

const PER_SERIES = TTM_PATCHES * TTM_D_MODEL; // 1536 floats: every activation is [8, 192] or smaller per series
export const DEFAULT_CHUNK = 32;

export interface Workspace {
  chunk: number;
  h: Float32Array;
  t1: Float32Array;
  t2: Float32Array;
  t3: Float32Array;
  t4: Float32Array;
  t5: Float32Array;
  dec: Float32Array;
  head: Float32Array;
}

/** Sizes (in floats) of the workspace buffers for a chunk of `chunk` series. */
export function workspaceSizes(chunk: number): Record<Exclude<keyof Workspace, 'chunk'>, number> {
  const n = chunk * PER_SERIES;
  return { h: n, t1: n, t2: n, t3: 2 * n, t4: n, t5: n, dec: chunk * TTM_PATCHES * TTM_DECODER_D, head: chunk * TTM_HORIZON };
}

export function createWorkspace(chunk = DEFAULT_CHUNK, alloc: (n: number) => Float32Array = (n) => new Float32Array(n)): Workspace {
  const z = workspaceSizes(chunk);
  return {
    chunk,
    h: alloc(z.h),
    t1: alloc(z.t1),
    t2: alloc(z.t2),
    t3: alloc(z.t3),
    t4: alloc(z.t4),
    t5: alloc(z.t5),
    dec: alloc(z.dec),
    head: alloc(z.head),
  };
}

/** The operations of the pass; every buffer argument is a whole workspace or weight array. */
export interface TtmOps {
  /** out = a · Wᵀ + b over `m` rows, then GELU when `gelu` is set. */
  linear(a: Float32Array, m: number, lw: LinearW, out: Float32Array, gelu: boolean): void;
  layerNorm(x: Float32Array, rows: number, d: number, g: Float32Array, b: Float32Array, out: Float32Array): void;
  softmaxGate(v: Float32Array, logits: Float32Array, rows: number, d: number): void;
  transposeBlocks(x: Float32Array, blocks: number, rows: number, cols: number, out: Float32Array): void;
  addTransposedBlocks(h: Float32Array, x: Float32Array, blocks: number, rows: number, cols: number): void;
  addInPlace(h: Float32Array, x: Float32Array, n: number): void;
}

/** Weights, scratch buffers and the kernels that go together (plain JS or WebAssembly SIMD). */
export interface TtmRuntime {
  kind: 'js' | 'wasm-simd' | 'wasm-simd-fma';
  weights: TtmWeights;
  ws: Workspace;
  ops: TtmOps;
}

export const JS_OPS: TtmOps = {
  linear(a, m, lw, out, act) {
    linear(a, m, lw.in, lw.w, lw.out, lw.b, out);
    if (act) gelu(out, m * lw.out);
  },
  layerNorm: (x, rows, d, g, b, out) => layerNorm(x, rows, d, g, b, TTM_NORM_EPS, out),
  softmaxGate,
  transposeBlocks,
  addTransposedBlocks,
  addInPlace,
};

export function createJsRuntime(weights: TtmWeights, chunk = DEFAULT_CHUNK): TtmRuntime {
  return { kind: 'js', weights, ws: createWorkspace(chunk), ops: JS_OPS };
}

export interface ForwardInput {
  /** S × 512 values, series-major. Missing values must already be filled (see the model's imputation). */
  values: Float32Array | Float64Array;
  /** Optional S × 512 observed mask (1 observed, 0 not); used only by the scaler, as in the reference. */
  observed?: Uint8Array;
  count: number;
}

/** Returns S × 96 forecasts in the units of the input, plus each series' scaler loc and scale. */
export function ttmForward(rt: TtmRuntime, input: ForwardInput): { forecast: Float64Array; loc: Float64Array; scale: Float64Array } {
  const { ws } = rt;
  const { values, observed, count } = input;
  if (values.length !== count * TTM_CONTEXT) throw new Error(`expected ${count}×${TTM_CONTEXT} values, got ${values.length}`);
  if (observed && observed.length !== values.length) throw new Error('observed mask has the wrong length');
  const forecast = new Float64Array(count * TTM_HORIZON);
  const loc = new Float64Array(count);
  const scale = new Float64Array(count);
  for (let start = 0; start < count; start += ws.chunk) {
    const s = Math.min(ws.chunk, count - start);
    scaleInto(values, observed, start, s, ws.t1, loc, scale);
    runNetwork(rt, s);
    for (let i = 0; i < s; i++) {
      const l = loc[start + i]!;
      const sc = scale[start + i]!;
      for (let t = 0; t < TTM_HORIZON; t++) {
        forecast[(start + i) * TTM_HORIZON + t] = ws.head[i * TTM_HORIZON + t]! * sc + l;
      }
    }
  }
  return { forecast, loc, scale };
}

/** TinyTimeMixerStdScaler: masked mean, biased variance, scale = sqrt(var + 1e-5), applied everywhere. */
function scaleInto(
  values: Float32Array | Float64Array,
  observed: Uint8Array | undefined,
  start: number,
  s: number,
  out: Float32Array,
  loc: Float64Array,
  scale: Float64Array,
): void {
  for (let i = 0; i < s; i++) {
    const base = (start + i) * TTM_CONTEXT;
    let n = 0;
    let sum = 0;
    for (let t = 0; t < TTM_CONTEXT; t++) {
      const m = observed ? observed[base + t]! : 1;
      n += m;
      sum += values[base + t]! * m;
    }
    const den = Math.max(n, 1);
    const mean = sum / den;
    let v = 0;
    for (let t = 0; t < TTM_CONTEXT; t++) {
      const m = observed ? observed[base + t]! : 1;
      const d = (values[base + t]! - mean) * m;
      v += d * d;
    }
    const sc = Math.sqrt(v / den + TTM_SCALER_MIN);
    loc[start + i] = mean;
    scale[start + i] = sc;
    const inv = 1 / sc;
    for (let t = 0; t < TTM_CONTEXT; t++) out[i * TTM_CONTEXT + t] = (values[base + t]! - mean) * inv;
  }
}

function runNetwork(rt: TtmRuntime, s: number): void {
  const { weights: w, ws, ops } = rt;
  // Patchify is a reinterpretation: [s, 512] = [s·8, 64]. Patch embedding 64 → 192.
  ops.linear(ws.t1, s * TTM_PATCHES, w.patcher, ws.h, false);
  // Adaptive levels: [s, 8, 192] is reinterpreted as [s, 8f, 192/f] in place (no copy needed).
  for (const level of w.encoder) for (const layer of level) ttmLayer(ws.h, s, layer, rt);
  ops.linear(ws.h, s * TTM_PATCHES, w.adapter, ws.dec, false);
  for (const layer of w.decoder) ttmLayer(ws.dec, s, layer, rt);
  // Flatten [8, 128] → 1024 (patch-major), head 1024 → 96.
  ops.linear(ws.dec, s, w.head, ws.head, false);
}

function ttmLayer(h: Float32Array, s: number, layer: LayerW, rt: TtmRuntime): void {
  const { ws, ops } = rt;
  const { n, d } = layer;
  const rows = s * n;
  // Patch mixer: LayerNorm over D, then MLP and gate along N on the transposed [s, d, n] tensor.
  const p = layer.patch;
  ops.layerNorm(h, rows, d, p.norm.g, p.norm.b, ws.t1);
  ops.transposeBlocks(ws.t1, s, n, d, ws.t2);
  const tRows = s * d;
  ops.linear(ws.t2, tRows, p.fc1, ws.t3, true);
  ops.linear(ws.t3, tRows, p.fc2, ws.t4, false);
  ops.linear(ws.t4, tRows, p.gate, ws.t5, false);
  ops.softmaxGate(ws.t4, ws.t5, tRows, n);
  ops.addTransposedBlocks(h, ws.t4, s, n, d);
  // Feature mixer along D.
  const f = layer.feature;
  ops.layerNorm(h, rows, d, f.norm.g, f.norm.b, ws.t1);
  ops.linear(ws.t1, rows, f.fc1, ws.t3, true);
  ops.linear(ws.t3, rows, f.fc2, ws.t4, false);
  ops.linear(ws.t4, rows, f.gate, ws.t5, false);
  ops.softmaxGate(ws.t4, ws.t5, rows, d);
  ops.addInPlace(h, ws.t4, rows * d);
}
