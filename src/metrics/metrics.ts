import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * The service's Prometheus metrics (prom-client), one registry per app so several apps in one
 * process (tests) never share counters. Names and labels are documented in docs/operations.md;
 * label values are bounded sets (route patterns, model ids, outcome kinds), never raw input.
 */
export interface Metrics {
  readonly registry: Registry;
  readonly httpRequests: Counter<'method' | 'route' | 'status'>;
  readonly httpDuration: Histogram<'method' | 'route' | 'status'>;
  readonly forecasts: Counter<'model' | 'outcome'>;
  readonly inferenceSeconds: Histogram<'model'>;
  readonly queueWaitSeconds: Histogram<'model'>;
  readonly creditsCharged: Counter<'model' | 'source'>;
  readonly rateLimitRefusals: Counter<'scope'>;
  readonly holdSweeps: Counter<'result'>;
  readonly holdsReleased: Counter;
  readonly remoteRequests: Counter<'endpoint' | 'outcome'>;
  /** Sources of gauges read at scrape time (the worker pool's queue depth, remote health). */
  addCollector(collect: () => void): void;
}

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const INFERENCE_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

export function createMetrics(opts: { defaultMetrics?: boolean } = {}): Metrics {
  const registry = new Registry();
  if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: registry, prefix: 'tsfm_process_' });
  const collectors: Array<() => void> = [];
  const queueDepth = new Gauge({
    name: 'tsfm_inference_queue_depth',
    help: 'Inference jobs admitted and not finished, by state (running on a worker, waiting for one)',
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      for (const c of collectors) c();
    },
  });
  void queueDepth;
  return {
    registry,
    httpRequests: new Counter({
      name: 'tsfm_http_requests_total',
      help: 'HTTP requests answered, by method, route pattern and status',
      labelNames: ['method', 'route', 'status'] as const,
      registers: [registry],
    }),
    httpDuration: new Histogram({
      name: 'tsfm_http_request_duration_seconds',
      help: 'Time from request received to response sent, by method, route pattern and status',
      labelNames: ['method', 'route', 'status'] as const,
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    }),
    forecasts: new Counter({
      name: 'tsfm_forecasts_total',
      help: 'Inference jobs by model and outcome (ok, bad_input, timeout, busy, unavailable, unknown_model, failed)',
      labelNames: ['model', 'outcome'] as const,
      registers: [registry],
    }),
    inferenceSeconds: new Histogram({
      name: 'tsfm_inference_duration_seconds',
      help: 'Time a job ran on a worker (or on a remote inference node), by model',
      labelNames: ['model'] as const,
      buckets: INFERENCE_BUCKETS,
      registers: [registry],
    }),
    queueWaitSeconds: new Histogram({
      name: 'tsfm_inference_queue_wait_seconds',
      help: 'Time a job waited for a free worker, by model',
      labelNames: ['model'] as const,
      buckets: INFERENCE_BUCKETS,
      registers: [registry],
    }),
    creditsCharged: new Counter({
      name: 'tsfm_credits_charged_total',
      help: 'Credits debited for answered calls, by model and usage source',
      labelNames: ['model', 'source'] as const,
      registers: [registry],
    }),
    rateLimitRefusals: new Counter({
      name: 'tsfm_rate_limit_refusals_total',
      help: 'Requests refused with 429, by scope (account, key, address)',
      labelNames: ['scope'] as const,
      registers: [registry],
    }),
    holdSweeps: new Counter({
      name: 'tsfm_hold_sweeps_total',
      help: 'Runs of the sweeper that releases credit holds of dead requests, by result (ok, error)',
      labelNames: ['result'] as const,
      registers: [registry],
    }),
    holdsReleased: new Counter({
      name: 'tsfm_hold_sweep_released_total',
      help: 'Expired credit holds released by the sweeper',
      registers: [registry],
    }),
    remoteRequests: new Counter({
      name: 'tsfm_remote_inference_requests_total',
      help: 'Requests to remote inference nodes (Open Inference Protocol v2), by endpoint and outcome',
      labelNames: ['endpoint', 'outcome'] as const,
      registers: [registry],
    }),
    addCollector(collect: () => void) {
      collectors.push(() => {
        collect();
      });
    },
  };
}

/** The queue-depth gauge, for collectors that report the pool's state. */
export function queueDepthGauge(metrics: Metrics): Gauge<'state'> {
  return metrics.registry.getSingleMetric('tsfm_inference_queue_depth') as Gauge<'state'>;
}
