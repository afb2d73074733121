import { once } from 'node:events';
import { availableParallelism } from 'node:os';
import { MessageChannel, type Worker } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { filesStamp, NOT_DOWNLOADED } from './files.ts';
import { modelAvailability } from './store/verify.ts';
import { MODEL_IMPLS } from './registry.ts';
import { EngineError, type Engine, type EngineJob, type EngineOptionsPerJob, type ModelImpl, type ModelInfo, modelJob, type SeriesForecast } from './types.ts';
import { validateJob } from './validate.ts';
import type { EncodedForecast } from './encode.ts';
import type { WorkerResult, WorkerTask } from './worker.ts';
import { runModel } from './magnitude.ts';

export interface EngineOptions {
  /** Worker threads; defaults to os.availableParallelism(). */
  poolSize?: number;
  /**
   * Running time of one job, counted from the moment a worker thread picks it up (time spent
   * waiting for a thread is not counted); past it the job rejects with EngineError('timeout').
   */
  timeoutMs: number;
  /** Jobs that may wait for a free thread; one more rejects with EngineError('busy'). */
  maxQueue: number;
  /** Longest wait for a free thread (default: timeoutMs); past it the job rejects with EngineError('busy'). */
  queueWaitMs?: number;
  /**
   * Jobs one tenant (account) may run at once (default: half the threads, at least one), so one
   * account cannot occupy every worker. A timed-out job keeps its slot until its thread has exited.
   */
  tenantConcurrency?: number;
  /**
   * Jobs one tenant (account) may have waiting at once (default: a quarter of maxQueue, at least
   * one); one more rejects with EngineError('share_exceeded') while other tenants' jobs are still
   * admitted, so one account cannot fill the queue and lock the others out.
   */
  tenantQueue?: number;
  modelsDir: string;
  /** Intra-op threads a native runtime may use inside one worker. */
  threads: number;
  /**
   * A worker thread whose JavaScript heap (committed) is past this many bytes after a job is
   * replaced by a fresh one before it takes another job, so the memory a large job made V8 reserve
   * goes back to the system (default 256 MB; 0: never).
   */
  workerRecycleBytes?: number;
  /**
   * A worker thread whose JavaScript heap (committed) was past this after its last job is replaced
   * once the pool has had no job for idleRecycleMs: a job that grew a thread's heap below
   * workerRecycleBytes leaves it reserved otherwise, as V8 gives a grown heap back only lazily.
   * Its replacement starts while nothing runs (default 64 MB; 0: never).
   */
  workerIdleRecycleBytes?: number;
  /** How long the pool must have had no job (running or waiting) for the idle replacement (default 1000 ms; 0: never). */
  idleRecycleMs?: number;
  /**
   * Nice steps each worker thread lowers its own CPU priority by as it starts (Linux; default 10,
   * 0: none): the event loop's thread is scheduled first when the cores are busy (ADR 0010).
   */
  workerNice?: number;
  /** Longest turn of the event loop spent on inline jobs (default 4 ms; at least one job runs per turn). */
  inlineTurnMs?: number;
  /** For tests: another worker module exporting `runTask`, and the models it knows. */
  workerFile?: URL;
  impls?: readonly ModelImpl[];
}

/**
 * Models whose forecast is a copy or a straight line (O(length + horizon) arithmetic): a job for
 * one of them small enough (INLINE_MAX_VALUES numbers in and out) runs on the calling thread.
 * Sending it to a worker would cost far more than running it: two structured clones, two
 * message hops and a promise per job, which made the worker pool the bottleneck of small
 * metered forecasts (docs/adr/0014-group-commit-metering.md).
 */
export const INLINE_MODELS: ReadonlySet<string> = new Set(['naive', 'seasonal-naive', 'drift']);
export const INLINE_MAX_VALUES = 20_000;
/**
 * Without a season length the model detects one (stats/season.ts), which is not linear: about
 * 0.3–0.9 ms at 256 points, 3–7 ms at 512, 27–50 ms at 2,048 (measured on noise, seasonal and
 * trending series). A job whose series are longer than this and that has no
 * season length goes to a worker: on this thread it held the event loop for one 50 ms turn.
 */
export const INLINE_MAX_DETECTED_LENGTH = 256;

function inlineCost(job: EngineJob): number {
  let n = 0;
  for (const s of job.series) {
    if (job.seasonLength === null && s.length > INLINE_MAX_DETECTED_LENGTH) return Number.POSITIVE_INFINITY;
    n += s.length;
  }
  return n + job.series.length * job.horizon * (2 + job.quantileLevels.length + job.numSamples);
}

