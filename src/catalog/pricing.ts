import type { ModelKind } from '../engine/types.ts';

/**
 * Prices are credits per 1000 tokens, OpenAI/OpenRouter style. A call costs
 *   credits = max(1, ceil((input_tokens * input_price + output_tokens * output_price) / 1000))
 * so every successful call costs at least one credit and the price follows the tokens alone.
 * Output tokens are the numbers the response holds (mean, each quantile level, each sample per step
 * of each series), so the price follows the work produced. The output prices are set so that a call
 * with the default three quantile levels and no samples (4 numbers per step) costs what one step
 * cost before samples and quantiles were counted (5 and 10 credits per 1000 steps).
 */
/**
 * Input tokens follow the work (ADR 0039): a series counts its observed values, or its estimated
 * model time (src/engine/work.ts) in units of this many milliseconds of the reference core when that
 * is more. At the statistical input price a credit then buys at most 2 s of estimated model time.
 */
export const WORK_MS_PER_TOKEN = 2;

export interface Price {
  input_credits_per_1k_tokens: number;
  output_credits_per_1k_tokens: number;
}

const BY_KIND: Record<ModelKind, Price> = {
  statistical: { input_credits_per_1k_tokens: 1, output_credits_per_1k_tokens: 1.25 },
  neural: { input_credits_per_1k_tokens: 2, output_credits_per_1k_tokens: 2.5 },
};

/** Per-model prices where a model differs from its kind's default. */
const BY_MODEL: Record<string, Price> = {};

export function priceOf(modelId: string, kind: ModelKind): Price {
  return BY_MODEL[modelId] ?? BY_KIND[kind];
}

export function creditsFor(price: Price, usage: { input_tokens: number; output_tokens: number }): number {
  const raw = usage.input_tokens * price.input_credits_per_1k_tokens + usage.output_tokens * price.output_credits_per_1k_tokens;
  return Math.max(1, Math.ceil(raw / 1000));
}
