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
 * A 0 in the standard-scaled space is the mean, so here a missing point becomes the mean of the
 * observed points of the window, marked unobserved. The network therefore sees exactly what it sees
 * in the reference pipeline (zeros after its scaler), whatever the units of the input. Short
 * contexts are padded as `prepareContexts` says (seasonal tiling, masked from the scaler).
 */

const PREDICT_SLICE = 1024;

export interface PreparedBatch {
  values: Float64Array;
  observed: Uint8Array;
  count: number;
}

/**
 * Builds S × 512 inputs from the last 512 points of each context. Throws on an all-missing window.
 *
 * A context shorter than 512 points is padded at the front, and the padded positions are marked
 * unobserved, so the model's scaler takes its mean and spread from the real points only. What the
 * padded positions hold (the network sees them, the scaler does not): with a season length m ≥ 2
 * (`seasons[i]`) and at least m points, the oldest season repeated backwards in phase (position t
 * holds the value at t + m); otherwise the oldest value repeated. M3 monthly (bench/results/m3-ttm.md)
 * chose this over the mean (granite-tsfm's zero padding in standard-scaled space), the first value
 * without a season, repeating later seasons, and every fill counted by the scaler.
 */
export function prepareContexts(contexts: ArrayLike<number>[], seasons?: readonly number[]): PreparedBatch {
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
    for (let t = 0; t < n; t++) {
      const v = src[from + t]!;
      const ok = Number.isFinite(v);
      values[base + pad + t] = ok ? v : fill;
      observed[base + pad + t] = ok ? 1 : 0;
    }
    if (pad === 0) continue;
    // Position t (padded) holds the value one season later, again and again: the oldest season
    // repeated backwards in phase (the first value when there is no season or fewer points than one).
    const m = Math.round(seasons?.[i] ?? 1);
    const shift = m >= 2 && n >= m ? m : 1;
    for (let t = pad - 1; t >= 0; t--) values[base + t] = values[base + t + shift]!;
  }
  return { values, observed, count };
}

/** How a context of `length` points is padded (model info): not at all, by repeating its oldest season, or its oldest value. */
export function paddingOf(length: number, season: number | undefined): { padded: number; padding: 'none' | 'oldest_season' | 'oldest_value' } {
  const n = Math.min(length, TTM_CONTEXT);
  const padded = TTM_CONTEXT - n;
  if (padded === 0) return { padded, padding: 'none' };
  const m = Math.round(season ?? 1);
  return { padded, padding: m >= 2 && n >= m ? 'oldest_season' : 'oldest_value' };
}

/**
 * Standard-scales each window by its observed points (sklearn's StandardScaler: mean, population
 * standard deviation, 1 for a constant window) before the network, and maps the forecast back.
 * The reference pipeline standard-scales the data before the model (its TimeSeriesPreprocessor),
 * so the model's own scaler always sees a spread near 1 and its `+ 1e-5` inside the square root
 * is negligible. On raw values that term is not: a series whose spread is below about 0.003 in its
 * units (rates, fractions, small readings) was flattened by it, so the forecast depended on the
 * units (M3 monthly scaled by 1e-6: sMAPE 19.72 instead of 16.18, bench/results/m3-ttm.md).
 * The network is affine-equivariant apart from that term, so nothing else changes.
 */
export function standardisedForward(rt: TtmRuntime, batch: PreparedBatch): { forecast: Float64Array } {
  const { values, observed, count } = batch;
  const scaled = new Float64Array(values.length);
  const loc = new Float64Array(count);
  const spread = new Float64Array(count);
  for (let i = 0; i < count; i++) {
    const base = i * TTM_CONTEXT;
    let n = 0;
    let sum = 0;
    for (let t = 0; t < TTM_CONTEXT; t++) {
      if (observed[base + t]) {
        sum += values[base + t]!;
        n++;
      }
    }
    const mean = sum / Math.max(n, 1);
    // The deviations are divided by the largest one before squaring: a window whose spread is
    // tiny next to its series' scale (runModel rescales by the whole series, src/engine/magnitude.ts)
    // would otherwise square to zero and be treated as constant.
    let far = 0;
    for (let t = 0; t < TTM_CONTEXT; t++) {
      if (observed[base + t]) far = Math.max(far, Math.abs(values[base + t]! - mean));
    }
    let v = 0;
    for (let t = 0; t < TTM_CONTEXT; t++) {
      if (observed[base + t] && far > 0) v += ((values[base + t]! - mean) / far) ** 2;
    }
    const sd = far * Math.sqrt(v / Math.max(n, 1));
    const sc = sd > 0 && Number.isFinite(sd) ? sd : 1;
    loc[i] = mean;
    spread[i] = sc;
    for (let t = 0; t < TTM_CONTEXT; t++) scaled[base + t] = (values[base + t]! - mean) / sc;
  }
  const { forecast } = ttmForward(rt, { values: scaled, observed, count });
  for (let i = 0; i < count; i++) {
    for (let t = 0; t < TTM_HORIZON; t++) forecast[i * TTM_HORIZON + t] = forecast[i * TTM_HORIZON + t]! * spread[i]! + loc[i]!;
  }
  return { forecast };
}

/**
 * Point forecasts of `horizon` steps for each context. Horizons over 96 are rolled out: the
 * forecast is appended to the context (as observed values) and the model is run again, the way
 * granite-tsfm's rolling prediction does.
 */
export function predict(rt: TtmRuntime, contexts: ArrayLike<number>[], horizon: number, seasons?: readonly number[]): Float64Array[] {
  // Bounded slices keep the prepared inputs small (a slice is 1024 × 512 doubles = 4 MB).
  if (contexts.length > PREDICT_SLICE) {
    const out: Float64Array[] = [];
    for (let i = 0; i < contexts.length; i += PREDICT_SLICE) {
      out.push(...predict(rt, contexts.slice(i, i + PREDICT_SLICE), horizon, seasons?.slice(i, i + PREDICT_SLICE)));
    }
    return out;
  }
  const out = contexts.map(() => new Float64Array(horizon));
  let current: ArrayLike<number>[] = contexts;
  for (let done = 0; done < horizon; done += TTM_HORIZON) {
    const batch = prepareContexts(current, seasons);
    const { forecast } = standardisedForward(rt, batch);
    const take = Math.min(TTM_HORIZON, horizon - done);
    for (let i = 0; i < contexts.length; i++) {
      out[i]!.set(forecast.subarray(i * TTM_HORIZON, i * TTM_HORIZON + take), done);
    }
    if (done + TTM_HORIZON < horizon) {
      current = current.map((c, i) => {
        // The newest context points (missing ones stay missing) followed by the 96 forecast values,
        // at most 512: a full window keeps its last 416 points; a short one is padded again.
        const keep = Math.min(c.length, TTM_CONTEXT - TTM_HORIZON);
        const next = new Float64Array(keep + TTM_HORIZON);
        for (let t = 0; t < keep; t++) next[t] = c[c.length - keep + t]!;
        next.set(forecast.subarray(i * TTM_HORIZON, (i + 1) * TTM_HORIZON), keep);
        return next;
      });
    }
  }
  return out;
}
