import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyBaseLogger } from 'fastify';
import { z } from 'zod';
import { resolveCredential, type Principal } from '../accounts/credentials.ts';
import { ListQuery, ModelIdParams, ModelList, CatalogModelSchema } from '../catalog/routes.ts';
import type { Deps } from '../deps.ts';
import { EnsembleForecastRequest, EnsembleForecastResponseBody } from '../ensemble/schemas.ts';
import { runEnsemble } from '../ensemble/service.ts';
import { runBatch } from '../forecasting/batch.ts';
import { ForecastBatchRequest, ForecastBatchResponseBody, ForecastRequest, ForecastResponseBody, LIMITS, type ForecastResponse } from '../forecasting/schemas.ts';
import { runForecast } from '../forecasting/service.ts';
import { AppError, ValidationFailure } from '../http/errors.ts';
import { ValidateCredentialRequest, ValidateCredentialResponse } from '../keys/routes.ts';
import { BillingSummary } from '../billing/schemas.ts';
import { billingSummary } from '../billing/service.ts';
import { UsageSummary, UsageWindow } from '../usage/routes.ts';
import { usageSummary } from '../usage/service.ts';

/** What a tool call knows about its HTTP request. */
export interface ToolCallContext {
  principal: Principal;
  /** Request id for metering: the HTTP request id, suffixed when one request carries several calls. */
  nextRequestId(): string;
  log: FastifyBaseLogger;
}

type Structured = Record<string, unknown>;

/**
 * The HTTP API's schema as a tool schema. The API's schemas carry an OpenAPI component id; a root
 * with an id would be emitted as a `$ref`, and MCP wants `type: "object"` at the root. A shallow
 * copy has no id (nested components stay shared `$defs`).
 */
const tool = <S extends z.ZodObject>(schema: S): S => schema.extend({}) as S;

const ok = (structured: object, summary: string): CallToolResult => ({
  content: [{ type: 'text', text: summary }],
  structuredContent: structured as Structured,
});

/**
 * Application errors become tool errors (isError) carrying the same code and status as the HTTP
 * API (402 billing_required, 403, 404, 422 …), so an agent can react to them. Unknown faults stay
 * generic, logged in full.
 */
async function guarded(c: ToolCallContext, tool: string, fn: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await fn();
  } catch (err) {
    let body: Structured;
    if (err instanceof AppError) body = { error: err.message, code: err.code, status: err.status };
    else if (err instanceof ValidationFailure) body = { error: err.message, code: 'validation_error', status: 422, detail: err.detail };
    else {
      c.log.error({ err, tool }, 'MCP tool failed');
      body = { error: 'Internal error', code: 'internal_error', status: 500 };
    }
    return { isError: true, content: [{ type: 'text', text: `${String(body.code)} (${String(body.status)}): ${String(body.error)}` }], structuredContent: body };
  }
}

const forecastSummary = (r: ForecastResponse): string =>
  `Forecast by ${r.model}: ${r.outputs.length} series × ${r.horizon} steps, quantiles [${r.quantile_levels.join(', ')}]; ` +
  `${r.usage.total_tokens} tokens. First series mean: ${JSON.stringify(r.outputs[0]?.mean.slice(0, 5).map((row) => row[0]))}${r.horizon > 5 ? '…' : ''}`;

/**
 * The MCP tools, named by the API's operation ids, with the HTTP API's own schemas and service
 * functions (same credits, 402, access checks; usage source `mcp`).
 */
