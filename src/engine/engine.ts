import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
import { filesStamp, NOT_DOWNLOADED } from './files.ts';
import { modelAvailability } from './store/verify.ts';
import { MODEL_IMPLS } from './registry.ts';
import { EngineError, type Engine, type EngineOptionsPerJob, type ForecastJob, type ModelImpl, type ModelInfo, type SeriesForecast } from './types.ts';
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

  // A model with files is available once they are present AND match their pinned sha256. Hashing
  // is slow, so each model's verdict is cached against a fingerprint of its files (size, mtime)
  // and recomputed in the background when the files change (e.g. after `models pull`).
  const verdicts = new Map<string, { stamp: string; available: boolean; reason?: string }>();
  const verifying = new Map<string, Promise<void>>();
  function verify(impl: ModelImpl, stamp: string): Promise<void> {
    const running = verifying.get(impl.info.id);
    if (running) return running;
    const p = modelAvailability(impl, options.modelsDir)
      .then((a) => {
        verdicts.set(impl.info.id, { stamp, available: a.available, ...(a.unavailableReason ? { reason: a.unavailableReason } : {}) });
      })
      .catch((err: unknown) => {
        verdicts.set(impl.info.id, { stamp, available: false, reason: `could not verify files: ${String(err)}` });
      })
      .finally(() => verifying.delete(impl.info.id));
    verifying.set(impl.info.id, p);
    return p;
  }
  function info(impl: ModelImpl): ModelInfo {
    if (!impl.files) return { ...impl.info, available: true };
    const stamp = filesStamp(impl, options.modelsDir);
    if (stamp === null) return { ...impl.info, available: false, unavailableReason: NOT_DOWNLOADED(impl.info.id) };
    const v = verdicts.get(impl.info.id);
    if (v && v.stamp === stamp) return { ...impl.info, available: v.available, ...(v.reason ? { unavailableReason: v.reason } : {}) };
    void verify(impl, stamp);
    return { ...impl.info, available: false, unavailableReason: 'verifying the downloaded files (sha256); try again in a moment' };
  }

  return {
    models: () => impls.map(info),

    model(id: string): ModelInfo | undefined {
      const impl = byId.get(id);
      return impl ? info(impl) : undefined;
    },

    async refresh(): Promise<void> {
      await Promise.all(
        impls.map((impl) => {
          const stamp = impl.files ? filesStamp(impl, options.modelsDir) : null;
          return stamp === null ? undefined : verify(impl, stamp);
        }),
      );
    },

    async forecast(job: ForecastJob, opts?: EngineOptionsPerJob): Promise<SeriesForecast[]> {
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
      const queuedAt = Date.now();
      try {
        result = await pool.run({ job, env, queuedAt }, { name: 'runTask', signal });
      } catch (err) {
        // A killed job's timing is unknown beyond its total time: count it all as running.
        opts?.onTiming?.({ queueMs: 0, runMs: Date.now() - queuedAt });
        if (timeout.aborted) throw new EngineError('timeout', `the job did not finish within ${options.timeoutMs} ms`);
        if (opts?.signal?.aborted) throw new EngineError('failed', 'aborted by the caller');
        throw new EngineError('failed', err instanceof Error ? err.message : String(err));
      } finally {
        inFlight--;
      }
      if (result.timing) opts?.onTiming?.(result.timing);
      if (!result.ok) throw new EngineError(result.kind, result.message, result.seriesIndex, result.field);
      return result.forecasts;
    },

    stats() {
      const waiting = Math.min(inFlight, pool.queueSize);
      return { running: inFlight - waiting, waiting };
    },

    async close(): Promise<void> {
      await pool.destroy();
    },
  };
}
