import { type EncodedForecast, isEncoded } from '../encode.ts';
import {
  EngineError,
  type Engine,
  type EngineErrorKind,
  type EngineJob,
  type EngineOptionsPerJob,
  type ForecastJob,
  type ModelInfo,
  modelJob,
  type SeriesForecast,
} from '../types.ts';
import { decodeResult, encodeJob, InferResponse, OipError, type ModelMetadata } from './oip.ts';

/** A model served by remote inference nodes (Open Inference Protocol v2), tried in order. */
export interface RemoteRoute {
  model: string;
  /** Base URLs of nodes serving it, e.g. http://gpu-1:8001 (no trailing /v2). */
  endpoints: string[];
}

export interface RoutingOptions {
  routes: RemoteRoute[];
  /** model → models to try next when it is unavailable, busy, timed out or its nodes fail. */
  fallbacks: ReadonlyMap<string, readonly string[]>;
  /** Per attempt. */
  timeoutMs: number;
  /** Further attempts on another (or the same) node after a connection failure or 503. */
  retries: number;
  healthIntervalMs: number;
  /** Sent as a bearer token to the nodes (their INFERENCE_TOKEN). */
  token: string | null;
  /** Observes every request to a node (metrics). */
  onRequest?: (endpoint: string, outcome: string) => void;
  fetch?: typeof fetch;
}

interface Health {
  /** Nodes that answered ready at the last check or call (a failed call marks its node down). */
  up: Set<string>;
  reason: string;
  checked: boolean;
  facts?: ModelMetadata['tsfm_model'];
}

/** Kinds after which the next model of a fallback chain is tried; the others are the caller's fault. */
const FALL_THROUGH: ReadonlySet<EngineErrorKind> = new Set(['unavailable', 'busy', 'timeout', 'failed']);

/**
 * The gateway's engine when REMOTE_MODELS or MODEL_FALLBACKS are set: routed models run on remote
 * nodes, the rest on the local worker pool, behind the same Engine contract, so the forecasting
 * service, metering and catalog do not change. A routed model is available while one of its nodes
 * answers ready (checked every healthIntervalMs, and marked down at once when a call fails to connect).
 */
