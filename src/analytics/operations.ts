import { FORECAST_ERRORS } from '../forecasting/operations.ts';
import { defineOperation, principalOf } from '../shared/operation.ts';
import { runCrossValidation } from './cross-validation.ts';
import { CrossValidationRequest, CrossValidationResponseBody, type CrossValidationResponse } from './schemas.ts';

const ANY_CREDENTIAL = ['session', 'api_key', 'oauth'] as const;

const count = (x: unknown, fallback: number): number => (typeof x === 'number' && Number.isInteger(x) && x > 0 ? x : fallback);

/** Rate-limit points of a cross-validation: its model runs (windows × models), read defensively before validation. */
export function crossValidationPoints(input: unknown): number {
  const body = (input ?? {}) as { models?: unknown; n_windows?: unknown };
  const models = Array.isArray(body.models) ? Math.max(1, body.models.length) : 1;
  return models * Math.min(count(body.n_windows, 3), 1000);
}

const fmt = (x: number | null): string => (x === null ? 'n/a' : x.toFixed(3));

export const analyticsOperations = [
  defineOperation({
    id: 'crossValidate',
    method: 'POST',
    path: '/v1/cross-validation',
    tags: ['forecasting'],
    summary: 'Cross-validate models (rolling-origin backtest)',
    description:
      'Rolling-origin backtest: n_windows forecasts of prediction_length steps per model, step_size apart, the last ending at the end of each series; ' +
      "returns each window's forecasts and actuals and sMAPE, MASE, WQL and interval coverage per model. Each window × model is billed as the forecast it runs. Uses credits.",
    input: CrossValidationRequest,
    output: CrossValidationResponseBody,
    auth: ANY_CREDENTIAL,
    errors: FORECAST_ERRORS,
    points: crossValidationPoints,
    spendsCredits: true,
    mcpExample:
      '{"models":["auto-ets","naive"],"inputs":[{"target":[112,118,132,129,121,135,148,148,136,119,104,118,115,126,141,135,125,149,170,170,158,133,114,140]}],"prediction_length":3,"n_windows":2}',
    run: ({ deps, caller, input }) => runCrossValidation(deps, principalOf(caller), input, { requestId: caller.requestId, source: caller.source }),
    summarize: (r) => {
      const c = r as CrossValidationResponse;
      const lines = c.results.map((x) => `${x.rank}. ${x.model}: sMAPE ${fmt(x.metrics.smape)}, MASE ${fmt(x.metrics.mase)}, WQL ${fmt(x.metrics.wql)}`);
      return `Cross-validation, ${c.n_windows} window(s) of ${c.prediction_length} steps, ${c.total_cost_credits} credits. ${lines.join('; ')}`;
    },
  }),
];