/**
 * The engine: model fitting runs on a piscina worker-thread pool, never on the event loop
 * (except the trivial INLINE_MODELS on small jobs, bounded by INLINE_MAX_VALUES).
 * A timed-out or aborted job terminates the thread running it (piscina replaces the thread),
 * so a runaway fit does not keep burning a core.
 *
 * Admission is the engine's own: at most poolSize jobs are handed to piscina at a time (so a job
 * handed over starts on a thread at once), the others wait in a FIFO queue here, bounded in
 * length (maxQueue) and in time (queueWaitMs). A waiting job starts when a thread is free and its
 * tenant runs fewer than tenantConcurrency jobs; jobs of other tenants may overtake it meanwhile.
 */
/** CPU time a worker thread has used, in milliseconds (Worker.cpuUsage, Node 24); undefined when it cannot be read. */
async function threadCpuMs(thread: Worker | undefined): Promise<number | undefined> {
  const read = (thread as (Worker & { cpuUsage?: () => Promise<{ user: number; system: number }> }) | undefined)?.cpuUsage;
  if (!thread || typeof read !== 'function') return undefined;
  try {
    const u = await read.call(thread);
    return (u.user + u.system) / 1000;
  } catch {
    return undefined;
  }
}

interface Waiter {
  tenant: string | null;
  admit(release: () => void): void;
}

