// Development helper: in-process accuracy on every k-th M3 series (no pool). Not a benchmark.
import { FREQUENCIES, loadM3, mase, smape } from './lib/m3.ts';
import { BUILTIN_MODELS as MODEL_IMPLS } from '../src/engine/registry.ts';

const every = Number(process.argv[2] ?? 10);
const only = process.argv[3]?.split(',');
const series = loadM3().filter((_, i) => i % every === 0);
for (const impl of MODEL_IMPLS) {
  if (only && !only.includes(impl.info.id)) continue;
  const t0 = performance.now();
  const agg: Record<string, { s: number; m: number; k: number }> = {};
  for (const s of series) {
    const [fc] = await impl.forecast(
      { model: impl.info.id, series: [s.train], horizon: s.horizon, quantileLevels: [0.1, 0.5, 0.9], numSamples: 0, seasonLength: s.seasonality, seed: 1 },
      { modelsDir: '', threads: 1 },
    );
    agg[s.frequency] ??= { s: 0, m: 0, k: 0 };
    const a = agg[s.frequency]!;
    a.s += smape(s.test, fc!.mean);
    a.m += mase(s.train, s.test, fc!.mean, s.seasonality);
    a.k++;
  }
  let S = 0,
    M = 0,
    K = 0;
  const parts = FREQUENCIES.map((f) => {
    const a = agg[f]!;
    S += a.s;
    M += a.m;
    K += a.k;
    return `${f} ${(a.s / a.k).toFixed(2)}/${(a.m / a.k).toFixed(3)}`;
  });
  console.log(
    `${impl.info.id.padEnd(15)} all ${(S / K).toFixed(2)}/${(M / K).toFixed(3)} | ${parts.join(' | ')} | ${((performance.now() - t0) / K).toFixed(1)} ms/series n=${K}`,
  );
}
