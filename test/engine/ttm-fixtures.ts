import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** Shared test data (weights, reference vectors) live outside the repo, in SHARED_DIR. */
export const repoRoot = path.resolve(import.meta.dirname, '..', '..');
export const sharedDir = process.env.SHARED_DIR ?? path.resolve(repoRoot, '..', 'shared');
export const modelsDir = path.join(sharedDir, 'models');
export const ttmDir = path.join(modelsDir, 'ibm-granite', 'granite-timeseries-ttm-r2');
export const weightsPath = path.join(ttmDir, 'model.safetensors');

/** A reason to skip when the weights are absent (the test then says so instead of passing silently). */
export const skipWithoutWeights: string | false = existsSync(weightsPath)
  ? false
  : `TTM weights not found at ${weightsPath} (set SHARED_DIR to the folder holding models/)`;

export interface TestVector {
  context: number[][];
  prediction: number[][];
  datasetMse: number;
}

export function readVector(dataset: 'ETTh1' | 'ETTh2'): TestVector {
  const raw = JSON.parse(readFileSync(path.join(ttmDir, 'reference', `${dataset}_first_window.json`), 'utf8')) as {
    context_512x7: number[][];
    prediction_96x7: number[][];
    dataset_mse: number;
  };
  return { context: raw.context_512x7, prediction: raw.prediction_96x7, datasetMse: raw.dataset_mse };
}

/** Column c of a time-major [T][C] matrix. */
export function column(m: number[][], c: number): number[] {
  return m.map((row) => row[c]!);
}
