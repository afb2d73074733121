import type { EncodedForecast } from './encode.ts';
/**
 * The engine's contract. The engine runs models on numbers; it knows nothing of HTTP, the
 * database, accounts or credits (it must not import from src/http, src/db or feature folders).
 * The forecasting service (src/forecasting) turns API requests into ForecastJobs: it splits
 * multivariate targets into univariate series, applies context_length, maps nulls to NaN,
 * derives the season length from `frequency`, and meters the call.
 */

/** One call to one model over a batch of univariate series. */
export interface ForecastJob {
  model: string;
  /** Univariate series, oldest first. NaN marks a missing observation. */
  series: number[][];
  /** Steps to forecast (>= 1). */
  horizon: number;
  /** Strictly inside (0, 1), ascending, no duplicates. */
  quantileLevels: number[];
  /** Sample paths to return per series; 0 means none. */
  numSamples: number;
  /** Season length from the request's frequency; null means "detect it from the data". */
  seasonLength: number | null;
  /** Seed for anything random (bootstrap, sampling): the same job gives the same answer. */
  seed: number;
  /**
   * Optional, one per series: series sharing a value are channels of one multivariate target.
   * Models that forecast channels jointly (Chronos-2, Toto-2) use it; others ignore it.
   * Absent means every series is independent.
   */
  groupIds?: number[];
  /**
   * Also return each series' in-sample one-step-ahead predictions (`SeriesForecast.fitted`), for
   * models with the `fitted_values` capability (add_history, anomaly detection).
   */
  fitted?: boolean;
  /**
   * Answer the numbers as JSON text per group of series (EncodedForecast, src/engine/encode.ts),
   * written on the worker thread and moved to the caller. An engine may answer SeriesForecast[]
   * anyway (small jobs run inline, remote nodes, fakes): callers accept both.
   */
  encode?: boolean;
  /**
   * The estimated work the job was priced for (src/engine/work.ts, milliseconds). A model that
   * detects a season (seasonLength null) refuses the job before fitting when the detected season
   * makes it costlier than that. Absent: not checked (benchmarks, remote nodes).
   */
  workBudgetMs?: number;
}

/**
 * A job as the service hands it to the engine (Engine.forecast): a series may be a Float64Array
 * (the service's prepared columns), which crosses to a worker thread as one copy of its bytes
 * instead of a clone of millions of numbers one by one on the event loop. Models get a ForecastJob
 * of plain arrays (`modelJob`, run on the worker thread for pooled jobs).
 */
export interface EngineJob extends Omit<ForecastJob, 'series'> {
  series: (number[] | Float64Array)[];
}

/** The job a model runs: every series a plain array. */
export function modelJob(job: EngineJob): ForecastJob {
  if (job.series.every((s) => Array.isArray(s))) return job as ForecastJob;
  return { ...job, series: job.series.map((s) => (Array.isArray(s) ? s : Array.from(s))) };
}

export interface SeriesForecast {
  /** Point forecast (mean), `horizon` values. */
  mean: number[];
  /** One row per requested level, in the job's order, each `horizon` values; monotone in the level. */
  quantiles: number[][];
  /** `numSamples` paths of `horizon` values, present when numSamples > 0. */
  samples?: number[][];
  /**
   * With `job.fitted`: one value per step of the series, the model's one-step-ahead prediction of
   * it from the steps before (NaN where the model has none, e.g. the first step of naive).
   */
  fitted?: number[];
  /** What the model decided for this series (season length used, fitted specification, ...). */
  info?: Record<string, unknown>;
}

export type ModelKind = 'statistical' | 'neural';

/** What the engine knows about a model; the catalog adds prices and access rules on top. */
export interface ModelInfo {
  id: string;
  name: string;
  provider: string;
  family: string;
  kind: ModelKind;
  description: string;
  license: string;
  supportedTasks: string[];
  /** Fewest observed points a series needs. */
  minPoints: number;
  /** Points the model looks at by default (older ones are dropped). */
  contextLength: number;
  /**
   * Set when the model pads shorter series up to its network's context instead of refusing them
   * (TinyTimeMixer: 512): below it the model runs, less accurately. The ensemble does not pick such a
   * model as a default candidate for shorter inputs.
   */
  paddedBelow?: number;
  /** Most points the model accepts. */
  maxContextLength: number;
  /** Longest horizon, or null when unbounded. */
  maxHorizon: number | null;
  /** e.g. 'quantiles', 'samples', 'missing_values', 'seasonality', 'multivariate' (channel-wise), 'fitted_values' (in-sample predictions). */
  capabilities: string[];
  /** How quantiles are produced: e.g. 'analytic' (the model's own distribution) or 'conformal'. */
  quantileMethod: string;
  /** Whether the model can run now (weights present and verified, for neural models). */
  available: boolean;
  /** When not available: how an operator makes it available. */
  unavailableReason?: string;
}

