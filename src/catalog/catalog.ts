import type { Engine, ModelInfo } from '../engine/types.ts';
import { unknownModelMessage } from '../shared/suggest.ts';
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
  padded_below: number | null;
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

  /**
   * The model, or 404 model_not_found. A map lookup: only this model's files are looked at (the
   * engine caches their sha256 verdict), so the cost does not grow with the catalog.
   */
  get(id: string): CatalogModel {
    const info = this.engine.model ? this.engine.model(id) : this.engine.models().find((m) => m.id === id);
    if (!info)
      throw new AppError(
        'model_not_found',
        unknownModelMessage(
          id,
          this.engine.models().map((m) => m.id),
        ),
      );
    return this.toRecord(info);
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
      padded_below: m.paddedBelow ?? null,
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
