import type { OnnxGraphSpec } from './spec.ts';

export interface PreparedContext {
  /** Exactly `contextLength` values, oldest first. */
  values: Float32Array;
  /** Points of the series inside the window (after truncation). */
  used: number;
  /** Positions filled in on the left. */
  padded: number;
  /** Missing observations replaced by imputation (0 for NaN-aware graphs). */
  imputed: number;
  /** Original length when the series was longer than the graph's context. */
  truncatedFrom: number | null;
}

/**
 * Fills NaN like numpy's `np.interp` over the finite points (linear inside, the edge value
 * outside), or with the single finite value; a series without any becomes zeros. This is
 * the imputation of TinyCast's official predictor.
 */
export function imputeLinear(values: Float32Array): number {
  let first = -1;
  let count = 0;
  for (let i = 0; i < values.length; i++) {
    if (Number.isNaN(values[i])) count++;
    else if (first < 0) first = i;
  }
  if (count === 0) return 0;
  if (first < 0) {
    values.fill(0);
    return count;
  }
  const head = values[first] ?? 0;
  for (let i = 0; i < first; i++) values[i] = head;
  let prev = first;
  for (let i = first + 1; i < values.length; i++) {
    if (Number.isNaN(values[i])) continue;
    const a = values[prev] ?? 0;
    const b = values[i] ?? 0;
    for (let j = prev + 1; j < i; j++) values[j] = a + ((b - a) * (j - prev)) / (i - prev);
    prev = i;
  }
  const tail = values[prev] ?? 0;
  for (let i = prev + 1; i < values.length; i++) values[i] = tail;
  return count;
}

/**
 * The context row for one series: the newest `contextLength` points, left-padded as the
 * graph's contract says (see OnnxGraphSpec.missing).
 */
export function prepareContext(series: readonly number[], contextLength: number, missing: OnnxGraphSpec['missing']): PreparedContext {
  const start = Math.max(0, series.length - contextLength);
  const used = series.length - start;
  const window = new Float32Array(used);
  for (let i = 0; i < used; i++) {
    const v = series[start + i] ?? NaN;
    window[i] = Number.isFinite(v) ? v : NaN;
  }
  const padded = contextLength - used;
  const values = new Float32Array(contextLength);
  let imputed = 0;
  if (missing === 'nan') {
    values.fill(NaN, 0, padded);
    values.set(window, padded);
  } else if (missing === 'impute_pad_first') {
    // Official TinyCast order: pad with the window's first value (NaN or not), then impute.
    values.fill(window[0] ?? NaN, 0, padded);
    values.set(window, padded);
    const before = countNaN(window);
    imputeLinear(values);
    imputed = before;
  } else {
    // TinyTimeMixer: missing and padded points take the mean of the observed ones, which the
    // graph's scaler maps to 0 (src/engine/neural/ttm/predict.ts does the same).
    let sum = 0;
    let k = 0;
    for (const v of window) {
      if (!Number.isNaN(v)) {
        sum += v;
        k++;
      }
    }
    const fill = k > 0 ? sum / k : 0;
    imputed = used - k;
    values.fill(fill, 0, padded);
    for (let i = 0; i < used; i++) values[padded + i] = Number.isNaN(window[i] ?? NaN) ? fill : (window[i] ?? fill);
  }
  return { values, used, padded, imputed, truncatedFrom: start > 0 ? series.length : null };
}

function countNaN(values: Float32Array): number {
  let n = 0;
  for (const v of values) if (Number.isNaN(v)) n++;
  return n;
}

export function countFinite(series: readonly number[]): number {
  let n = 0;
  for (const v of series) if (Number.isFinite(v)) n++;
  return n;
}
