import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BUILTIN_MODELS } from '../../src/engine/registry.ts';
import { EngineError, type ForecastJob } from '../../src/engine/types.ts';
import { detectableSeason, jobWorkMs, PRICED_DETECTED_SEASON, seriesWorkMs } from '../../src/engine/work.ts';

const impl = (id: string) => {
  const m = BUILTIN_MODELS.find((x) => x.info.id === id);
  assert.ok(m, id);
  return m;
};
const seasonal = (n: number, period: number) => Array.from({ length: n }, (_, t) => 100 + 10 * Math.sin((2 * Math.PI * t) / period) + ((t * 7919) % 13) / 13);

/** The work estimate of ADR 0039 (src/engine/work.ts): what the price and the planning bound rest on. */
describe('work estimate', () => {
  const models = BUILTIN_MODELS.map((m) => m.info.id);

  test('grows with the points for every model and season (the 413 suggests a context by bisection on it)', () => {
    for (const model of models) {
      for (const seasonLength of [null, 1, 7, 12, 24, 48, 144, 288, 1440]) {
        for (const calibrated of [false, true]) {
          let previous = -1;
          for (let points = 1; points <= 20_000; points += 37) {
            const w = seriesWorkMs(model, { points, seasonLength, calibrated });
            assert.ok(w >= previous, `${model} m=${seasonLength} at ${points}: ${w} < ${previous}`);
            previous = w;
          }
        }
      }
    }
  });

  test('a season to detect is priced at least as any season up to 24 the detector may report, plus the detection', () => {
    for (const model of models) {
      for (const points of [8, 30, 60, 100, 144, 500, 2048]) {
        const priced = seriesWorkMs(model, { points, seasonLength: null, calibrated: true });
        for (let m = 1; m <= Math.min(PRICED_DETECTED_SEASON, detectableSeason(points)); m++) {
          assert.ok(priced >= seriesWorkMs(model, { points, seasonLength: m, calibrated: true }), `${model}, ${points} points, season ${m}`);
        }
      }
    }
  });

  test('the random walks cost nothing beyond their tokens; a calibrated job costs more than one without intervals', () => {
    for (const model of ['naive', 'seasonal-naive', 'drift']) assert.equal(seriesWorkMs(model, { points: 100_000, seasonLength: null, calibrated: true }), 0);
    assert.ok(
      seriesWorkMs('auto-ets', { points: 990, seasonLength: 24, calibrated: true }) >
        seriesWorkMs('auto-ets', { points: 990, seasonLength: 24, calibrated: false }),
    );
  });

  test('a job whose detected season costs more than it was priced for is refused before any fit (bad_input naming the series)', () => {
    // Seasons of 30 and 40: auto-arima would search seasonal models of those periods; the job was
    // priced (without a frequency) for seasons up to 24. The budget is the job's: the check is on the sum.
    const job: ForecastJob = {
      model: 'auto-arima',
      series: [seasonal(240, 30), seasonal(300, 40)],
      horizon: 1,
      quantileLevels: [],
      numSamples: 0,
      seasonLength: null,
      seed: 1,
    };
    const budget = jobWorkMs(job);
    const started = performance.now();
    assert.throws(
      () => impl('auto-arima').forecast({ ...job, workBudgetMs: budget }, { modelsDir: '', threads: 1 }),
      (e: unknown) => e instanceof EngineError && e.kind === 'bad_input' && e.seriesIndex === 1 && /detected season of (38|39|40|41) steps/.test(e.message),
    );
    assert.ok(performance.now() - started < 2000, 'refused before the seasonal search');
    // The same series within what was priced runs; without a budget (benchmarks, remote nodes) nothing is checked.
    const within = { ...job, series: [seasonal(240, 7), seasonal(240, 7)] };
    assert.equal((impl('auto-arima').forecast({ ...within, workBudgetMs: jobWorkMs(within) }, { modelsDir: '', threads: 1 }) as unknown[]).length, 2);
    assert.equal(
      (impl('theta').forecast({ ...job, model: 'theta', workBudgetMs: jobWorkMs({ ...job, model: 'theta' }) }, { modelsDir: '', threads: 1 }) as unknown[])
        .length,
      2,
    );
  });
});
