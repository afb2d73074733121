import { addInPlace, addTransposedBlocks, gelu, layerNorm, linear, softmaxGate, transposeBlocks } from './kernels.ts';
import {
  TTM_CONTEXT, TTM_D_MODEL, TTM_DECODER_D, TTM_HORIZON, TTM_NORM_EPS, TTM_PATCHES, TTM_SCALER_MIN,
} from './weights.ts';
import type { LayerW, TtmWeights } from './weights.ts';

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

export function createWorkspace(chunk = DEFAULT_CHUNK): Workspace {
  const n = chunk * PER_SERIES;
  return {
    chunk,
    h: new Float32Array(n),
    t1: new Float32Array(n),
    t2: new Float32Array(n),
    t3: new Float32Array(2 * n),
    t4: new Float32Array(n),
    t5: new Float32Array(n),
    dec: new Float32Array(chunk * TTM_PATCHES * TTM_DECODER_D),
    head: new Float32Array(chunk * TTM_HORIZON),
  };
}

export interface ForwardInput {
  /** S × 512 values, series-major. Missing values must already be filled (see the model's imputation). */
  values: Float32Array | Float64Array;
  /** Optional S × 512 observed mask (1 observed, 0 not); used only by the scaler, as in the reference. */
  observed?: Uint8Array;
  count: number;
}

/** Returns S × 96 forecasts in the units of the input, plus each series' scaler loc and scale. */
export function ttmForward(
  weights: TtmWeights, input: ForwardInput, ws: Workspace = createWorkspace(),
): { forecast: Float64Array; loc: Float64Array; scale: Float64Array } {
  const { values, observed, count } = input;
  if (values.length !== count * TTM_CONTEXT) throw new Error(`expected ${count}×${TTM_CONTEXT} values, got ${values.length}`);
  if (observed && observed.length !== values.length) throw new Error('observed mask has the wrong length');
  const forecast = new Float64Array(count * TTM_HORIZON);
  const loc = new Float64Array(count);
  const scale = new Float64Array(count);
  for (let start = 0; start < count; start += ws.chunk) {
    const s = Math.min(ws.chunk, count - start);
    scaleInto(values, observed, start, s, ws.t1, loc, scale);
    runNetwork(weights, s, ws);
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
  values: Float32Array | Float64Array, observed: Uint8Array | undefined, start: number, s: number,
  out: Float32Array, loc: Float64Array, scale: Float64Array,
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

function runNetwork(w: TtmWeights, s: number, ws: Workspace): void {
  // Patchify is a reinterpretation: [s, 512] = [s·8, 64]. Patch embedding 64 → 192.
  linear(ws.t1, s * TTM_PATCHES, w.patcher.in, w.patcher.w, w.patcher.out, w.patcher.b, ws.h);
  // Adaptive levels: [s, 8, 192] is reinterpreted as [s, 8f, 192/f] in place (no copy needed).
  for (const level of w.encoder) for (const layer of level) ttmLayer(ws.h, s, layer, ws);
  linear(ws.h, s * TTM_PATCHES, w.adapter.in, w.adapter.w, w.adapter.out, w.adapter.b, ws.dec);
  for (const layer of w.decoder) ttmLayer(ws.dec, s, layer, ws);
  // Flatten [8, 128] → 1024 (patch-major), head 1024 → 96.
  linear(ws.dec, s, w.head.in, w.head.w, w.head.out, w.head.b, ws.head);
}

function ttmLayer(h: Float32Array, s: number, layer: LayerW, ws: Workspace): void {
  const { n, d } = layer;
  const rows = s * n;
  const size = rows * d;
  // Patch mixer: LayerNorm over D, then MLP and gate along N on the transposed [s, d, n] tensor.
  const p = layer.patch;
  layerNorm(h, rows, d, p.norm.g, p.norm.b, TTM_NORM_EPS, ws.t1);
  transposeBlocks(ws.t1, s, n, d, ws.t2);
  const tRows = s * d;
  linear(ws.t2, tRows, n, p.fc1.w, 2 * n, p.fc1.b, ws.t3);
  gelu(ws.t3, 2 * size);
  linear(ws.t3, tRows, 2 * n, p.fc2.w, n, p.fc2.b, ws.t4);
  linear(ws.t4, tRows, n, p.gate.w, n, p.gate.b, ws.t5);
  softmaxGate(ws.t4, ws.t5, tRows, n);
  addTransposedBlocks(h, ws.t4, s, n, d);
  // Feature mixer along D.
  const f = layer.feature;
  layerNorm(h, rows, d, f.norm.g, f.norm.b, TTM_NORM_EPS, ws.t1);
  linear(ws.t1, rows, d, f.fc1.w, 2 * d, f.fc1.b, ws.t3);
  gelu(ws.t3, 2 * size);
  linear(ws.t3, rows, 2 * d, f.fc2.w, d, f.fc2.b, ws.t4);
  linear(ws.t4, rows, d, f.gate.w, d, f.gate.b, ws.t5);
  softmaxGate(ws.t4, ws.t5, rows, d);
  addInPlace(h, ws.t4, size);
}
