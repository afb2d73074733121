import type { ForecastResponse } from '../forecasting/schemas.ts';

/**
 * Weights from backtest scores (lower is better): w_i ∝ 1 / score_i, normalised to sum to 1
 * (the service shrinks them toward equal weights: service.ts `shrunkWeights`).
 * Models with a perfect score (0) share all the weight; non-finite scores get none unless no
 * model has a finite score, in which case the weights are equal.
 */
export function inverseScoreWeights(scores: number[]): number[] {
  if (scores.length === 0) return [];
  const zeros = scores.map((s) => s === 0);
  if (zeros.some(Boolean)) {
    const n = zeros.filter(Boolean).length;
    return zeros.map((z) => (z ? 1 / n : 0));
  }
  const inv = scores.map((s) => (Number.isFinite(s) && s > 0 ? 1 / s : 0));
  const sum = inv.reduce((a, b) => a + b, 0);
  if (sum === 0) return scores.map(() => 1 / scores.length);
  return inv.map((x) => x / sum);
}

/**
 * The blend of member forecasts: the weighted mean of the means, and per level the weighted
 * mean of the members' quantiles (quantile averaging). With non-negative weights that average is
 * already non-decreasing in the level; a final pass sorts each step's values across levels to
 * guard against rounding. Samples: the members' paths, taken in proportion to the weights.
 */
export function blend(
  members: ForecastResponse[],
  weights: number[],
): Omit<ForecastResponse, 'id' | 'created' | 'model' | 'provider' | 'usage' | 'latency_ms' | 'metadata'> {
  const first = members[0];
  if (!first) throw new Error('blend of no members');
  const levels = first.quantile_levels;
  const order = levels
    .map((l, i) => [l, i] as const)
    .sort((a, b) => a[0] - b[0])
    .map(([, i]) => i);
  const outputs = first.outputs.map((out0, i) => {
    const steps = out0.mean.length;
    const width = out0.mean[0]?.length ?? 0;
    // Plain loops, each member's matrix looked up once: the largest ensemble (10,000 steps, 3 members,
    // 4 matrices) took 30–35 ms of one turn as nested Array.from/reduce with a lookup per value.
    // The sum is taken in the same order as before (members in order from 0), so the numbers are unchanged.
    const weighted = (pick: (m: ForecastResponse) => number[][]) => {
      const matrices = members.map(pick);
      const rows = new Array<number[]>(steps);
      for (let t = 0; t < steps; t++) {
        const row = new Array<number>(width);
        for (let v = 0; v < width; v++) {
          let acc = 0;
          for (let k = 0; k < matrices.length; k++) acc += (weights[k] as number) * (((matrices[k] as number[][])[t] as number[])[v] as number);
          row[v] = acc;
        }
        rows[t] = row;
      }
      return rows;
    };
    const mean = weighted((m) => (m.outputs[i] as ForecastResponse['outputs'][number]).mean);
    const qValues = levels.map((_, li) =>
      weighted(
        (m) =>
          (m.outputs[i] as ForecastResponse['outputs'][number]).quantile_predictions?.[li]?.values ??
          (m.outputs[i] as ForecastResponse['outputs'][number]).mean,
      ),
    );
    // Monotone in the level, step by step and variate by variate.
    // Already sorted in almost every step (a check, no allocation); sorted where rounding broke it.
    const byLevel = order.map((li) => qValues[li] as number[][]);
    for (let t = 0; t < steps; t++) {
      for (let v = 0; v < width; v++) {
        let monotone = true;
        for (let r = 1; r < byLevel.length && monotone; r++) {
          monotone = (((byLevel[r - 1] as number[][])[t] as number[])[v] as number) <= (((byLevel[r] as number[][])[t] as number[])[v] as number);
        }
        if (monotone) continue;
        const sorted = byLevel.map((q) => (q[t] as number[])[v] as number).sort((a, b) => a - b);
        byLevel.forEach((q, rank) => {
          (q[t] as number[])[v] = sorted[rank] as number;
        });
      }
    }
    let samples: number[][][] | null = null;
    const nSamples = out0.samples?.length ?? 0;
    if (nSamples > 0) {
      // Largest-remainder allocation of the paths to members, then each member's first paths.
      const raw = weights.map((w) => w * nSamples);
      const counts = raw.map(Math.floor);
      let left = nSamples - counts.reduce((a, b) => a + b, 0);
      const byRemainder = raw.map((r, k) => [r - Math.floor(r), k] as const).sort((a, b) => b[0] - a[0]);
      for (const [, k] of byRemainder) {
        if (left <= 0) break;
        counts[k] = (counts[k] as number) + 1;
        left--;
      }
      samples = [];
      members.forEach((m, k) => {
        const paths = m.outputs[i]?.samples ?? [];
        for (let s = 0; s < (counts[k] as number) && s < paths.length; s++) samples?.push(paths[s] as number[][]);
      });
    }
    return {
      mean,
      quantile_predictions: levels.map((level, li) => ({ level, values: qValues[li] as number[][] })),
      samples,
      timestamps: out0.timestamps,
      metadata: out0.metadata,
    };
  });
  return {
    object: 'forecast',
    horizon: first.horizon,
    prediction_length: first.prediction_length,
    quantile_levels: levels,
    input_points: first.input_points,
    max_context_length: members.some((m) => m.max_context_length === null) ? null : Math.min(...members.map((m) => m.max_context_length as number)),
    truncated_from: first.truncated_from,
    outputs,
  };
}
