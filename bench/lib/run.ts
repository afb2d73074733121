import { createEngine } from '../../src/engine/engine.ts';
import type { Engine } from '../../src/engine/types.ts';
import type { M3Series } from './m3.ts';

export function benchEngine(): { engine: Engine; poolSize: number } {
  const poolSize = Number(process.env.BENCH_POOL ?? 2);
  // BENCH_MODELS_DIR: where downloaded models live (e.g. shared/models for TinyTimeMixer); none by default.
  const modelsDir = process.env.BENCH_MODELS_DIR ?? '/nonexistent';
  const engine = createEngine({ poolSize, timeoutMs: 600_000, maxQueue: 1000, modelsDir, threads: 1 });
  return { engine, poolSize };
}

/**
 * Forecasts every series through the pool, `batch` series per job, at most 2 * poolSize jobs in
 * flight. Returns the point forecasts in the input order and the wall-clock seconds.
 */
export async function forecastAll(
  engine: Engine,
  poolSize: number,
  model: string,
  series: readonly M3Series[],
  batch = 4,
  quantileLevels: readonly number[] = [0.1, 0.5, 0.9],
): Promise<{ means: number[][]; quantiles: number[][][]; seconds: number }> {
  const means: number[][] = new Array<number[]>(series.length);
  const quantiles: number[][][] = new Array<number[][]>(series.length);
  const t0 = performance.now();
  let next = 0;
  async function lane(): Promise<void> {
    while (next < series.length) {
      const start = next;
      const first = series[start]!;
      const chunk: number[] = [];
      while (next < series.length && chunk.length < batch && series[next]!.horizon === first.horizon && series[next]!.seasonality === first.seasonality) {
        chunk.push(next++);
      }
      const out = await engine.forecast({
        model,
        series: chunk.map((i) => series[i]!.train),
        horizon: first.horizon,
        quantileLevels: [...quantileLevels],
        numSamples: 0,
        seasonLength: first.seasonality,
        seed: 1,
      });
      chunk.forEach((i, k) => {
        means[i] = out[k]!.mean;
        quantiles[i] = out[k]!.quantiles;
      });
    }
  }
  await Promise.all(Array.from({ length: 2 * poolSize }, lane));
  return { means, quantiles, seconds: (performance.now() - t0) / 1000 };
}

/**
 * Waits until no model is still having its downloaded files verified (engine.models() reports it
 * unavailable meanwhile): a benchmark's first requests would otherwise run without it.
 */
export async function modelsVerified(engine: Engine, timeoutMs = 120_000): Promise<void> {
  const t0 = Date.now();
  while (engine.models().some((m) => !m.available && m.unavailableReason?.startsWith('verifying'))) {
    if (Date.now() - t0 > timeoutMs) throw new Error('model files still being verified');
    await new Promise((r) => setTimeout(r, 100));
  }
}
