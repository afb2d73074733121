/**
 * Arithmetic on the data's own values, whatever their magnitude (ADR 0030's rule, for the code that
 * computes on a series outside a model: anomaly scores, cross-validation metrics). A computation
 * done on y / c, c a power of two near the largest |y|, cannot overflow (its squares and sums stay
 * near 1) and, dividing by a power of two being exact, gives the same digits as on y wherever y's
 * own arithmetic did not overflow or underflow; its results are put back in the data's units (× c)
 * or are ratios, which need no putting back.
 */

/** The largest absolute finite value over the arrays (0 when none). */
export function maxAbs(...arrays: readonly ArrayLike<number>[]): number {
  let max = 0;
  for (const xs of arrays) {
    for (let i = 0; i < xs.length; i++) {
      const v = Math.abs(xs[i]!);
      if (v > max && v !== Number.POSITIVE_INFINITY) max = v;
    }
  }
  return max;
}

/**
 * The power of two c with `max` / c in [0.5, 1) (in [1, 2) past 2^1023, the largest power of two a
 * double holds); 1 for 0 or a non-finite `max`. Subnormal values get a subnormal c, still exact.
 */
export function unitOf(max: number): number {
  if (!(max > 0) || !Number.isFinite(max)) return 1;
  let e = Math.min(1023, Math.max(-1074, Math.floor(Math.log2(max)) + 1));
  // Math.log2 may round across a power of two: settle the exponent by the quotient itself.
  while (e < 1023 && max / 2 ** e >= 1) e++;
  while (e > -1074 && max / 2 ** e < 0.5) e--;
  return 2 ** e;
}
