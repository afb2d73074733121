import { TTM_MAX_HORIZON, ttmR2 } from '../neural/ttm/model.ts';
import { TTM_CONTEXT, TTM_HORIZON } from '../neural/ttm/weights.ts';
import type { ModelFiles, ModelImpl } from '../types.ts';
import { TTM_BACKTESTS } from '../conformal.ts';
import { onnxModel } from './driver.ts';
import type { OnnxGraphSpec } from './spec.ts';

/**
 * sktime's ONNX exports on the Hugging Face hub, one repo per model and precision
 * (`sktime/<model>-onnx`, `sktime/<model>-onnx-int8`). File names and contracts are those the
 * exporter publishes (graph + manifest.json + LICENSE, and NOTICE where upstream has one).
 *
 * sha256: only the Chronos-2 int8 graph has a published value we have seen (a third-party
 * verification that matched it against the repo's manifest.json at the pinned revision).
 * Every other file is `sha256: null`: not known when this catalog was written. The store
 * then records the hash of the first verified download and checks it on every later pull
 * (trust on first use); docs/models-onnx.md says how to pin a value once it is known.
 */

const CHRONOS2_LEVELS = [0.01, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.99];
const DECILES = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9];
const T0_LEVELS = [0.1, 0.25, 0.5, 0.75, 0.9];

type Precision = 'fp32' | 'int8';

interface Family {
  key: string;
  title: string;
  provider: string;
  family: string;
  upstream: string;
  files: Record<Precision, string>;
  /** Extra files the repo carries beside the graph (e.g. the upstream NOTICE). */
  extraFiles?: string[];
  /** Known pins per precision: revision and the graph's sha256 and size. */
  pins?: Partial<Record<Precision, { revision: string; sha256: string; size: number }>>;
  spec: Omit<OnnxGraphSpec, 'file'>;
  minPoints: number;
  maxHorizon: number;
  capabilities: string[];
  description: string;
}

const FAMILIES: Family[] = [
  {
    key: 'chronos2',
    title: 'Chronos-2',
    provider: 'Amazon',
    family: 'chronos-2',
    upstream: 'amazon/chronos-2',
    files: { fp32: 'chronos2-ctx2048-h64.onnx', int8: 'chronos2-ctx2048-h64-int8.onnx' },
    pins: {
      int8: {
        revision: '181457aad06ff127381195c62e58b73a397b42ea',
        sha256: '498b95c8902984ff4876dbd12f457163607a0ee1b1241024cefdce7104dd26c8',
        size: 131_271_973,
      },
    },
    spec: {
      contextInput: 'context',
      idInput: 'group_ids',
      output: 'quantiles',
      contextLength: 2048,
      horizon: 64,
      levels: CHRONOS2_LEVELS,
      missing: 'nan',
      rollout: 'none',
      maxBatchRows: 16,
    },
    minPoints: 2,
    maxHorizon: 64,
    capabilities: ['quantiles', 'samples', 'missing_values', 'multivariate', 'multivariate_joint'],
    description:
      'Chronos-2 (120M) exported to ONNX by sktime: 2048 points of context, 64 steps, 21 quantile levels; channels of one target are forecast jointly through group attention.',
  },
  {
    key: 'toto2-22m',
    title: 'Toto-2.0-22m',
    provider: 'Datadog',
    family: 'toto-2',
    upstream: 'Datadog/Toto-2.0-22m',
    files: { fp32: 'toto2-22m-ctx2048-h96.onnx', int8: 'toto2-22m-ctx2048-h96-int8.onnx' },
    spec: {
      contextInput: 'context',
      idInput: 'series_ids',
      output: 'quantiles',
      contextLength: 2048,
      horizon: 96,
      levels: DECILES,
      missing: 'nan',
      rollout: 'none',
      maxBatchRows: 32,
    },
    minPoints: 2,
    maxHorizon: 96,
    capabilities: ['quantiles', 'samples', 'missing_values', 'multivariate', 'multivariate_joint'],
    description: 'Toto-2.0-22m exported to ONNX by sktime: 2048 points of context, 96 steps, deciles; variates of one target attend to each other.',
  },
  {
    key: 'tinycast',
    title: 'TinyCast',
    provider: 'RAWS Labs',
    family: 'tinycast',
    upstream: 'raws-labs/tinycast',
    files: { fp32: 'tinycast-ctx2048-b48.onnx', int8: 'tinycast-ctx2048-b48-int8.onnx' },
    spec: {
      contextInput: 'context',
      idInput: null,
      output: 'quantiles',
      contextLength: 2048,
      horizon: 48,
      levels: DECILES,
      missing: 'impute_pad_first',
      rollout: 'median',
      maxBatchRows: 64,
    },
    minPoints: 2,
    // The exporter verified rollouts of 15 blocks against the official predictor.
    maxHorizon: 720,
    capabilities: ['quantiles', 'samples', 'missing_values', 'multivariate'],
    description:
      'TinyCast (146K parameters) exported to ONNX by sktime: one 48-step block of deciles; longer horizons by feeding the median back block by block, as the official predictor does.',
  },
  {
    key: 't0-alpha',
    title: 't0-alpha',
    provider: 'The Forecasting Company',
    family: 't0',
    upstream: 'theforecastingcompany/t0-alpha',
    files: { fp32: 't0-alpha-ctx512-h64.onnx', int8: 't0-alpha-ctx512-h64-int8.onnx' },
    extraFiles: ['NOTICE'],
    spec: {
      contextInput: 'context',
      idInput: null,
      output: 'quantiles',
      contextLength: 512,
      horizon: 64,
      levels: T0_LEVELS,
      missing: 'nan',
      rollout: 'none',
      maxBatchRows: 16,
    },
    minPoints: 2,
    maxHorizon: 64,
    capabilities: ['quantiles', 'samples', 'missing_values', 'multivariate'],
    description: 't0-alpha exported to ONNX by sktime: 512 points of context, 64 steps, quantiles 0.1, 0.25, 0.5, 0.75, 0.9.',
  },
];

