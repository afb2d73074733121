/**
 * The least-squares line through the first `n` values of y against x = 1..n (R's lsfit on a time
 * index): ETS's initial level and slope, CES's seasonal seed. Sums in this order keep R parity.
 */
export function timeLine(y: readonly number[], n = y.length): { intercept: number; slope: number } {
  let sx = 0;
  let sy = 0;
  for (let i = 0; i < n; i++) {
    sx += i + 1;
    sy += y[i]!;
  }
  const mx = sx / n;
  const my = sy / n;
  let sxx = 0;
  let sxy = 0;
  for (let i = 0; i < n; i++) {
    sxx += (i + 1 - mx) ** 2;
    sxy += (i + 1 - mx) * (y[i]! - my);
  }
  const slope = sxx > 0 ? sxy / sxx : 0;
  return { intercept: my - slope * mx, slope };
}
