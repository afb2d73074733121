import { z } from 'zod';
import { EngineError, type ForecastJob, type ModelInfo, type SeriesForecast } from '../types.ts';

/**
 * A forecast job and its result as tensors of the Open Inference Protocol v2 (KServe, Triton,
 * Seldon: https://github.com/kserve/open-inference-protocol, REST binding). The mapping, also in
 * docs/remote-inference.md:
 *
 * request `parameters`: horizon (int ≥ 1), num_samples (int ≥ 0), season_length (int; 0 = detect),
 *   seed (int)
 * request `inputs`:
 *   target          FP64 [N, L]  the N series, each left-padded to the longest length L
 *   target_mask     BOOL [N, L]  true where target holds an observation (false: missing or padding)
 *   quantile_levels FP64 [Q]     ascending, strictly inside (0, 1)
 *   group_ids       INT64 [N]    optional: series sharing an id are channels of one target
 * response `outputs`:
 *   mean            FP64 [N, H]
 *   quantiles       FP64 [N, Q, H]
 *   samples         FP64 [N, S, H]  when num_samples > 0
 *   info            BYTES [N]       one JSON object per series (what the model decided)
 * Tensor data is flat, row-major, as the protocol's JSON binding allows. JSON has no NaN, hence the mask.
 */

const Param = z.union([z.string(), z.number(), z.boolean()]);
const Tensor = z.object({
  name: z.string().min(1),
  shape: z.array(z.number().int().min(0)),
  datatype: z.enum(['BOOL', 'UINT8', 'UINT16', 'UINT32', 'UINT64', 'INT8', 'INT16', 'INT32', 'INT64', 'FP16', 'FP32', 'FP64', 'BYTES']),
  parameters: z.record(z.string(), Param).optional(),
  data: z.array(z.unknown()),
});
export type OipTensor = z.infer<typeof Tensor>;

export const InferRequest = z.object({
  id: z.string().optional(),
  parameters: z.record(z.string(), Param).optional(),
  inputs: z.array(Tensor).min(1),
  outputs: z.array(z.object({ name: z.string(), parameters: z.record(z.string(), Param).optional() })).optional(),
});
export type InferRequest = z.infer<typeof InferRequest>;

export const InferResponse = z.object({
  model_name: z.string(),
  model_version: z.string().optional(),
  id: z.string().optional(),
  parameters: z.record(z.string(), Param).optional(),
  outputs: z.array(Tensor),
});
export type InferResponse = z.infer<typeof InferResponse>;

/** The protocol's error object, with this project's extension fields for engine errors. */
export const OipError = z.object({
  error: z.string(),
  kind: z.enum(['timeout', 'busy', 'bad_input', 'unavailable', 'unknown_model', 'failed']).optional(),
  series_index: z.number().int().optional(),
  field: z.enum(['quantile_levels', 'horizon']).optional(),
});
export type OipError = z.infer<typeof OipError>;

const product = (shape: number[]) => shape.reduce((a, b) => a * b, 1);

function bad(message: string): never {
  throw new EngineError('bad_input', message);
}

/** The protocol allows tensor data flat (row-major) or nested; both are read flat. */
function flat(t: OipTensor): unknown[] {
  return t.data.some(Array.isArray) ? (t.data as unknown[]).flat(t.shape.length) : t.data;
}

function numbers(t: OipTensor, what: string): number[] {
  t = { ...t, data: flat(t) };
  if (t.data.length !== product(t.shape)) bad(`input '${t.name}': ${t.data.length} values do not fill shape [${t.shape.join(', ')}]`);
  return t.data.map((v, i) => {
    if (v === null) return Number.NaN;
    if (typeof v !== 'number') bad(`input '${t.name}' (${what}): element ${i} is not a number`);
    return v;
  });
}

