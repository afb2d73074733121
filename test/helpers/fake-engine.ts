import { NOT_DOWNLOADED } from '../../src/engine/files.ts';
import { EngineError, type Engine, type EngineJob, type ForecastJob, modelJob, type ModelInfo, type SeriesForecast } from '../../src/engine/types.ts';

/**
 * A test double of the engine, for the cases the real pool cannot be made to produce on demand
 * (timeouts, a full queue, a crashing model). Its `echo-last` model repeats the last observed value.
 */
export class FakeEngine implements Engine {
  readonly jobs: ForecastJob[] = [];
  behaviour: 'ok' | EngineError['kind'] = 'ok';
  /** Per model, instead of `behaviour` (one ensemble candidate times out while another answers). */
  readonly byModel = new Map<string, 'ok' | EngineError['kind']>();
  delayMs = 0;
  /** The CPU time a `timeout` reports its thread used (ms); undefined: not measured (a remote node). */
  timeoutCpuMs: number | undefined = undefined;

  models(): ModelInfo[] {
    const base = {
      provider: 'test',
      family: 'test',
      kind: 'statistical' as const,
      description: 'test double',
      license: 'MIT',
      supportedTasks: ['forecast'],
      contextLength: 1000,
      maxContextLength: 1000,
      capabilities: ['quantiles', 'samples', 'missing_values'],
      quantileMethod: 'fixed (test double)',
    };
    return [
      { ...base, id: 'echo-last', name: 'Echo last', minPoints: 1, maxHorizon: null, available: true },
      { ...base, id: 'echo-short', name: 'Echo (max horizon 5, min 3 points)', minPoints: 3, maxHorizon: 5, available: true },
      {
        ...base,
        id: 'org/slashed-model',
        name: 'Slashed id',
        kind: 'neural',
        minPoints: 1,
        maxHorizon: null,
        available: false,
        unavailableReason: NOT_DOWNLOADED('org/slashed-model'),
      },
    ];
  }

  /** The tenant (account) each job was run for. The jobs are recorded as a model gets them (plain arrays). */
  readonly tenants: (string | undefined)[] = [];

  async forecast(given: EngineJob, opts?: { tenant?: string }): Promise<SeriesForecast[]> {
    const job = modelJob(given);
    this.jobs.push(job);
    this.tenants.push(opts?.tenant);
    if (this.delayMs > 0) await new Promise((r) => setTimeout(r, this.delayMs));
    const behaviour = this.byModel.get(job.model) ?? this.behaviour;
    if (behaviour !== 'ok') throw new EngineError(behaviour, `fake ${behaviour}`, 0, undefined, behaviour === 'timeout' ? this.timeoutCpuMs : undefined);
    return job.series.map((s) => {
      const observed = s.filter((x) => !Number.isNaN(x));
      const last = observed.at(-1) ?? 0;
      const mean = new Array<number>(job.horizon).fill(last);
      return {
        mean,
        quantiles: job.quantileLevels.map((q) => mean.map((m) => m + (q - 0.5))),
        ...(job.numSamples > 0 ? { samples: Array.from({ length: job.numSamples }, (_, i) => mean.map((m) => m + i)) } : {}),
      };
    });
  }

  async close(): Promise<void> {}
}
