import { createWorkspace, DEFAULT_CHUNK, workspaceSizes } from './forward.ts';
import type { TtmRuntime } from './forward.ts';
import { KERNELS_WASM_FUSED, KERNELS_WASM_PLAIN } from './kernels-wasm.ts';
import { TTM_NORM_EPS } from './weights.ts';
import type { LayerW, LinearW, MixerW, TtmWeights } from './weights.ts';

/**
 * The TTM runtime whose matrix products run in WebAssembly SIMD (kernels.wat): weights are
 * copied once into the module's memory, packed in panels of 8 outputs ([out/8][in][8]), and every
 * scratch buffer lives in the same memory, so the JavaScript parts of the pass (LayerNorm, GELU,
 * softmax) and the WebAssembly matrix kernel share buffers without copies.
 *
 * Uses relaxed-SIMD fused multiply-add when the engine accepts it (Node 24 does), else plain
 * SIMD mul + add; returns null when WebAssembly SIMD is unavailable.
 */

interface KernelExports {
  linear(a: number, m: number, k: number, wp: number, o: number, bias: number, out: number, act: number): void;
  gelu(p: number, n: number): void;
  softmax_gate(v: number, logits: number, rows: number, d: number): void;
  layer_norm(x: number, rows: number, d: number, g: number, b: number, eps: number, out: number): void;
  transpose_blocks(x: number, blocks: number, rows: number, cols: number, out: number): void;
  add_transposed_blocks(h: number, x: number, blocks: number, rows: number, cols: number): void;
  add_in_place(h: number, x: number, n: number): void;
}

const PAGE = 65536;

/** The part of the WebAssembly JS API used here (the project's TypeScript libs do not declare it). */
interface WasmApi {
  validate(bytes: Uint8Array): boolean;
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: Record<string, Record<string, unknown>>) => { exports: unknown };
  Memory: new (desc: { initial: number }) => { buffer: ArrayBuffer };
}
const wasmApi = (globalThis as unknown as { WebAssembly?: WasmApi }).WebAssembly;

export function createWasmRuntime(weights: TtmWeights, chunk = DEFAULT_CHUNK): TtmRuntime | null {
  const api = wasmApi;
  if (!api) return null;
  const fused = moduleFrom(api, KERNELS_WASM_FUSED);
  const mod = fused ?? moduleFrom(api, KERNELS_WASM_PLAIN);
  if (!mod) return null;

  const linears = allLinears(weights);
  const norms = allNorms(weights);
  let floats = 0;
  for (const l of linears) floats += align(l.w.length) + align(l.b.length);
  for (const n of norms) floats += align(n.length);
  for (const n of Object.values(workspaceSizes(chunk))) floats += align(n);
  const memory = new api.Memory({ initial: Math.ceil((floats * 4 + PAGE) / PAGE) });
  const instance = new api.Instance(mod, { env: { memory } });
  const k = instance.exports as unknown as KernelExports;

  let next = 0;
  const alloc = (n: number): Float32Array => {
    const view = new Float32Array(memory.buffer, next * 4, n);
    next += align(n);
    return view;
  };
  const copy = (src: Float32Array): Float32Array => {
    const dst = alloc(src.length);
    dst.set(src);
    return dst;
  };
  const packLinear = (l: LinearW): LinearW => {
    if (l.out % 8 !== 0) throw new Error(`linear layer width ${l.out} is not a multiple of 8`);
    const wp = alloc(l.w.length);
    for (let j = 0; j < l.out; j++) {
      const panel = (j >> 3) * l.in * 8;
      for (let i = 0; i < l.in; i++) wp[panel + i * 8 + (j & 7)] = l.w[j * l.in + i]!;
    }
    return { w: wp, b: copy(l.b), out: l.out, in: l.in };
  };
  const packMixer = (m: MixerW): MixerW => ({
    norm: { g: copy(m.norm.g), b: copy(m.norm.b) },
    fc1: packLinear(m.fc1),
    fc2: packLinear(m.fc2),
    gate: packLinear(m.gate),
  });
  const packLayer = (l: LayerW): LayerW => ({ patch: packMixer(l.patch), feature: packMixer(l.feature), n: l.n, d: l.d });

  const packed: TtmWeights = {
    patcher: packLinear(weights.patcher),
    encoder: weights.encoder.map((level) => level.map(packLayer)),
    adapter: packLinear(weights.adapter),
    decoder: weights.decoder.map(packLayer),
    head: packLinear(weights.head),
    parameterCount: weights.parameterCount,
  };
  const ws = createWorkspace(chunk, alloc);
  return {
    kind: fused ? 'wasm-simd-fma' : 'wasm-simd',
    weights: packed,
    ws,
    ops: {
      linear: (a, m, lw, out, act) => k.linear(a.byteOffset, m, lw.in, lw.w.byteOffset, lw.out, lw.b.byteOffset, out.byteOffset, act ? 1 : 0),
      layerNorm: (x, rows, d, g, b, out) => k.layer_norm(x.byteOffset, rows, d, g.byteOffset, b.byteOffset, TTM_NORM_EPS, out.byteOffset),
      softmaxGate: (v, logits, rows, d) => k.softmax_gate(v.byteOffset, logits.byteOffset, rows, d),
      transposeBlocks: (x, blocks, rows, cols, out) => k.transpose_blocks(x.byteOffset, blocks, rows, cols, out.byteOffset),
      addTransposedBlocks: (h, x, blocks, rows, cols) => k.add_transposed_blocks(h.byteOffset, x.byteOffset, blocks, rows, cols),
      addInPlace: (h, x, n) => k.add_in_place(h.byteOffset, x.byteOffset, n),
    },
  };
}

/** Rounds a float count up to 16 floats (64 bytes), so every buffer starts on a cache line. */
function align(n: number): number {
  return Math.ceil(n / 16) * 16;
}

function moduleFrom(api: WasmApi, base64: string): object | null {
  const bytes = Buffer.from(base64, 'base64');
  if (!api.validate(bytes)) return null;
  return new api.Module(bytes);
}

function allLinears(w: TtmWeights): LinearW[] {
  const layers = [...w.encoder.flat(), ...w.decoder];
  const mixers = layers.flatMap((l) => [l.patch, l.feature]);
  return [w.patcher, w.adapter, w.head, ...mixers.flatMap((m) => [m.fc1, m.fc2, m.gate])];
}

function allNorms(w: TtmWeights): Float32Array[] {
  const layers = [...w.encoder.flat(), ...w.decoder];
  return layers.flatMap((l) => [l.patch, l.feature]).flatMap((m) => [m.norm.g, m.norm.b]);
}
