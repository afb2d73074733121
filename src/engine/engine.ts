import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
import { filesPresent, NOT_DOWNLOADED } from './files.ts';
import { MODEL_IMPLS } from './registry.ts';
import { EngineError, type Engine, type ForecastJob, type ModelImpl, type ModelInfo, type SeriesForecast } from './types.ts';
import { validateJob } from './validate.ts';
import type { WorkerResult, WorkerTask } from './worker.ts';

export interface EngineOptions {
  /** Worker threads; defaults to os.availableParallelism(). */
  poolSize?: number;
  /** Per-job limit, queue time included; past it the job rejects with EngineError('timeout'). */
  timeoutMs: number;
  /** Jobs that may wait for a free thread; one more rejects with EngineError('busy'). */
  maxQueue: number;
  modelsDir: string;
  /** Intra-op threads a native runtime may use inside one worker. */
  threads: number;
  /** For tests: another worker module exporting `runTask`, and the models it knows. */
  workerFile?: URL;
  impls?: readonly ModelImpl[];
}

/**
 * The engine: model fitting runs on a piscina worker-thread pool, never on the event loop.
 * A timed-out or aborted job terminates the thread running it (piscina replaces the thread),
 * so a runaway fit does not keep burning a core.
 */
export function createEngine(options: EngineOptions): Engine {
  const impls = options.impls ?? MODEL_IMPLS;
  const byId = new Map(impls.map((m) => [m.info.id, m]));
  const poolSize = Math.max(1, options.poolSize ?? availableParallelism());
  const pool = new Piscina<WorkerTask, WorkerResult>({
    filename: (options.workerFile ?? new URL('./worker.ts', import.meta.url)).href,
    minThreads: 1,
    maxThreads: poolSize,
    idleTimeout: 60_000,
  });
  const env = { modelsDir: options.modelsDir, threads: options.threads };
  // Admission is counted here rather than by piscina's maxQueue, whose limit depends on worker
  // start-up state: at most poolSize running plus maxQueue waiting, anything more is busy.
  const capacity = poolSize + Math.max(0, options.maxQueue);
  let inFlight = 0;

  function info(impl: ModelImpl): ModelInfo {
    if (filesPresent(impl, options.modelsDir)) return { ...impl.info, available: true };
    return { ...impl.info, available: false, unavailableReason: NOT_DOWNLOADED(impl.info.id) };
  }

  return {
    models: () => impls.map(info),

    async forecast(job: ForecastJob, opts?: { signal?: AbortSignal }): Promise<SeriesForecast[]> {
      const impl = byId.get(job.model);
      if (!impl) throw new EngineError('unknown_model', `unknown model '${job.model}'`);
      const status = info(impl);
      if (!status.available) throw new EngineError('unavailable', status.unavailableReason ?? `model '${job.model}' is not available`);
      validateJob(job);
      if (opts?.signal?.aborted) throw new EngineError('failed', 'aborted by the caller');
      if (inFlight >= capacity) throw new EngineError('busy', 'all model workers are busy and the queue is full');
      const timeout = AbortSignal.timeout(options.timeoutMs);
      const signal = opts?.signal ? AbortSignal.any([timeout, opts.signal]) : timeout;
      let result: WorkerResult;
      inFlight++;
      try {
        result = await pool.run({ job, env }, { name: 'runTask', signal });
      } catch (err) {
        if (timeout.aborted) throw new EngineError('timeout', `the job did not finish within ${options.timeoutMs} ms`);
        if (opts?.signal?.aborted) throw new EngineError('failed', 'aborted by the caller');
        throw new EngineError('failed', err instanceof Error ? err.message : String(err));
      } finally {
        inFlight--;
      }
      if (!result.ok) throw new EngineError(result.kind, result.message, result.seriesIndex);
      return result.forecasts;
    },

    async close(): Promise<void> {
      await pool.destroy();
    },
  };
}
