import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ONNX_MODELS } from '../../src/engine/onnx/catalog.ts';
import type { ForecastJob, ModelEnv, ModelImpl } from '../../src/engine/types.ts';
import { buildGraph, type GraphSpec } from './onnx-graph-builder.ts';

/** A fresh MODELS_DIR laid out like the hub (`<org>/<repo>/<file>`). */
export async function tempModelsDir(): Promise<{ env: ModelEnv; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'onnx-models-'));
  return { env: { modelsDir: dir, threads: 1 }, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

export function catalogModel(id: string): ModelImpl {
  const impl = ONNX_MODELS.find((m) => m.info.id === id);
  if (!impl) throw new Error(`no catalog entry ${id}`);
  return impl;
}

/** Writes a test graph (and optionally a manifest.json) where the model's graph file belongs. */
export async function installGraph(env: ModelEnv, impl: ModelImpl, graph: GraphSpec, manifest?: unknown): Promise<void> {
  const files = impl.files;
  const graphFile = files?.files.find((f) => f.path.endsWith('.onnx'));
  if (!files || !graphFile) throw new Error(`${impl.info.id} declares no .onnx file`);
  const dir = join(env.modelsDir, files.repo);
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, graphFile.path), buildGraph(graph));
  if (manifest !== undefined) await writeFile(join(dir, 'manifest.json'), JSON.stringify(manifest));
}

export function job(over: Partial<ForecastJob> & Pick<ForecastJob, 'series'>): ForecastJob {
  return {
    model: 'test',
    horizon: 4,
    quantileLevels: [0.1, 0.5, 0.9],
    numSamples: 0,
    seasonLength: null,
    seed: 1,
    ...over,
  };
}

/** offsets[k] = scale * (level - 0.5) + cube * (level - 0.5)^3: checkable and non-linear. */
export function levelOffsets(levels: readonly number[], scale = 10, cube = 0): number[] {
  return levels.map((l) => scale * (l - 0.5) + cube * (l - 0.5) ** 3);
}

export const CHRONOS2_LEVELS = [0.01, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.99];
export const DECILES = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9];
export const T0_LEVELS = [0.1, 0.25, 0.5, 0.75, 0.9];

export function close(actual: number | undefined, expected: number, tol = 1e-4): boolean {
  return actual !== undefined && Math.abs(actual - expected) <= tol * Math.max(1, Math.abs(expected));
}
