import { FORECAST_ERRORS } from '../forecasting/operations.ts';
import { callInfo, defineOperation, principalOf } from '../shared/operation.ts';
import { serialiseJson } from '../shared/json.ts';
import { runDetectAnomalies } from './anomalies.ts';
import { DetectAnomaliesMcpInput, DetectAnomaliesRequest, DetectAnomaliesResponseBody, type DetectAnomaliesResponse } from './anomaly-schemas.ts';
import { runCrossValidation } from './cross-validation.ts';
import { imputePoints, runImpute } from './impute.ts';
import { ImputeMcpInput, ImputeRequest, ImputeResponseBody, type ImputeResponse } from './impute-schemas.ts';
import { CrossValidationMcpInput, CrossValidationRequest, CrossValidationResponseBody, type CrossValidationResponse } from './schemas.ts';

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
      'Rolling-origin backtest of 1-8 models: n_windows forecasts of prediction_length steps, step_size apart, the last at the end of each series. ' +
      "Returns each window's forecasts and actuals, and sMAPE, MASE, WQL and interval coverage per model. Billed as the forecasts it runs.",
    input: CrossValidationRequest,
    mcpInput: CrossValidationMcpInput,
    output: CrossValidationResponseBody,
    auth: ANY_CREDENTIAL,
    scope: 'forecast',
    errors: FORECAST_ERRORS,
    points: crossValidationPoints,
    spendsCredits: true,
    example: { request: { models: ['auto-ets', 'naive'], inputs: [{ target: [5, 7, 6, 8, 7, 9, 8, 10, 9, 11, 10, 12] }], prediction_length: 2, n_windows: 2 } },
    mcpExample: '{"models":["auto-ets","naive"],"inputs":[{"target":[5,7,6,8,7,9,8,10,9,11,10,12]}],"prediction_length":2,"n_windows":2}',
    run: ({ deps, caller, input }) => runCrossValidation(deps, principalOf(caller), input, callInfo(caller)),
    runSerialised: ({ deps, caller, input }) => runCrossValidation(deps, principalOf(caller), input, callInfo(caller), serialiseJson),
    summarize: (r) => {
      const c = r as CrossValidationResponse;
      const lines = c.results.map((x) => `${x.rank}. ${x.model}: sMAPE ${fmt(x.metrics.smape)}, MASE ${fmt(x.metrics.mase)}, WQL ${fmt(x.metrics.wql)}`);
      return `Cross-validation, ${c.n_windows} window(s) of ${c.prediction_length} steps, ${c.total_cost_credits} credits. ${lines.join('; ')}`;
    },
  }),
  defineOperation({
    id: 'detectAnomalies',
    method: 'POST',
    path: '/v1/detect-anomalies',
    tags: ['forecasting'],
    summary: 'Detect anomalies in time series',
    description:
      "Flags values outside a model's one-step-ahead prediction interval at level % (method forecast), or more than sensitivity rolling standard deviations " +
      'from the mean of the previous window values (method zscore). detection_size scores only the last points. Billed as the fit it needs.',
    input: DetectAnomaliesRequest,
    mcpInput: DetectAnomaliesMcpInput,
    output: DetectAnomaliesResponseBody,
    auth: ANY_CREDENTIAL,
    scope: 'forecast',
    errors: FORECAST_ERRORS,
    spendsCredits: true,
    example: { request: { inputs: [{ target: [10, 11, 10, 12, 11, 10, 45, 11, 12, 10, 11] }], level: 99 } },
    mcpExample: '{"inputs":[{"target":[10,11,10,12,11,10,45,11,12,10,11]}],"level":99}',
    run: ({ deps, caller, input }) => runDetectAnomalies(deps, principalOf(caller), input, callInfo(caller)),
    runSerialised: ({ deps, caller, input }) => runDetectAnomalies(deps, principalOf(caller), input, callInfo(caller), serialiseJson),
    summarize: (r) => {
      const d = r as DetectAnomaliesResponse;
      const where = d.outputs.flatMap((o, i) =>
        o.anomaly.flatMap((row, k) => row.flatMap((a, v) => (a ? [`inputs[${i}] step ${o.start_index + k}${row.length > 1 ? ` variate ${v}` : ''}`] : []))),
      );
      return `${d.anomaly_count} anomal${d.anomaly_count === 1 ? 'y' : 'ies'} (${d.method}${d.model ? ` ${d.model}` : ''}), ${d.cost_credits} credits${where.length > 0 ? `: ${where.slice(0, 20).join(', ')}${where.length > 20 ? ', …' : ''}` : ''}.`;
    },
  }),
  defineOperation({
    id: 'impute',
    method: 'POST',
    path: '/v1/impute',
    tags: ['forecasting'],
    summary: 'Fill missing values',
    description:
      'Fills the nulls of each series: each gap is forecast from the values before it and backcast from those after it, blended across the gap ' +
      '(method model), or interpolated linearly (method linear). Returns the filled series and which points were filled. Billed as the fits it needs.',
    input: ImputeRequest,
    mcpInput: ImputeMcpInput,
    output: ImputeResponseBody,
    auth: ANY_CREDENTIAL,
    scope: 'forecast',
    errors: FORECAST_ERRORS,
    points: imputePoints,
    spendsCredits: true,
    example: { request: { inputs: [{ target: [3, 4, 5, null, null, 8, 9, 10, 11, 12] }], model: 'drift' } },
    mcpExample: '{"inputs":[{"target":[3,4,5,null,null,8,9,10,11,12]}],"model":"drift"}',
    run: ({ deps, caller, input }) => runImpute(deps, principalOf(caller), input, callInfo(caller)),
    runSerialised: ({ deps, caller, input }) => runImpute(deps, principalOf(caller), input, callInfo(caller), serialiseJson),
    summarize: (r) => {
      const d = r as ImputeResponse;
      const n = d.outputs.reduce((a, o) => a + o.filled_count, 0);
      return `Filled ${n} value${n === 1 ? '' : 's'} (${d.method}${d.model ? ` ${d.model}` : ''}), ${d.cost_credits} credits.`;
    },
  }),
];
