import { ONNX_MODELS } from './onnx/catalog.ts';
import type { ModelImpl } from './types.ts';

/**
 * Every model the engine can run. Add a model by implementing ModelImpl in its own folder
 * and listing it here (see docs/adding-a-model.md).
 */
export const MODEL_IMPLS: ModelImpl[] = [
  ...ONNX_MODELS,
];
