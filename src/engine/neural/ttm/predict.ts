import { ttmForward } from './forward.ts';
import type { TtmRuntime } from './forward.ts';
import { TTM_CONTEXT, TTM_HORIZON } from './weights.ts';

/**
 * Turns raw univariate contexts (any length, NaN = missing) into model inputs the way the
 * granite-tsfm pipeline does, and rolls the 96-step model out for longer horizons.
 *
 * Reference behaviour being reproduced: the pipeline standard-scales the data, replaces NaN by 0
 * (`nan_to_num`), passes `past_observed_mask` (0 where the value was missing) so the model's own
 * scaler ignores those points, and, with `enable_padding`, pads short contexts at the front with 0.
 * A 0 in the standard-scaled space is the mean, so here a missing or padded point becomes the mean
 * of the observed points of the window, marked unobserved. The network therefore sees exactly what
 * it sees in the reference pipeline (zeros after its scaler), whatever the units of the input.
 */

const PREDICT_SLICE = 1024;

export interface PreparedBatch {
  values: Float64Array;
  observed: Uint8Array;
  count: number;
}

/** Builds S × 512 inputs from the last 512 points of each context. Throws on an all-missing window. */
export function prepareContexts(contexts: ArrayLike<number>[]): PreparedBatch {
  const count = contexts.length;
  const values = new Float64Array(count * TTM_CONTEXT);
  const observed = new Uint8Array(count * TTM_CONTEXT);
  for (let i = 0; i < count; i++) {
    const src = contexts[i]!;
    const n = Math.min(src.length, TTM_CONTEXT);
    const from = src.length - n;
    const pad = TTM_CONTEXT - n;
    let sum = 0;
    let k = 0;
    for (let t = 0; t < n; t++) {
      const v = src[from + t]!;
      if (Number.isFinite(v)) {
        sum += v;
        k++;
      }
    }
    if (k === 0) throw new RangeError(`context ${i} has no observed value in its last ${TTM_CONTEXT} points`);
    const fill = sum / k;
    const base = i * TTM_CONTEXT;
    for (let t = 0; t < pad; t++) values[base + t] = fill;
    for (let t = 0; t < n; t++) {
      const v = src[from + t]!;
      const ok = Number.isFinite(v);
      values[base + pad + t] = ok ? v : fill;
      observed[base + pad + t] = ok ? 1 : 0;
    }
  }
  return { values, observed, count };
}

/**
 * Point forecasts of `horizon` steps for each context. Horizons over 96 are rolled out: the
 * forecast is appended to the context (as observed values) and the model is run again, the way
 * granite-tsfm's rolling prediction does.
 */
export function predict(rt: TtmRuntime, contexts: ArrayLike<number>[], horizon: number): Float64Array[] {
  // Bounded slices keep the prepared inputs small (a slice is 1024 × 512 doubles = 4 MB).
  if (contexts.length > PREDICT_SLICE) {
    const out: Float64Array[] = [];
    for (let i = 0; i < contexts.length; i += PREDICT_SLICE) {
      out.push(...predict(rt, contexts.slice(i, i + PREDICT_SLICE), horizon));
    }
    return out;
  }
  const out = contexts.map(() => new Float64Array(horizon));
  let current: ArrayLike<number>[] = contexts;
  for (let done = 0; done < horizon; done += TTM_HORIZON) {
    const batch = prepareContexts(current);
    const { forecast } = ttmForward(rt, batch);
    const take = Math.min(TTM_HORIZON, horizon - done);
    for (let i = 0; i < contexts.length; i++) {
      out[i]!.set(forecast.subarray(i * TTM_HORIZON, i * TTM_HORIZON + take), done);
    }
    if (done + TTM_HORIZON < horizon) {
      current = current.map((_, i) => {
        const next = new Float64Array(TTM_CONTEXT);
        const keep = TTM_CONTEXT - TTM_HORIZON;
        // The last 416 points of the context (missing ones filled as the model saw them) + the 96 forecast.
        next.set(batch.values.subarray(i * TTM_CONTEXT + TTM_HORIZON, (i + 1) * TTM_CONTEXT), 0);
        for (let t = 0; t < keep; t++) {
          if (!batch.observed[i * TTM_CONTEXT + TTM_HORIZON + t]) next[t] = NaN;
        }
        next.set(forecast.subarray(i * TTM_HORIZON, (i + 1) * TTM_HORIZON), keep);
        return next;
      });
    }
  }
  return out;
}