function entry(f: Family, precision: Precision): ModelImpl {
  const suffix = precision === 'int8' ? '-int8' : '';
  const repo = `sktime/${f.key}-onnx${suffix}`;
  const file = f.files[precision];
  const pin = f.pins?.[precision];
  const files: ModelFiles = {
    repo,
    revision: pin?.revision ?? 'main',
    files: [
      pin ? { path: file, sha256: pin.sha256, size: pin.size } : { path: file, sha256: null },
      { path: 'manifest.json', sha256: null },
      { path: 'LICENSE', sha256: null },
      ...(f.extraFiles ?? []).map((path) => ({ path, sha256: null })),
    ],
  };
  return onnxModel({
    info: {
      id: repo,
      name: `${f.title} (ONNX ${precision})`,
      provider: f.provider,
      family: f.family,
      kind: 'neural',
      description:
        `${f.description} Upstream weights: ${f.upstream} (Apache-2.0); unofficial export.` +
        (precision === 'int8' ? ' int8-quantized: smaller and faster, with a few percent of forecast drift.' : ''),
      license: 'Apache-2.0',
      supportedTasks: ['forecast'],
      minPoints: f.minPoints,
      contextLength: f.spec.contextLength,
      maxContextLength: f.spec.contextLength,
      maxHorizon: f.maxHorizon,
      capabilities: f.capabilities,
      quantileMethod: 'native',
    },
    files,
    spec: { ...f.spec, file },
  });
}

/** The eight sktime exports (four models, fp32 and int8). */
export const ONNX_MODELS: ModelImpl[] = FAMILIES.flatMap((f) => [entry(f, 'fp32'), entry(f, 'int8')]);

/**
 * TinyTimeMixer r2 under the exporter's contract (`context` [B, 512] finite → `forecast`
 * [B, 96], scaling inside the graph). No hub repo for it is named, so it is not in the
 * catalog; an operator with an export registers it with `ttmR2OnnxModel` (or this spec).
 * The pipeline follows the TypeScript TTM (src/engine/neural/ttm/): the newest 512 points,
 * gaps and left padding filled with the observed mean, one rollout block fed back for up to
 * 192 steps (test/engine/onnx-ttm-parity.test.ts checks this).
 */
export const TTM_R2_ONNX_SPEC: OnnxGraphSpec = {
  file: 'ttm-r2-ctx512-h96.onnx',
  contextInput: 'context',
  idInput: null,
  output: 'forecast',
  contextLength: TTM_CONTEXT,
  horizon: TTM_HORIZON,
  levels: null,
  missing: 'fill_mean',
  rollout: 'median',
  maxBatchRows: 256,
};

/**
 * A ModelImpl for a TinyTimeMixer r2 ONNX export the operator has (e.g. `my-org/ttm-r2-onnx`
 * holding `ttm-r2-ctx512-h96.onnx`): the TypeScript TTM's limits (512 points at least, 192
 * steps at most; 512 points at least, where the TypeScript TTM pads down to 36) with the generic
 * driver's conformal quantiles. Add it to MODEL_IMPLS.
 */
export function ttmR2OnnxModel(opts: { repo: string; revision?: string; file?: string; sha256?: string | null }): ModelImpl {
  const file = opts.file ?? TTM_R2_ONNX_SPEC.file;
  return onnxModel({
    info: {
      ...ttmR2.info,
      id: opts.repo,
      name: 'Granite TimeSeries TTM R2 (ONNX)',
      description:
        'IBM Granite TinyTimeMixer R2 exported to ONNX: looks at the last 512 points (needs 512), forecasts 96 (up to 192 by rolling out). ' +
        'Point forecasts; quantiles and samples come from conformal calibration on in-context backtests.',
      // The graph reads 512 points; older ones feed the calibration backtests, planned as the
      // TypeScript TTM plans them (TTM_BACKTESTS), so both runtimes calibrate alike.
      contextLength: ttmR2.info.contextLength,
      maxContextLength: ttmR2.info.maxContextLength,
      // 512, not the TypeScript TTM's 36: padding a short series is only accurate enough with the
      // padded points masked from the model's scaler, and the ONNX contract has no mask input
      // (bench/results/m3-ttm.md: the unmasked fills lose to seasonal-naive on M3 monthly).
      minPoints: TTM_CONTEXT,
      maxHorizon: TTM_MAX_HORIZON,
    },
    files: { repo: opts.repo, revision: opts.revision ?? 'main', files: [{ path: file, sha256: opts.sha256 ?? null }] },
    spec: { ...TTM_R2_ONNX_SPEC, file },
    calibration: TTM_BACKTESTS,
  });
}
