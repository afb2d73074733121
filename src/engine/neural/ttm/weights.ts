import type { SafetensorsFile } from '../safetensors.ts';

/**
 * The TTM R2 512→96 checkpoint as typed arrays, with every shape checked against
 * reference/ARCHITECTURE.md §10 (134 tensors, 805,280 parameters).
 */

export const TTM_CONTEXT = 512;
export const TTM_HORIZON = 96;
export const TTM_PATCH = 64;
export const TTM_PATCHES = 8;
export const TTM_D_MODEL = 192;
export const TTM_DECODER_D = 128;
export const TTM_NORM_EPS = 1e-5;
export const TTM_SCALER_MIN = 1e-5;

export interface LinearW {
  w: Float32Array;
  b: Float32Array;
  out: number;
  in: number;
}

export interface MixerW {
  norm: { g: Float32Array; b: Float32Array };
  fc1: LinearW;
  fc2: LinearW;
  gate: LinearW;
}

export interface LayerW {
  /** Mixes along the patch axis (width n). */
  patch: MixerW;
  /** Mixes along the feature axis (width d). */
  feature: MixerW;
  n: number;
  d: number;
}

export interface TtmWeights {
  patcher: LinearW;
  /** Encoder levels in execution order (mixers.0 = finest, 32×48, runs first), 2 layers each. */
  encoder: LayerW[][];
  adapter: LinearW;
  decoder: LayerW[];
  head: LinearW;
  parameterCount: number;
}

export function loadTtmWeights(file: SafetensorsFile): TtmWeights {
  let count = 0;
  const lin = (prefix: string, out: number, inp: number): LinearW => {
    const w = file.float32(`${prefix}.weight`, [out, inp]);
    const b = file.float32(`${prefix}.bias`, [out]);
    count += w.length + b.length;
    return { w, b, out, in: inp };
  };
  const mixer = (prefix: string, norm: number, width: number): MixerW => {
    const g = file.float32(`${prefix}.norm.norm.weight`, [norm]);
    const b = file.float32(`${prefix}.norm.norm.bias`, [norm]);
    count += g.length + b.length;
    return {
      norm: { g, b },
      fc1: lin(`${prefix}.mlp.fc1`, 2 * width, width),
      fc2: lin(`${prefix}.mlp.fc2`, width, 2 * width),
      gate: lin(`${prefix}.gating_block.attn_layer`, width, width),
    };
  };
  const layer = (prefix: string, n: number, d: number): LayerW => ({
    // The patch mixer's LayerNorm is over D (before the transpose); its MLP and gate act on N.
    patch: mixer(`${prefix}.patch_mixer`, d, n),
    feature: mixer(`${prefix}.feature_mixer`, d, d),
    n,
    d,
  });

  const patcher = lin('backbone.encoder.patcher', TTM_D_MODEL, TTM_PATCH);
  const encoder: LayerW[][] = [];
  for (let m = 0; m < 3; m++) {
    const f = 2 ** (2 - m);
    const n = TTM_PATCHES * f;
    const d = TTM_D_MODEL / f;
    const prefix = `backbone.encoder.mlp_mixer_encoder.mixers.${m}.mixer_layers`;
    encoder.push([layer(`${prefix}.0`, n, d), layer(`${prefix}.1`, n, d)]);
  }
  const adapter = lin('decoder.adapter', TTM_DECODER_D, TTM_D_MODEL);
  const decoder = [0, 1].map((l) => layer(`decoder.decoder_block.mixers.${l}`, TTM_PATCHES, TTM_DECODER_D));
  const head = lin('head.base_forecast_block', TTM_HORIZON, TTM_PATCHES * TTM_DECODER_D);
  if (file.tensors.size !== 134) {
    throw new Error(`TTM checkpoint has ${file.tensors.size} tensors, expected 134`);
  }
  return { patcher, encoder, adapter, decoder, head, parameterCount: count };
}
