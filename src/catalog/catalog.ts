import type { Engine, ModelInfo } from '../engine/types.ts';
import { AppError } from '../shared/errors.ts';
import { priceOf, type Price } from './pricing.ts';

/** Who may use a model: everyone, or only accounts with active billing (enforced by the meter). */
export type ModelAccess = 'all' | 'billing';

export interface CatalogModel {
  id: string;
  name: string;
  provider: string;
  family: string;
  kind: ModelInfo['kind'];
  description: string;
  license: string;
  supported_tasks: string[];
  avg_latency_ms: number;
  latency_samples: number;
  context_length: number;
  max_context_length: number;
  min_points: number;
  max_horizon: number | null;
  capabilities: string[];
  quantile_method: string;
  uses_covariates: boolean;
  multivariate: 'native' | 'channel_wise';
  quantiles: boolean;
  samples: boolean;
  pricing: Price;
  access: ModelAccess;
  available: boolean;
  unavailable_reason: string | null;
  pull_command: string | null;
}

export interface CatalogFilter {
  q?: string | undefined;
  task?: string | undefined;
  capability?: string | undefined;
  provider?: string | undefined;
  available?: boolean | undefined;
}

/** How long Catalog.get trusts a model's "available" verdict before asking the engine again. */
export const AVAILABILITY_TTL_MS = 1000;

/** Restricted models (by id); everything else is open to every account. */
const ACCESS: Record<string, ModelAccess> = {};

/**
 * The catalog: the engine's models plus what a user choosing one needs (prices, access, measured
 * latency). Latency is a running mean of successful calls served by this process.
 */
export class Catalog {
  private readonly engine: Engine;
  private readonly latency = new Map<string, { mean: number; n: number }>();
  private readonly access: Record<string, ModelAccess>;
  /**
   * The engine's model list by id, kept for AVAILABILITY_TTL_MS: resolve() is a map lookup
   * instead of a rebuild of every model's record (with a stat of each weight file) on every call.
   * Only "available" is served from it: an unavailable or unknown model is asked again at once,
   * so a pulled model is usable immediately. A model whose files vanished may look available for
   * up to the TTL; the engine checks again before running it and answers 503 if they are gone.
   */
  private byId: { at: number; map: Map<string, ModelInfo> } | null = null;

  constructor(engine: Engine, access: Record<string, ModelAccess> = ACCESS) {
    this.engine = engine;
    this.access = access;
  }

  list(filter: CatalogFilter = {}): CatalogModel[] {
    const q = filter.q?.trim().toLowerCase();
    return this.engine
      .models()
      .map((m) => this.toRecord(m))
      .filter((m) => !q || [m.id, m.name, m.family, m.provider, m.description].some((s) => s.toLowerCase().includes(q)))
      .filter((m) => !filter.task || m.supported_tasks.includes(filter.task))
      .filter((m) => !filter.capability || m.capabilities.includes(filter.capability))
      .filter((m) => !filter.provider || m.provider.toLowerCase() === filter.provider.toLowerCase())
      .filter((m) => filter.available === undefined || m.available === filter.available);
  }

  /** The model as the engine sees it now, or 404 model_not_found (what the catalog routes show). */
  get(id: string): CatalogModel {
    const info = this.infos(true).get(id);
    if (!info) throw new AppError('model_not_found', `Model '${id}' is not in the catalog`);
    return this.toRecord(info);
  }

  /**
   * The model for a call about to run, or 404 model_not_found: a map lookup, with an "available"
   * verdict up to AVAILABILITY_TTL_MS old (the engine checks the files again before it runs the
   * model, so a model whose files just vanished gets 503 there).
   */
  resolve(id: string): CatalogModel {
    let info = this.infos(false).get(id);
    if (!info?.available) info = this.infos(true).get(id);
    if (!info) throw new AppError('model_not_found', `Model '${id}' is not in the catalog`);
    return this.toRecord(info);
  }

  private infos(fresh: boolean): Map<string, ModelInfo> {
    const now = performance.now();
    if (fresh || !this.byId || now - this.byId.at > AVAILABILITY_TTL_MS) {
      this.byId = { at: now, map: new Map(this.engine.models().map((m) => [m.id, m])) };
    }
    return this.byId.map;
  }

  recordLatency(id: string, ms: number): void {
    const cur = this.latency.get(id) ?? { mean: 0, n: 0 };
    const n = cur.n + 1;
    this.latency.set(id, { mean: cur.mean + (ms - cur.mean) / n, n });
  }

  counts(): { count: number; available: number } {
    const all = this.engine.models();
    return { count: all.length, available: all.filter((m) => m.available).length };
  }

  private toRecord(m: ModelInfo): CatalogModel {
    const lat = this.latency.get(m.id);
    return {
      id: m.id,
      name: m.name,
      provider: m.provider,
      family: m.family,
      kind: m.kind,
      description: m.description,
      license: m.license,
      supported_tasks: m.supportedTasks,
      avg_latency_ms: lat ? Math.round(lat.mean * 100) / 100 : 0,
      latency_samples: lat?.n ?? 0,
      context_length: m.contextLength,
      max_context_length: m.maxContextLength,
      min_points: m.minPoints,
      max_horizon: m.maxHorizon,
      capabilities: m.capabilities,
      quantile_method: m.quantileMethod,
      uses_covariates: m.capabilities.includes('covariates'),
      // `multivariate_joint`: the variates of one target are fed to the model together (ONNX Chronos-2, Toto-2).
      multivariate: m.capabilities.includes('multivariate_native') || m.capabilities.includes('multivariate_joint') ? 'native' : 'channel_wise',
      quantiles: m.capabilities.includes('quantiles'),
      samples: m.capabilities.includes('samples'),
      pricing: priceOf(m.id, m.kind),
      access: this.access[m.id] ?? 'all',
      available: m.available,
      unavailable_reason: m.available ? null : (m.unavailableReason ?? 'not available'),
      pull_command: m.available || m.kind !== 'neural' ? null : `npm run models -- pull ${m.id}`,
    };
  }
}
