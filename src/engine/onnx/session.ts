import { existsSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { InferenceSession } from 'onnxruntime-node';
import { EngineError } from '../types.ts';
import { readManifest, type OnnxManifest } from './manifest.ts';
import type { OnnxGraphSpec } from './spec.ts';

type Ort = typeof import('onnxruntime-node');

/** The contract as this graph really has it, resolved from the session (and manifest). */
export interface ResolvedGraph {
  session: InferenceSession;
  ort: Ort;
  contextInput: string;
  contextLength: number;
  idInput: { name: string; dtype: 'int64' | 'int32' } | null;
  output: string;
  horizon: number;
  /** Ascending quantile levels of the output's last axis; null for a point forecast. */
  levels: number[] | null;
  /** Index of level 0.5 in `levels`, or -1. */
  medianIndex: number;
  source: 'session' | 'session+manifest';
}

let ortModule: Promise<Ort> | undefined;
/** Loaded on first use, so workers that never run an ONNX model never load the native addon. */
function loadOrt(): Promise<Ort> {
  ortModule ??= import('onnxruntime-node');
  return ortModule;
}

/**
 * One session per graph file and thread count, per worker thread. The key carries the file's
 * size and mtime, so a graph replaced on disk (a new pull) is opened afresh, not served stale.
 */
const cache = new Map<string, Promise<ResolvedGraph>>();

export function graphPath(modelsDir: string, repo: string, spec: OnnxGraphSpec): string {
  return join(modelsDir, repo, spec.file);
}

export function loadGraph(path: string, threads: number, spec: OnnxGraphSpec, modelId: string): Promise<ResolvedGraph> {
  let version = 'missing';
  try {
    const st = statSync(path);
    version = `${st.size}:${st.mtimeMs}`;
  } catch {
    // openGraph reports the missing file
  }
  const key = `${path}\u0000${threads}\u0000${version}`;
  let pending = cache.get(key);
  if (!pending) {
    // A replaced graph's older sessions are released.
    for (const [k, old] of cache) {
      if (k.startsWith(`${path}\u0000${threads}\u0000`)) {
        cache.delete(k);
        void old.then((g) => g.session.release()).catch(() => undefined);
      }
    }
    pending = openGraph(path, threads, spec, modelId);
    cache.set(key, pending);
    // A failed open (file pulled later, bad graph fixed) must not stay cached.
    pending.catch(() => cache.delete(key));
  }
  return pending;
}

/** Releases every cached session of this worker (used by tests and on shutdown). */
export async function releaseSessions(): Promise<void> {
  const all = [...cache.values()];
  cache.clear();
  for (const p of all) {
    try {
      await (await p).session.release();
    } catch {
      // a session that failed to open has nothing to release
    }
  }
}

async function openGraph(path: string, threads: number, spec: OnnxGraphSpec, modelId: string): Promise<ResolvedGraph> {
  if (!existsSync(path)) {
    throw new EngineError('unavailable', `${modelId}: ${spec.file} is not downloaded; run \`npm run models -- pull ${modelId}\``);
  }
  const ort = await loadOrt();
  let manifest: OnnxManifest | null;
  let session: InferenceSession;
  try {
    manifest = await readManifest(join(dirname(path), 'manifest.json'));
    session = await ort.InferenceSession.create(path, {
      executionProviders: ['cpu'],
      intraOpNumThreads: Math.max(1, Math.floor(threads)),
      interOpNumThreads: 1,
      executionMode: 'sequential',
      graphOptimizationLevel: 'all',
    });
  } catch (err) {
    throw new EngineError('failed', `${modelId}: cannot open ${spec.file}: ${(err as Error).message}`);
  }
  try {
    return resolveContract(session, ort, manifest, spec, modelId);
  } catch (err) {
    await session.release();
    throw err;
  }
}

type TensorMeta = { name: string; type: string; shape: readonly (number | string)[] };

function tensorMeta(list: readonly InferenceSession.ValueMetadata[]): TensorMeta[] {
  const out: TensorMeta[] = [];
  for (const m of list) {
    if (m.isTensor) out.push({ name: m.name, type: m.type, shape: m.shape });
  }
  return out;
}

/** A static dimension from the session, else from the manifest, else the spec's value. */
function pickDim(sessionDim: number | string | undefined, manifestDim: number | string | undefined, fallback: number): number {
  if (typeof sessionDim === 'number' && sessionDim > 0) return sessionDim;
  if (typeof manifestDim === 'number' && manifestDim > 0) return manifestDim;
  return fallback;
}

export function resolveContract(session: InferenceSession, ort: Ort, manifest: OnnxManifest | null, spec: OnnxGraphSpec, modelId: string): ResolvedGraph {
  const bad = (msg: string): EngineError => new EngineError('failed', `${modelId}: ${spec.file}: ${msg}`);
  const inputs = tensorMeta(session.inputMetadata);
  const outputs = tensorMeta(session.outputMetadata);
  if (inputs.length !== session.inputNames.length) throw bad('has a non-tensor input');

  const floatInputs = inputs.filter((m) => m.type === 'float32');
  const context =
    floatInputs.find((m) => m.name === spec.contextInput) ??
    floatInputs.find((m) => m.name === manifest?.contract.inputs.find((i) => i.dtype === 'float32')?.name) ??
    (floatInputs.length === 1 ? floatInputs[0] : undefined);
  if (!context) throw bad(`no float32 context input (inputs: ${session.inputNames.join(', ')})`);
  if (context.shape.length !== 2) throw bad(`context input ${context.name} has rank ${context.shape.length}, expected 2`);
  const manifestContext = manifest?.contract.inputs.find((i) => i.name === context.name);
  const contextLength = pickDim(context.shape[1], manifestContext?.shape[1], spec.contextLength);

  const others = inputs.filter((m) => m !== context);
  if (others.length > 1) throw bad(`unexpected inputs: ${others.map((m) => m.name).join(', ')}`);
  let idInput: ResolvedGraph['idInput'] = null;
  const ids = others[0];
  if (ids) {
    if ((ids.type !== 'int64' && ids.type !== 'int32') || ids.shape.length !== 1) {
      throw bad(`input ${ids.name} is ${ids.type}[${ids.shape.join(', ')}], expected int64 [rows] ids`);
    }
    idInput = { name: ids.name, dtype: ids.type };
  }

  const out = outputs.find((m) => m.name === spec.output) ?? outputs.find((m) => m.name === manifest?.contract.output.name) ?? outputs[0];
  if (!out) throw bad('has no tensor output');
  if (out.type !== 'float32') throw bad(`output ${out.name} is ${out.type}, expected float32`);
  const manifestOut = manifest?.contract.output.name === out.name ? manifest.contract.output : undefined;
  let levels: number[] | null;
  let horizon: number;
  if (out.shape.length === 3) {
    horizon = pickDim(out.shape[1], manifestOut?.shape[1], spec.horizon);
    levels = manifestOut?.levels ?? spec.levels;
    if (!levels) throw bad(`output ${out.name} has a quantile axis but no levels are known`);
    const width = pickDim(out.shape[2], manifestOut?.shape[2], levels.length);
    if (width !== levels.length) throw bad(`output has ${width} quantiles but ${levels.length} levels are declared`);
    for (let i = 0; i < levels.length; i++) {
      const l = levels[i] ?? NaN;
      if (!(l > 0 && l < 1) || (i > 0 && !(l > (levels[i - 1] ?? 1)))) throw bad('quantile levels must ascend inside (0, 1)');
    }
  } else if (out.shape.length === 2) {
    horizon = pickDim(out.shape[1], manifestOut?.shape[1], spec.horizon);
    levels = null;
  } else {
    throw bad(`output ${out.name} has rank ${out.shape.length}, expected 2 or 3`);
  }
  const medianIndex = levels ? levels.findIndex((l) => Math.abs(l - 0.5) < 1e-9) : -1;
  if (spec.rollout === 'median' && levels && medianIndex < 0) throw bad('rollout needs a 0.5 level');
  return {
    session,
    ort,
    contextInput: context.name,
    contextLength,
    idInput,
    output: out.name,
    horizon,
    levels,
    medianIndex,
    source: manifest ? 'session+manifest' : 'session',
  };
}
