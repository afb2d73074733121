import { z } from 'zod';
import { AUTH_ERRORS } from '../shared/schemas.ts';
import { callInfo, defineOperation, principalOf } from '../shared/operation.ts';
import { runBatch } from './batch.ts';
import { ForecastBatchRequest, ForecastBatchResponseBody, ForecastRequest, ForecastResponseBody, LIMITS, type ForecastResponse } from './schemas.ts';
import { planForecast, runForecast, runPlanned } from './service.ts';
import { serialiseJson, type JsonChunks } from '../shared/json.ts';
import { idempotent } from '../idempotency/operation.ts';
import { withDryRun } from './dry-run.ts';
import { parseTimestampsAhead } from './frequency.ts';
import { ForecastQuote, ForecastQuoteRequest, quoteCall, quoteSummary, type ForecastQuoteT } from './quote.ts';

export const FORECAST_ERRORS = [...AUTH_ERRORS, 402, 403, 404, 409, 413, 502, 503, 504] as const;
const ANY_CREDENTIAL = ['session', 'api_key', 'oauth'] as const;

const AIR_PASSENGERS = { target: [112, 118, 132, 129, 121, 135, 148, 148, 136, 119, 104, 118], start: '1949-01-01' };
const FORECAST_EXAMPLE = { model: 'auto-ets', inputs: [AIR_PASSENGERS], parameters: { prediction_length: 6, frequency: 'MS' } };

const forecastSummary = (r: ForecastResponse): string =>
  `Forecast by ${r.model}: ${r.outputs.length} series × ${r.horizon} steps, quantiles [${r.quantile_levels.join(', ')}]; ` +
  `${r.usage.total_tokens} tokens. First series mean: ${JSON.stringify(r.outputs[0]?.mean.slice(0, 5).map((row) => row[0]))}${r.horizon > 5 ? '…' : ''}`;

/** A batch costs one rate-limit point per item (at least 1), whatever the surface. */
export function batchPoints(input: unknown): number {
  const items = (input as { requests?: unknown } | null | undefined)?.requests;
  return Array.isArray(items) ? Math.max(1, items.length) : 1;
}

const QUOTE_EXAMPLE = {
  operation: 'forecast' as const,
  request: { model: 'auto-ets', inputs: [{ target: [1, 2, 3, 4, 5, 6] }], parameters: { prediction_length: 3 } },
};

/** A large `target` is read into typed columns as it is parsed (prepareForecast takes them as they are). */
const TARGET_COLUMNS = { key: 'target', within: 'inputs', maxWidth: LIMITS.maxVariates };

export const forecastOperations = [
  idempotent(
    withDryRun(
      defineOperation({
        id: 'forecast',
        method: 'POST',
        path: '/v1/forecast',
        tags: ['forecasting'],
        summary: 'Forecast time series',
        description:
          'Probabilistic forecast of one or more series with one model. Each input target is the series oldest first, ' +
          'as [[v],[v],…] or [v,v,…]; parameters.prediction_length defaults to 24. Uses credits.',
        input: ForecastRequest,
        output: ForecastResponseBody,
        auth: ANY_CREDENTIAL,
        scope: 'forecast',
        errors: FORECAST_ERRORS,
        spendsCredits: true,
        bodyColumns: TARGET_COLUMNS,
        prepare: parseTimestampsAhead,
        example: { request: FORECAST_EXAMPLE },
        mcpExample: JSON.stringify(FORECAST_EXAMPLE),
        run: ({ deps, caller, input }) => runForecast(deps, principalOf(caller), input, callInfo(caller)),
        runSerialised: ({ deps, caller, input }) =>
          runPlanned(deps, principalOf(caller), planForecast(deps, input), callInfo(caller), serialiseJson, undefined, true),
        summarize: (r) => forecastSummary(r as ForecastResponse),
      }),
      'forecast',
    ),
  ),
  idempotent(
    withDryRun(
      defineOperation({
        id: 'forecastBatch',
        method: 'POST',
        path: '/v1/forecast/batch',
        tags: ['forecasting'],
        summary: 'Forecast a batch of requests',
        description: `Several forecast requests at once (at most ${LIMITS.maxBatch}); each item succeeds or fails on its own. Each item counts as one request against the rate limit.`,
        input: ForecastBatchRequest,
        example: { request: { requests: [FORECAST_EXAMPLE, { ...FORECAST_EXAMPLE, model: 'seasonal-naive' }] } },
        // For MCP the items are typed (a tool's input schema is all a model sees of them).
        mcpInput: z.object({ requests: z.array(ForecastRequest).min(1).describe(`Forecast requests, at most ${LIMITS.maxBatch}.`) }),
        output: ForecastBatchResponseBody,
        auth: ANY_CREDENTIAL,
        scope: 'forecast',
        errors: FORECAST_ERRORS,
        points: batchPoints,
        spendsCredits: true,
        restSource: 'batch',
        bodyColumns: TARGET_COLUMNS,
        prepare: parseTimestampsAhead,
        run: ({ deps, caller, input }) => runBatch(deps, principalOf(caller), input.requests, callInfo(caller), (err, id) => caller.reportError(err, id)),
        runSerialised: async ({ deps, caller, input }) => {
          const out = await runBatch<JsonChunks>(
            deps,
            principalOf(caller),
            input.requests,
            callInfo(caller),
            (err, id) => caller.reportError(err, id),
            serialiseJson,
            true,
          );
          // Each item's size is known from its serialisation: only the envelope's own pieces are measured
          // (measuring every chunk again was 35 ms of one turn for 64 items of 1,000 series).
          const chunks: (string | Uint8Array)[] = [];
          let bytes = 0;
          const own = (text: string) => {
            chunks.push(text);
            bytes += Buffer.byteLength(text);
          };
          own('{"object":"list","data":[');
          out.data.forEach((item, k) => {
            if (k > 0) own(',');
            if (item.ok) {
              own('{"ok":true,"result":');
              for (const c of item.result.chunks) chunks.push(c);
              bytes += item.result.bytes;
              own(',"error":null}');
            } else own(JSON.stringify(item));
          });
          own(']}');
          return { chunks, bytes };
        },
        summarize: (r) => {
          const failed = r.data.filter((d) => !d.ok).length;
          return `Batch of ${r.data.length}: ${r.data.length - failed} succeeded, ${failed} failed.`;
        },
      }),
      'forecastBatch',
    ),
  ),
  defineOperation({
    id: 'quoteForecast',
    method: 'POST',
    path: '/v1/forecast/quote',
    tags: ['forecasting'],
    summary: 'Price a forecast without running it',
    description:
      'Validates a forecast, batch or ensemble request as that call would and answers its tokens, credits, which balance would pay (free or metered) ' +
      'and whether it would be refused now (402, 403, 404, 413) — without running or charging anything. Free; counts one request against the rate limit.',
    input: ForecastQuoteRequest,
    output: ForecastQuote,
    prepare: (input) => parseTimestampsAhead(input.request),
    auth: ANY_CREDENTIAL,
    scope: 'forecast',
    errors: AUTH_ERRORS,
    spendsCredits: false,
    readOnly: true,
    example: { request: QUOTE_EXAMPLE },
    mcpExample: JSON.stringify(QUOTE_EXAMPLE),
    run: ({ deps, caller, input }) => quoteCall(deps, principalOf(caller), input.operation, input.request),
    summarize: (q) => quoteSummary(q as ForecastQuoteT),
  }),
];
