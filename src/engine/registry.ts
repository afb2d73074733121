import { autoArima } from './models/arima.ts';
import { ces } from './models/ces.ts';
import { combo } from './models/combo.ts';
import { autoEts } from './models/ets.ts';
import { mstl } from './models/mstl.ts';
import { drift, naive, seasonalNaive } from './models/simple.ts';
import { theta } from './models/theta.ts';
import { ttmR2 } from './neural/ttm/model.ts';
import { ONNX_MODELS } from './onnx/catalog.ts';
import type { ModelImpl } from './types.ts';

/** The built-in statistical models: no download, always available. */
export const BUILTIN_MODELS: ModelImpl[] = [naive, seasonalNaive, drift, autoEts, autoArima, theta, ces, mstl, combo];

/**
 * Every model the engine can run. Add a model by implementing ModelImpl in its own folder
 * and listing it here (see docs/adding-a-model.md).
 */
export const MODEL_IMPLS: ModelImpl[] = [...BUILTIN_MODELS, ...ONNX_MODELS, ttmR2];
