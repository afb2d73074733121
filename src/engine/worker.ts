import { getHeapStatistics } from 'node:v8';
import { type MessagePort, threadId } from 'node:worker_threads';
import { isWorkerThread, Piscina, workerData } from 'piscina';
import { type EncodedForecast, encodedBuffers, encodeForecasts } from './encode.ts';
import { runModel } from './magnitude.ts';
import { MODEL_IMPLS } from './registry.ts';
import { lowerThreadPriority } from './thread-priority.ts';
import { EngineError, type EngineErrorKind, type EngineJob, type JobTiming, type ModelEnv, type ModelImpl, modelJob, type SeriesForecast } from './types.ts';

/** What the pool sends a worker thread. */
export interface WorkerTask {
  /** Typed series arrive as copies of their bytes; the model gets plain arrays, made here on the worker thread. */
  job: EngineJob;
  env: ModelEnv;
  /** The worker posts its threadId here as it picks the task up (the engine's running-time clock starts then). */
  started?: MessagePort;
  /** Date.now() when the job was handed to the engine (threads share the clock): gives the queue wait. */
  queuedAt?: number;
}

/** Errors cross the thread boundary as data: a class instance would arrive as a plain Error. */
export type WorkerResult = (
  | { ok: true; forecasts: SeriesForecast[] | EncodedForecast }
  | { ok: false; kind: EngineErrorKind; message: string; seriesIndex?: number; field?: EngineError['field'] }
) & {
  timing?: JobTiming;
  /** This thread's committed JavaScript heap after the job: the engine replaces a thread grown too large. */
  heapBytes?: number;
};

export function createTaskRunner(impls: readonly ModelImpl[]): (task: WorkerTask) => Promise<WorkerResult> {
  const byId = new Map(impls.map((m) => [m.info.id, m]));
  return async ({ job: given, env, queuedAt, started: startedPort }) => {
    startedPort?.postMessage(threadId);
    startedPort?.close();
    const started = Date.now();
    const timing = (): JobTiming => ({ queueMs: queuedAt === undefined ? 0 : Math.max(0, started - queuedAt), runMs: Date.now() - started });
    try {
      const job = modelJob(given);
      const impl = byId.get(job.model);
      if (!impl) throw new EngineError('unknown_model', `unknown model '${job.model}'`);
      // createEngine validated the job before sending it (validateJob): it is not checked twice.
      const forecasts = await runModel(impl, job, env);
      if (!job.encode) return { ok: true, forecasts, timing: timing(), heapBytes: getHeapStatistics().total_heap_size };
      // Written here, moved (not copied) to the thread serving HTTP.
      const encoded = encodeForecasts(job, forecasts);
      const result: WorkerResult = { ok: true, forecasts: encoded, timing: timing(), heapBytes: getHeapStatistics().total_heap_size };
      return Piscina.move({ [Piscina.transferableSymbol]: encodedBuffers(encoded), [Piscina.valueSymbol]: result } as never) as unknown as WorkerResult;
    } catch (err) {
      if (err instanceof EngineError) {
        return {
          ok: false,
          kind: err.kind,
          message: err.message,
          ...(err.seriesIndex !== undefined ? { seriesIndex: err.seriesIndex } : {}),
          ...(err.field !== undefined ? { field: err.field } : {}),
          timing: timing(),
        };
      }
      return { ok: false, kind: 'failed', message: err instanceof Error ? err.message : String(err), timing: timing() };
    }
  };
}

// Model runs yield the cores to the thread serving HTTP when both want them (EngineOptions.workerNice).
if (isWorkerThread) lowerThreadPriority(Number((workerData as { nice?: unknown } | undefined)?.nice ?? 0));

/** Piscina calls this by name (`run(task, { name: 'runTask' })`) inside each worker thread. */
export const runTask = createTaskRunner(MODEL_IMPLS);
