import { EngineError } from '../types.ts';

/**
 * Missing values (NaN, or any non-finite number) are handled so that the forecast still starts
 * right after the last time step of the input:
 * - leading missing values are dropped (the series starts at its first observation);
 * - interior gaps are filled by linear interpolation between the neighbouring observations;
 * - trailing missing values are filled with the last observation (carried forward).
 * A series with fewer than `minPoints` observations (all-NaN included) is bad input.
 */
export function fillMissing(raw: readonly number[], minPoints: number, seriesIndex: number): { y: number[]; missing: number } {
  const observed: number[] = [];
  for (let i = 0; i < raw.length; i++) if (Number.isFinite(raw[i])) observed.push(i);
  if (observed.length === 0) {
    throw new EngineError('bad_input', `series ${seriesIndex} has no observed values`, seriesIndex);
  }
  if (observed.length < minPoints) {
    throw new EngineError('bad_input', `series ${seriesIndex} has ${observed.length} observed values; this model needs at least ${minPoints}`, seriesIndex);
  }
  const first = observed[0]!;
  const y: number[] = [];
  let prev = first;
  for (let k = 0; k < observed.length; k++) {
    const idx = observed[k]!;
    const value = raw[idx]!;
    if (k > 0) {
      const before = raw[prev]!;
      for (let j = prev + 1; j < idx; j++) y.push(before + ((value - before) * (j - prev)) / (idx - prev));
    }
    y.push(value);
    prev = idx;
  }
  const last = raw[prev]!;
  for (let j = prev + 1; j < raw.length; j++) y.push(last);
  return { y, missing: raw.length - first - observed.length };
}