export function createEngine(options: EngineOptions): Engine {
  const impls = options.impls ?? MODEL_IMPLS;
  const byId = new Map(impls.map((m) => [m.info.id, m]));
  const poolSize = Math.max(1, options.poolSize ?? availableParallelism());
  const pool = new Piscina<WorkerTask, WorkerResult>({
    filename: (options.workerFile ?? new URL('./worker.ts', import.meta.url)).href,
    minThreads: 1,
    maxThreads: poolSize,
    idleTimeout: 60_000,
    workerData: { nice: Math.max(0, options.workerNice ?? 10) },
  });
  const env = { modelsDir: options.modelsDir, threads: options.threads };
  const maxQueue = Math.max(0, options.maxQueue);
  const queueWaitMs = options.queueWaitMs ?? options.timeoutMs;
  const tenantCap = Math.max(1, options.tenantConcurrency ?? Math.ceil(poolSize / 2));
  const tenantQueue = Math.max(1, options.tenantQueue ?? Math.ceil(maxQueue / 4));
  let running = 0;
  const runningBy = new Map<string, number>();
  const waiting: Waiter[] = [];
  const waitingOf = (tenant: string) => {
    let n = 0;
    for (const w of waiting) if (w.tenant === tenant) n++;
    return n;
  };
  const tenantFree = (tenant: string | null) => tenant === null || (runningBy.get(tenant) ?? 0) < tenantCap;
  const recycleBytes = Math.max(0, options.workerRecycleBytes ?? 256 * 1024 * 1024);
  let recycled = 0;
  const idleRecycleBytes = Math.max(0, options.workerIdleRecycleBytes ?? 64 * 1024 * 1024);
  const idleRecycleMs = Math.max(0, options.idleRecycleMs ?? 1000);
  /** Each live thread's committed heap after its last job, for the idle replacement. */
  const heapAfterJob = new Map<Worker, number>();
  let idleTimer: NodeJS.Timeout | undefined;
  function scheduleIdleRecycle(): void {
    if (idleRecycleMs === 0 || idleRecycleBytes === 0 || idleTimer) return;
    idleTimer = setTimeout(() => {
      idleTimer = undefined;
      if (running > 0 || waiting.length > 0) return;
      for (const [thread, bytes] of heapAfterJob) {
        heapAfterJob.delete(thread);
        if (bytes > idleRecycleBytes && thread.threadId !== -1 && pool.threads.includes(thread)) void recycle(thread);
      }
    }, idleRecycleMs);
    idleTimer.unref();
  }
  /**
   * Threads being ended. Until one has exited piscina still lists it and may hand it the next task,
   * which then fails with "worker exited": a job waits for these before it is handed to the pool.
   */
  const recycling = new Set<Promise<void>>();
  /** Ends `thread` (piscina starts another when needed); resolves once it has exited. */
  function recycle(thread: Worker): Promise<void> {
    recycled++;
    heapAfterJob.delete(thread);
    const done = (async () => {
      const exited = once(thread, 'exit').catch(() => undefined);
      await thread.terminate().catch(() => undefined);
      await exited;
    })().finally(() => recycling.delete(done));
    recycling.add(done);
    return done;
  }

  function take(tenant: string | null): () => void {
    running++;
    clearTimeout(idleTimer);
    idleTimer = undefined;
    if (tenant !== null) runningBy.set(tenant, (runningBy.get(tenant) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      running--;
      if (tenant !== null) {
        const n = (runningBy.get(tenant) ?? 1) - 1;
        if (n > 0) runningBy.set(tenant, n);
        else runningBy.delete(tenant);
      }
      pump();
      if (running === 0 && waiting.length === 0) scheduleIdleRecycle();
    };
  }

  function pump(): void {
    while (running < poolSize) {
      const i = waiting.findIndex((w) => tenantFree(w.tenant));
      if (i < 0) return;
      const [w] = waiting.splice(i, 1) as [Waiter];
      w.admit(take(w.tenant));
    }
  }

  // The inline lane: trivial jobs wait here and run on this thread in turns of the event loop of at
  // most inlineTurnMs each (at least one job per turn), one job per tenant in rotation, so neither
  // a batch of 64 of them nor one account's burst holds the loop or overtakes other accounts.
  const inlineTurnMs = options.inlineTurnMs ?? 4;
  const lanes = new Map<string | null, (() => void)[]>();
  const rotation: (string | null)[] = [];
  let laneTurnScheduled = false;
  function inline<T>(tenant: string | null, run: () => T | Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const start = () => {
        try {
          resolve(run());
        } catch (err) {
          reject(err);
        }
      };
      const lane = lanes.get(tenant);
      if (lane) lane.push(start);
      else {
        lanes.set(tenant, [start]);
        rotation.push(tenant);
      }
      if (!laneTurnScheduled) {
        laneTurnScheduled = true;
        setImmediate(laneTurn);
      }
    });
  }
  function laneTurn(): void {
    laneTurnScheduled = false;
    const began = performance.now();
    do {
      const tenant = rotation.shift() as string | null;
      const lane = lanes.get(tenant) as (() => void)[];
      (lane.shift() as () => void)();
      if (lane.length > 0) rotation.push(tenant);
      else lanes.delete(tenant);
    } while (rotation.length > 0 && performance.now() - began < inlineTurnMs);
    if (rotation.length > 0) {
      laneTurnScheduled = true;
      setImmediate(laneTurn);
    }
  }

  /** Waits for a slot (a free thread, and room in the tenant's share); resolves to its release. */
  function admit(tenant: string | null, signal: AbortSignal | undefined): Promise<() => void> {
    if (running < poolSize && tenantFree(tenant) && waiting.length === 0) return Promise.resolve(take(tenant));
    // The tenant's own share first: an account over it is told so (it may retry once its own jobs ran),
    // and cannot take the room other accounts' jobs need.
    if (tenant !== null && waitingOf(tenant) >= tenantQueue) {
      return Promise.reject(
        new EngineError('share_exceeded', `this account already has ${tenantQueue} jobs waiting for a model worker (its share of the queue)`),
      );
    }
    if (waiting.length >= maxQueue) return Promise.reject(new EngineError('busy', 'all model workers are busy and the queue is full'));
    return new Promise((resolve, reject) => {
      const leave = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        const i = waiting.indexOf(waiter);
        if (i >= 0) waiting.splice(i, 1);
      };
      const onAbort = () => {
        leave();
        reject(new EngineError('failed', 'aborted by the caller'));
      };
      const timer = setTimeout(() => {
        leave();
        reject(new EngineError('busy', `no model worker became free within ${queueWaitMs} ms`));
      }, queueWaitMs);
      const waiter: Waiter = {
        tenant,
        admit: (release) => {
          leave();
          resolve(release);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      waiting.push(waiter);
      pump();
    });
  }

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

  const engine = {
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

    async forecast(job: EngineJob, opts?: EngineOptionsPerJob): Promise<SeriesForecast[] | EncodedForecast> {
      const impl = byId.get(job.model);
      if (!impl) throw new EngineError('unknown_model', `unknown model '${job.model}'`);
      const status = info(impl);
      if (!status.available) throw new EngineError('unavailable', status.unavailableReason ?? `model '${job.model}' is not available`);
      validateJob(job);
      if (opts?.signal?.aborted) throw new EngineError('failed', 'aborted by the caller');
      const tenant = opts?.tenant ?? null;
      if (INLINE_MODELS.has(job.model) && inlineCost(job) <= INLINE_MAX_VALUES) {
        const queuedAt = performance.now();
        let startedAt = queuedAt;
        try {
          return await inline(tenant, () => {
            startedAt = performance.now();
            if (opts?.signal?.aborted) throw new EngineError('failed', 'aborted by the caller');
            return runModel(impl, modelJob(job), env);
          });
        } catch (err) {
          if (err instanceof EngineError) throw err;
          throw new EngineError('failed', err instanceof Error ? err.message : String(err));
        } finally {
          opts?.onTiming?.({ queueMs: startedAt - queuedAt, runMs: performance.now() - startedAt });
        }
      }
      const queuedAt = Date.now();
      const release = await admit(tenant, opts?.signal);
      while (recycling.size > 0) await Promise.all(recycling);
      // The worker reports its thread as it picks the task up: the running-time limit starts then,
      // and a timed-out job keeps its slot until that thread has really exited.
      const { port1, port2 } = new MessageChannel();
      let thread: Worker | undefined;
      let startedAt: number | undefined;
      // The thread's CPU time at pick-up and when the limit is reached: a timed-out job says how much
      // of its running time it really computed (a loaded machine may have starved it).
      let cpuAtStart: Promise<number | undefined> = Promise.resolve(undefined);
      let cpuMs: number | undefined;
      const started = new Promise<void>((resolve) => {
        port1.once('message', (threadId: number) => {
          startedAt = Date.now();
          thread = pool.threads.find((w) => w.threadId === threadId);
          cpuAtStart = threadCpuMs(thread);
          resolve();
        });
      });
      const timeout = new AbortController();
      let timer: NodeJS.Timeout | undefined;
      void started.then(() => {
        timer = setTimeout(() => {
          void Promise.all([cpuAtStart, threadCpuMs(thread)])
            .then(([from, to]) => {
              if (from !== undefined && to !== undefined) cpuMs = to - from;
            })
            .finally(() => timeout.abort());
        }, options.timeoutMs);
      });
      const signal = opts?.signal ? AbortSignal.any([timeout.signal, opts.signal]) : timeout.signal;
      let result: WorkerResult;
      let stopping: Promise<unknown> | null = null;
      try {
        result = await pool.run({ job, env, queuedAt, started: port2 }, { name: 'runTask', signal, transferList: [port2] });
        // A thread whose heap grew past the bound is replaced; its slot is given back once it has exited.
        if (thread && recycleBytes > 0 && (result.heapBytes ?? 0) > recycleBytes) stopping = recycle(thread);
        else if (thread && result.heapBytes !== undefined) heapAfterJob.set(thread, result.heapBytes);
      } catch (err) {
        // A killed job's timing: its wait, then the rest as running.
        const now = Date.now();
        opts?.onTiming?.({ queueMs: (startedAt ?? now) - queuedAt, runMs: now - (startedAt ?? now) });
        // An aborted task's thread is being terminated; its slot is free once it has exited.
        if (thread) heapAfterJob.delete(thread);
        if (thread && thread.threadId !== -1) stopping = once(thread, 'exit').catch(() => undefined);
        if (timeout.signal.aborted) {
          const used = cpuMs === undefined ? '' : ` (${Math.round(cpuMs)} ms of CPU time)`;
          throw new EngineError('timeout', `the job ran for more than ${options.timeoutMs} ms${used}`, undefined, undefined, cpuMs);
        }
        if (opts?.signal?.aborted) throw new EngineError('failed', 'aborted by the caller');
        throw new EngineError('failed', err instanceof Error ? err.message : String(err));
      } finally {
        clearTimeout(timer);
        port1.close();
        if (stopping) void stopping.then(release);
        else release();
      }
      if (result.timing) opts?.onTiming?.(result.timing);
      if (!result.ok) throw new EngineError(result.kind, result.message, result.seriesIndex, result.field);
      return result.forecasts;
    },

    runsInline: (job: EngineJob) => INLINE_MODELS.has(job.model) && byId.has(job.model) && inlineCost(job) <= INLINE_MAX_VALUES,

    stats: () => ({ running, waiting: waiting.length, runningByTenant: Object.fromEntries(runningBy), recycled }),

    async close(): Promise<void> {
      clearTimeout(idleTimer);
      await pool.destroy();
    },
  };
  // Start verifying downloaded files now rather than at the first listing: until a model's verdict
  // is in it is unavailable, and a request arriving first (an ensemble's default candidates) would
  // go without it.
  for (const impl of impls) info(impl);
  // forecast answers JSON text (EncodedForecast) for an `encode` job that ran on a worker.
  return engine as Engine;
}