export function encodeJob(job: ForecastJob, id?: string): InferRequest {
  const n = job.series.length;
  const len = Math.max(1, ...job.series.map((s) => s.length));
  const target = new Array<number>(n * len).fill(0);
  const mask = new Array<boolean>(n * len).fill(false);
  job.series.forEach((s, i) => {
    const offset = i * len + (len - s.length);
    s.forEach((v, j) => {
      if (!Number.isNaN(v)) {
        target[offset + j] = v;
        mask[offset + j] = true;
      }
    });
  });
  const inputs: OipTensor[] = [
    { name: 'target', shape: [n, len], datatype: 'FP64', data: target },
    { name: 'target_mask', shape: [n, len], datatype: 'BOOL', data: mask },
    { name: 'quantile_levels', shape: [job.quantileLevels.length], datatype: 'FP64', data: job.quantileLevels },
  ];
  if (job.groupIds) inputs.push({ name: 'group_ids', shape: [n], datatype: 'INT64', data: job.groupIds });
  return {
    ...(id ? { id } : {}),
    parameters: { horizon: job.horizon, num_samples: job.numSamples, season_length: job.seasonLength ?? 0, seed: job.seed },
    inputs,
  };
}

function intParam(req: InferRequest, name: string, min: number, def?: number): number {
  const v = req.parameters?.[name] ?? def;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min) bad(`parameter '${name}' must be an integer >= ${min}`);
  return v;
}

/** The job a request describes; a malformed request is an EngineError('bad_input') (HTTP 400). */
export function decodeJob(model: string, req: InferRequest): ForecastJob {
  const byName = new Map(req.inputs.map((t) => [t.name, t]));
  const target = byName.get('target');
  if (!target) bad("input 'target' is required");
  if (target.shape.length !== 2 || (target.datatype !== 'FP64' && target.datatype !== 'FP32')) bad("input 'target' must be FP64 [N, L]");
  const [n = 0, len = 0] = target.shape;
  if (n < 1 || len < 1) bad("input 'target' needs N >= 1 series of L >= 1 points");
  const values = numbers(target, 'target');
  const maskT = byName.get('target_mask');
  let mask: boolean[] | null = null;
  if (maskT) {
    if (maskT.datatype !== 'BOOL' || maskT.shape.length !== 2 || maskT.shape[0] !== n || maskT.shape[1] !== len)
      bad("input 'target_mask' must be BOOL with the shape of 'target'");
    const m = flat(maskT);
    if (m.length !== n * len || m.some((v) => typeof v !== 'boolean')) bad("input 'target_mask' must hold N × L booleans");
    mask = m as boolean[];
  }
  const series: number[][] = [];
  for (let i = 0; i < n; i++) {
    // Leading padding (masked) is dropped; masked points inside a series are missing values.
    let start = i * len;
    const end = (i + 1) * len;
    if (mask) while (start < end && !mask[start]) start++;
    const s: number[] = [];
    for (let k = start; k < end; k++) s.push(mask && !mask[k] ? Number.NaN : (values[k] as number));
    series.push(s);
  }
  const q = byName.get('quantile_levels');
  const quantileLevels = q ? numbers(q, 'quantile_levels') : [];
  const g = byName.get('group_ids');
  let groupIds: number[] | undefined;
  if (g) {
    groupIds = numbers(g, 'group_ids');
    if (groupIds.length !== n || groupIds.some((x) => !Number.isInteger(x))) bad("input 'group_ids' must be N integers");
  }
  const season = intParam(req, 'season_length', 0, 0);
  return {
    model,
    series,
    horizon: intParam(req, 'horizon', 1),
    quantileLevels,
    numSamples: intParam(req, 'num_samples', 0, 0),
    seasonLength: season === 0 ? null : season,
    seed: intParam(req, 'seed', 0, 0),
    ...(groupIds ? { groupIds } : {}),
  };
}

