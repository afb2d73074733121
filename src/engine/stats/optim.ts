/**
 * Nelder-Mead simplex minimiser (the default of R's optim), used where no library fits:
 * the theta models' and the exponential-smoothing combination's parameters. Bounds are
 * handled by the objective (return Infinity outside them).
 */
export function nelderMead(
  f: (x: number[]) => number,
  x0: number[],
  opts: { maxIter?: number; tol?: number; step?: number[] } = {},
): { x: number[]; value: number } {
  const n = x0.length;
  const maxIter = opts.maxIter ?? 200 * n;
  const tol = opts.tol ?? 1e-8;
  const simplex: number[][] = [x0.slice()];
  for (let i = 0; i < n; i++) {
    const p = x0.slice();
    const step = opts.step?.[i] ?? (p[i] !== 0 ? 0.1 * Math.abs(p[i]!) : 0.1);
    p[i] = p[i]! + step;
    simplex.push(p);
  }
  let values = simplex.map(f);
  for (let iter = 0; iter < maxIter; iter++) {
    const order = values.map((_v, i) => i).sort((a, b) => values[a]! - values[b]!);
    const s = order.map((i) => simplex[i]!);
    const v = order.map((i) => values[i]!);
    simplex.splice(0, simplex.length, ...s);
    values = v;
    const best = values[0]!;
    const worst = values[n]!;
    if (Math.abs(worst - best) <= tol * (Math.abs(best) + tol)) break;
    const centroid = new Array<number>(n).fill(0);
    for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) centroid[j]! += simplex[i]![j]! / n;
    const move = (t: number): number[] => centroid.map((c, j) => c + t * (simplex[n]![j]! - c));
    const xr = move(-1);
    const fr = f(xr);
    if (fr < values[0]!) {
      const xe = move(-2);
      const fe = f(xe);
      if (fe < fr) {
        simplex[n] = xe;
        values[n] = fe;
      } else {
        simplex[n] = xr;
        values[n] = fr;
      }
    } else if (fr < values[n - 1]!) {
      simplex[n] = xr;
      values[n] = fr;
    } else {
      const outside = fr < values[n]!;
      const xc = move(outside ? -0.5 : 0.5);
      const fc = f(xc);
      if (fc < (outside ? fr : values[n]!)) {
        simplex[n] = xc;
        values[n] = fc;
      } else {
        for (let i = 1; i <= n; i++) {
          simplex[i] = simplex[i]!.map((x, j) => simplex[0]![j]! + 0.5 * (x - simplex[0]![j]!));
          values[i] = f(simplex[i]!);
        }
      }
    }
  }
  let bi = 0;
  for (let i = 1; i <= n; i++) if (values[i]! < values[bi]!) bi = i;
  return { x: simplex[bi]!, value: values[bi]! };
}