export function createRoutingEngine(local: Engine, opts: RoutingOptions): Engine {
  const doFetch = opts.fetch ?? fetch;
  const routes = new Map(opts.routes.map((r) => [r.model, r]));
  const health = new Map<string, Health>(
    opts.routes.map((r) => [r.model, { up: new Set<string>(), checked: false, reason: `remote model '${r.model}': not checked yet` }]),
  );
  const healthOf = (model: string) => health.get(model) as Health;
  const cursor = new Map<string, number>();
  const headers = (json: boolean): Record<string, string> => ({
    ...(json ? { 'content-type': 'application/json' } : {}),
    ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
  });
  const modelUrl = (base: string, model: string, suffix = '') => `${base.replace(/\/+$/, '')}/v2/models/${encodeURIComponent(model)}${suffix}`;

  async function check(route: RemoteRoute): Promise<void> {
    const h = healthOf(route.model);
    const reasons: string[] = [];
    await Promise.all(
      route.endpoints.map(async (base) => {
        try {
          const r = await doFetch(modelUrl(base, route.model, '/ready'), {
            headers: headers(false),
            signal: AbortSignal.timeout(Math.min(opts.timeoutMs, 5000)),
          });
          const body = (await r.json().catch(() => null)) as { ready?: unknown } | null;
          opts.onRequest?.(base, r.ok ? 'ok' : `http_${r.status}`);
          if (r.ok && body?.ready === true) {
            h.up.add(base);
            if (!h.facts) {
              const meta = await doFetch(modelUrl(base, route.model), { headers: headers(false), signal: AbortSignal.timeout(5000) }).catch(() => null);
              const facts = meta?.ok ? ((await meta.json().catch(() => null)) as ModelMetadata | null)?.tsfm_model : undefined;
              if (facts) h.facts = facts;
            }
            return;
          }
          h.up.delete(base);
          reasons.push(`${base}: ${r.ok ? 'model not ready' : `HTTP ${r.status}`}`);
        } catch (err) {
          h.up.delete(base);
          opts.onRequest?.(base, 'unreachable');
          reasons.push(`${base}: unreachable (${err instanceof Error ? err.message : String(err)})`);
        }
      }),
    );
    h.checked = true;
    h.reason = `remote model '${route.model}' has no ready node (${reasons.join('; ')})`;
  }
  const checkAll = () => Promise.all(opts.routes.map(check)).then(() => undefined);
  const timer = setInterval(() => void checkAll(), opts.healthIntervalMs);
  timer.unref();

  async function callRemote(route: RemoteRoute, job: ForecastJob, signal: AbortSignal | undefined): Promise<SeriesForecast[]> {
    const body = JSON.stringify(encodeJob(job));
    const attempts = 1 + Math.max(0, opts.retries);
    let last: EngineError = new EngineError('unavailable', `remote model '${route.model}' has no node`);
    const h = healthOf(route.model);
    // Round-robin over the nodes, those that are up first.
    const start = cursor.get(route.model) ?? 0;
    cursor.set(route.model, start + 1);
    const rotated = route.endpoints.map((_, i) => route.endpoints[(start + i) % route.endpoints.length] as string);
    const order = [...rotated.filter((b) => h.up.has(b)), ...rotated.filter((b) => !h.up.has(b))];
    for (let a = 0; a < attempts; a++) {
      const base = order[a % order.length] as string;
      const timeout = AbortSignal.timeout(opts.timeoutMs);
      let res: Response;
      try {
        res = await doFetch(modelUrl(base, route.model, '/infer'), {
          method: 'POST',
          headers: headers(true),
          body,
          signal: signal ? AbortSignal.any([timeout, signal]) : timeout,
        });
      } catch (err) {
        if (signal?.aborted) throw new EngineError('failed', 'aborted by the caller');
        if (timeout.aborted) {
          opts.onRequest?.(base, 'timeout');
          throw new EngineError('timeout', `remote node ${base} did not answer within ${opts.timeoutMs} ms`);
        }
        opts.onRequest?.(base, 'unreachable');
        h.up.delete(base);
        last = new EngineError('unavailable', `remote node ${base} is unreachable: ${err instanceof Error ? err.message : String(err)}`);
        continue;
      }
      const json: unknown = await res.json().catch(() => null);
      opts.onRequest?.(base, res.ok ? 'ok' : `http_${res.status}`);
      if (res.ok) {
        h.up.add(base);
        const parsed = InferResponse.safeParse(json);
        if (!parsed.success) throw new EngineError('failed', `remote node ${base} answered a malformed inference response`);
        return decodeResult(parsed.data, job);
      }
      const e = OipError.safeParse(json);
      const message = e.success ? e.data.error : `HTTP ${res.status}`;
      const kind: EngineErrorKind =
        res.status === 401 || res.status === 403
          ? 'unavailable' // the node refused our token: an operator's matter, not the caller's
          : e.success && e.data.kind
            ? e.data.kind
            : res.status === 504
              ? 'timeout'
              : res.status === 503
                ? 'busy'
                : res.status === 404
                  ? 'unavailable'
                  : res.status < 500
                    ? 'bad_input'
                    : 'failed';
      const err = new EngineError(
        kind === 'unknown_model' ? 'unavailable' : kind,
        `remote node ${base}: ${message}`,
        e.success ? e.data.series_index : undefined,
        e.success ? e.data.field : undefined,
      );
      // Busy or unavailable nodes: another node (or a later try) may serve it; the rest is final.
      if (err.kind === 'busy' || err.kind === 'unavailable') {
        last = err;
        continue;
      }
      throw err;
    }
    throw last;
  }

  async function runOne(model: string, job: EngineJob, o: EngineOptionsPerJob | undefined): Promise<SeriesForecast[] | EncodedForecast> {
    const route = routes.get(model);
    const j = model === job.model ? job : { ...job, model };
    if (!route) return local.forecast(j, o);
    if (!healthOf(model).checked) await check(route);
    const started = performance.now();
    try {
      return await callRemote(route, modelJob(j), o?.signal);
    } finally {
      o?.onTiming?.({ queueMs: 0, runMs: performance.now() - started });
    }
  }

  function info(base: ModelInfo): ModelInfo {
    const h = health.get(base.id);
    if (!h) return base;
    const { unavailableReason: _drop, ...rest } = base;
    return h.up.size > 0 ? { ...rest, available: true } : { ...rest, available: false, unavailableReason: h.reason };
  }

  const engine = {
    models() {
      const locals = local.models();
      const known = new Set(locals.map((m) => m.id));
      const out = locals.map(info);
      for (const r of opts.routes) {
        if (known.has(r.model)) continue;
        const h = healthOf(r.model);
        if (!h.facts) continue; // not described by its node yet: listed once a node answers
        out.push(info({ ...h.facts, available: false }));
      }
      // A model with a fallback chain can be served while any model of the chain can.
      const availableIds = new Set(out.filter((m) => m.available).map((m) => m.id));
      return out.map((m) => {
        if (m.available) return m;
        const next = (opts.fallbacks.get(m.id) ?? []).find((id) => availableIds.has(id));
        if (!next) return m;
        const { unavailableReason: _r, ...rest } = m;
        return { ...rest, available: true };
      });
    },
    async refresh() {
      await Promise.all([local.refresh?.(), checkAll()]);
    },
    async forecast(job: EngineJob, o?: EngineOptionsPerJob): Promise<SeriesForecast[] | EncodedForecast> {
      const chain = [job.model, ...(opts.fallbacks.get(job.model) ?? [])];
      let lastErr: unknown;
      for (const [i, model] of chain.entries()) {
        try {
          const out = await runOne(model, job, o);
          if (i === 0) return out;
          const fellBack = (info: Record<string, unknown> | undefined) => ({ ...info, served_by: model, fallback_from: job.model });
          // A local model may answer an `encode` job as JSON text (src/engine/encode.ts); its info stays an array.
          if (isEncoded(out)) return { ...out, info: out.info.map(fellBack) };
          return out.map((f) => ({ ...f, info: fellBack(f.info) }));
        } catch (err) {
          lastErr = err;
          if (!(err instanceof EngineError) || !FALL_THROUGH.has(err.kind) || o?.signal?.aborted) throw err;
        }
      }
      throw lastErr;
    },
    // A routed model runs on a node: never inline, whatever the local engine would do.
    runsInline: (job: EngineJob) => !routes.has(job.model) && (local.runsInline?.(job) ?? false),
    stats: () => local.stats?.() ?? { running: 0, waiting: 0 },
    async close() {
      clearInterval(timer);
      await local.close();
    },
  };
  // forecast answers what the local engine answers: arrays, or JSON text for an `encode` job.
  return engine as Engine;
}