export function registerTools(server: McpServer, deps: Deps, c: ToolCallContext): void {
  const call = (requestId: string) => ({ requestId, source: 'mcp' as const });
  const spend = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false };
  const read = { readOnlyHint: true, openWorldHint: false };

  server.registerTool(
    'forecast',
    {
      title: 'Forecast time series',
      description:
        'Probabilistic forecast of one or more series with one model (POST /v1/forecast). Each input target is the series oldest first, ' +
        'as [[v],[v],…] or [v,v,…]; parameters.prediction_length defaults to 24. Uses credits.',
      inputSchema: tool(ForecastRequest),
      outputSchema: tool(ForecastResponseBody),
      annotations: spend,
    },
    async (args) => guarded(c, 'forecast', async () => {
      const r = await runForecast(deps, c.principal, args, call(c.nextRequestId()));
      return ok(r, forecastSummary(r));
    }),
  );

  server.registerTool(
    'forecastBatch',
    {
      title: 'Forecast a batch of requests',
      description: `Several forecast requests at once (POST /v1/forecast/batch, at most ${LIMITS.maxBatch}); each item succeeds or fails on its own.`,
      inputSchema: tool(ForecastBatchRequest),
      outputSchema: tool(ForecastBatchResponseBody),
      annotations: spend,
    },
    async (args) => guarded(c, 'forecastBatch', async () => {
      if (args.requests.length > LIMITS.maxBatch) {
        throw new AppError('request_too_large', `A batch holds at most ${LIMITS.maxBatch} requests (got ${args.requests.length})`);
      }
      const r = await runBatch(deps, c.principal, args.requests, call(c.nextRequestId()), (err) => c.log.error({ err }, 'batch item failed unexpectedly'));
      const failed = r.data.filter((d) => !d.ok).length;
      return ok(r, `Batch of ${r.data.length}: ${r.data.length - failed} succeeded, ${failed} failed.`);
    }),
  );

  server.registerTool(
    'forecastEnsemble',
    {
      title: 'Ensemble forecast',
      description: 'Ranks candidate models by a hold-out backtest and blends the top ones (POST /v1/forecast/ensemble). Uses credits.',
      inputSchema: tool(EnsembleForecastRequest),
      outputSchema: tool(EnsembleForecastResponseBody),
      annotations: spend,
    },
    async (args) => guarded(c, 'forecastEnsemble', async () => {
      const r = await runEnsemble(deps, c.principal, args, call(c.nextRequestId()));
      const m = r.ensemble_metadata;
      return ok(r, `Ensemble of ${m.models_in_ensemble.join(', ')} (by ${m.scoring_metric}), ${m.total_cost_credits} credits.`);
    }),
  );

  server.registerTool(
    'listModels',
    {
      title: 'List models',
      description: 'The model catalog (GET /api/models), filtered by q, task, capability, provider, available.',
      inputSchema: tool(ListQuery),
      outputSchema: tool(ModelList),
      annotations: read,
    },
    async (args) => guarded(c, 'listModels', async () => {
      const models = deps.catalog.list({ ...args, available: args.available === undefined ? undefined : args.available === 'true' });
      return ok({ models }, `${models.length} models: ${models.map((m) => `${m.id}${m.available ? '' : ' (unavailable)'}`).join(', ')}`);
    }),
  );

  server.registerTool(
    'getModelById',
    {
      title: 'Get a model',
      description: 'One catalog record (GET /api/models/{modelId}).',
      inputSchema: tool(ModelIdParams),
      outputSchema: tool(CatalogModelSchema),
      annotations: read,
    },
    async (args) => guarded(c, 'getModelById', async () => {
      const m = deps.catalog.get(args.modelId);
      return ok(m, `${m.id} (${m.provider}, ${m.kind}): context ${m.context_length}, ${m.available ? 'available' : `unavailable: ${m.unavailable_reason ?? ''}`}`);
    }),
  );

  server.registerTool(
    'validateCredential',
    {
      title: 'Validate a credential',
      description: 'Checks an API key (api_key), or without one the credential this MCP connection uses (POST /v1/validate).',
      inputSchema: tool(ValidateCredentialRequest),
      outputSchema: tool(ValidateCredentialResponse),
      annotations: read,
    },
    async (args) => guarded(c, 'validateCredential', async () => {
      const p = args.api_key ? await resolveCredential(deps.database.db, args.api_key, deps.clock.now(), deps.credentialResolvers) : c.principal;
      const r = { valid: true, auth_type: p.kind, user: p.user.id, ...(p.kind === 'api_key' ? { key: p.credentialId } : {}) };
      return ok(r, `Valid ${p.kind} credential of user ${p.user.id}.`);
    }),
  );

  server.registerTool(
    'getUsageSummary',
    {
      title: 'Usage summary',
      description: 'Your usage, pre-aggregated: totals, daily, by model, by source, recent events (GET /api/account/usage/summary). start/end are ISO 8601.',
      inputSchema: tool(UsageWindow),
      outputSchema: tool(UsageSummary),
      annotations: read,
    },
    async (args) => guarded(c, 'getUsageSummary', async () => {
      const r = await usageSummary(deps, c.principal, args);
      return ok(r, `Usage ${r.start} to ${r.end}: ${JSON.stringify(r.totals)}`);
    }),
  );

  server.registerTool(
    'getBillingSummary',
    {
      title: 'Billing summary',
      description: 'Free credits granted, used and remaining, billing state, metered usage this period and your rate limit (GET /api/account/billing).',
      inputSchema: tool(z.object({})),
      outputSchema: tool(BillingSummary),
      annotations: read,
    },
    async () => guarded(c, 'getBillingSummary', async () => {
      const r = await billingSummary(deps, c.principal);
      return ok(r, `Billing: ${JSON.stringify(r)}`.slice(0, 500));
    }),
  );
}