/** `share_exceeded`: the tenant (account) already has its share of the queue waiting; other tenants are still admitted. */
export type EngineErrorKind = 'timeout' | 'busy' | 'share_exceeded' | 'bad_input' | 'unavailable' | 'unknown_model' | 'failed';

export class EngineError extends Error {
  readonly kind: EngineErrorKind;
  /** For bad_input: index of the offending series in the job. */
  readonly seriesIndex: number | undefined;
  /** For bad_input about a job setting rather than a series: which one. */
  readonly field: 'quantile_levels' | 'horizon' | undefined;
  /** For timeout: the CPU time the job's thread used while it ran (ms), when the engine could read it. */
  readonly cpuMs: number | undefined;
  constructor(kind: EngineErrorKind, message: string, seriesIndex?: number, field?: 'quantile_levels' | 'horizon', cpuMs?: number) {
    super(message);
    this.name = 'EngineError';
    this.kind = kind;
    this.seriesIndex = seriesIndex;
    this.field = field;
    this.cpuMs = cpuMs;
  }
}

/** Where a job's time went: waiting for a worker, then running on it (milliseconds). */
export interface JobTiming {
  queueMs: number;
  runMs: number;
}

export interface EngineOptionsPerJob {
  signal?: AbortSignal;
  /** Who the job runs for (the account): each tenant gets at most its share of the threads. */
  tenant?: string;
  /** Called once the job has run (successfully or not), when the engine knows its timing. */
  onTiming?: (timing: JobTiming) => void;
}

export interface Engine {
  /** Every model the engine knows, available or not. */
  models(): ModelInfo[];
  /** One model by id (its own files checked only; the sha256 verdict is cached); undefined when unknown. */
  model?(id: string): ModelInfo | undefined;
  /** Re-checks which models are available (verifies downloaded files); run at start-up. */
  refresh?(): Promise<void>;
  /** Runs a job off the event loop. Rejects with EngineError. */
  /**
   * `opts.tenant` (the account) shares the threads fairly: a tenant runs at most its share of jobs
   * at once, its other jobs wait (bounded) while other tenants' jobs run.
   */
  forecast(job: EngineJob & { encode: true }, opts?: EngineOptionsPerJob): Promise<SeriesForecast[] | EncodedForecast>;
  forecast(job: EngineJob, opts?: EngineOptionsPerJob): Promise<SeriesForecast[]>;
  /**
   * True when `forecast` would run this job on the calling thread in microseconds (a trivial model
   * on a small job, ADR 0014): the caller may then run it before reserving its credits.
   */
  runsInline?(job: EngineJob): boolean;
  /** Jobs admitted and not finished: running on a worker, and waiting for one (and running per tenant). */
  stats?(): {
    running: number;
    waiting: number;
    runningByTenant?: Record<string, number>;
    /** Worker threads replaced for their heap size. */
    recycled?: number;
  };
  close(): Promise<void>;
}

/** Files a model needs, pinned by sha256, laid out like the Hugging Face hub under MODELS_DIR. */
export interface ModelFiles {
  /** Hub repository, e.g. `ibm-granite/granite-timeseries-ttm-r2`. */
  repo: string;
  revision: string;
  files: { path: string; sha256: string | null; size?: number }[];
}

/** Where a model finds what it needs at run time (inside a worker thread). */
export interface ModelEnv {
  modelsDir: string;
  /** Intra-op threads a native runtime may use (keeps two cores from being oversubscribed). */
  threads: number;
}

/**
 * One model implementation. The registry (src/engine/registry.ts) lists them; the worker
 * pool calls `forecast` inside a worker thread.
 */
export interface ModelImpl {
  info: Omit<ModelInfo, 'available' | 'unavailableReason'>;
  /** Weights to download; absent for models that need none. */
  files?: ModelFiles;
  /**
   * The magnitudes the model computes safely with (src/engine/magnitude.ts): runModel rescales a
   * series (by a power of two, exactly) whose largest |value| is outside. Default: doubles' band.
   */
  magnitude?: { min: number; max: number };
  forecast(job: ForecastJob, env: ModelEnv): SeriesForecast[] | Promise<SeriesForecast[]>;
}