export function encodeResult(model: string, job: ForecastJob, forecasts: SeriesForecast[], id?: string): InferResponse {
  const n = forecasts.length;
  const h = job.horizon;
  const q = job.quantileLevels.length;
  const outputs: OipTensor[] = [
    { name: 'mean', shape: [n, h], datatype: 'FP64', data: forecasts.flatMap((f) => f.mean) },
    { name: 'quantiles', shape: [n, q, h], datatype: 'FP64', data: forecasts.flatMap((f) => f.quantiles.flat()) },
  ];
  if (job.numSamples > 0) {
    outputs.push({ name: 'samples', shape: [n, job.numSamples, h], datatype: 'FP64', data: forecasts.flatMap((f) => (f.samples ?? []).flat()) });
  }
  outputs.push({ name: 'info', shape: [n], datatype: 'BYTES', data: forecasts.map((f) => JSON.stringify(f.info ?? {})) });
  return { model_name: model, ...(id ? { id } : {}), outputs };
}

/** Reads a node's answer back into forecasts, checking every shape against the job. */
export function decodeResult(res: InferResponse, job: ForecastJob): SeriesForecast[] {
  const fail = (m: string): never => {
    throw new EngineError('failed', `remote inference node answered a malformed result: ${m}`);
  };
  const byName = new Map(res.outputs.map((t) => [t.name, t]));
  const n = job.series.length;
  const h = job.horizon;
  const q = job.quantileLevels.length;
  const s = job.numSamples;
  const take = (name: string, shape: number[]): number[] => {
    const t = byName.get(name) ?? fail(`output '${name}' is missing`);
    if (t.shape.join(',') !== shape.join(',')) fail(`output '${name}' has shape [${t.shape.join(', ')}], expected [${shape.join(', ')}]`);
    if (t.data.length !== product(shape)) fail(`output '${name}' holds ${t.data.length} values, expected ${product(shape)}`);
    return t.data.map((v) => (typeof v === 'number' ? v : v === null ? Number.NaN : fail(`output '${name}' holds a non-number`)));
  };
  const mean = take('mean', [n, h]);
  const quantiles = take('quantiles', [n, q, h]);
  const samples = s > 0 ? take('samples', [n, s, h]) : null;
  const info = byName.get('info');
  const out: SeriesForecast[] = [];
  for (let i = 0; i < n; i++) {
    const f: SeriesForecast = {
      mean: mean.slice(i * h, (i + 1) * h),
      quantiles: Array.from({ length: q }, (_, k) => quantiles.slice((i * q + k) * h, (i * q + k + 1) * h)),
    };
    if (samples) f.samples = Array.from({ length: s }, (_, k) => samples.slice((i * s + k) * h, (i * s + k + 1) * h));
    const raw = info?.data[i];
    if (typeof raw === 'string') {
      try {
        const parsed: unknown = JSON.parse(raw);
        if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) f.info = parsed as Record<string, unknown>;
      } catch {
        // info is advisory: an unreadable one is dropped, the numbers stand.
      }
    }
    out.push(f);
  }
  return out;
}

/** Model metadata (GET /v2/models/{name}), with the model's catalog facts as an extension field. */
export interface ModelMetadata {
  name: string;
  platform: string;
  versions?: string[];
  inputs: { name: string; datatype: string; shape: number[] }[];
  outputs: { name: string; datatype: string; shape: number[] }[];
  /** Extension: what the engine knows about the model (the gateway's catalog uses it). */
  tsfm_model?: Omit<ModelInfo, 'available' | 'unavailableReason'>;
}

export function modelMetadata(info: ModelInfo): ModelMetadata {
  const { available: _a, unavailableReason: _r, ...facts } = info;
  return {
    name: info.id,
    platform: `tsfm-${info.kind}`,
    inputs: [
      { name: 'target', datatype: 'FP64', shape: [-1, -1] },
      { name: 'target_mask', datatype: 'BOOL', shape: [-1, -1] },
      { name: 'quantile_levels', datatype: 'FP64', shape: [-1] },
      { name: 'group_ids', datatype: 'INT64', shape: [-1] },
    ],
    outputs: [
      { name: 'mean', datatype: 'FP64', shape: [-1, -1] },
      { name: 'quantiles', datatype: 'FP64', shape: [-1, -1, -1] },
      { name: 'samples', datatype: 'FP64', shape: [-1, -1, -1] },
      { name: 'info', datatype: 'BYTES', shape: [-1] },
    ],
    tsfm_model: facts,
  };
}
