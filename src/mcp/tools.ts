import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult, Tool, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { leanToolSchema } from './schema.ts';
import type { FastifyBaseLogger } from 'fastify';
import { z } from 'zod';
import type { Principal } from '../accounts/credentials.ts';
import type { Deps } from '../deps-types.ts';
import { spendPoints } from '../ratelimit/limiter.ts';
import { AppError, type ErrorReport, reportError } from '../shared/errors.ts';
import { pointsOf, type Caller, type Operation } from '../shared/operation.ts';
import { requireScope } from '../shared/scopes.ts';
import { Receipt } from '../shared/receipt.ts';
import { IdempotencyKey } from '../shared/schemas.ts';
import { jsonText } from '../shared/json.ts';

/** What a tool call knows about its HTTP request. */
export interface ToolCallContext {
  principal: Principal;
  /** Metering id of the next tool call: unique per call, under the HTTP request id. */
  nextRequestId(): string;
  log: FastifyBaseLogger;
  /** Aborted when the HTTP request carrying the tool calls is closed before its answer: the calls stop, uncharged. */
  signal?: AbortSignal;
}

type Structured = Record<string, unknown>;

/**
 * An error result as text only: code, status, message and the fields at fault. No structuredContent:
 * MCP clients validate structured content against the tool's output schema, and an error body does
 * not match it, which hides the message behind "does not match the output schema".
 */
export function errorText(body: ErrorReport): string {
  const lines = [`Error ${body.code} (HTTP ${body.status}): ${body.error}`];
  for (const d of body.detail ?? []) lines.push(`- ${d.loc.join('.') || '(arguments)'}: ${d.msg}`);
  return lines.join('\n');
}

/**
 * The HTTP API's schema as a tool schema. The API's schemas carry an OpenAPI component id; a root
 * with an id would be emitted as a `$ref`, and MCP wants `type: "object"` at the root. A shallow
 * copy has no id (nested components stay shared `$defs`).
 */
const tool = <S extends z.ZodObject>(schema: S): S => schema.extend({}) as S;

/** The tool argument of idempotent operations (REST sends the Idempotency-Key header instead). */
const IDEMPOTENCY_ARG = {
  // The pattern is checked, not advertised (tools/list stays small).
  idempotency_key: z
    .string()
    .max(255)
    .refine((v) => IdempotencyKey.safeParse(v).success, 'Use 1 to 255 printable ASCII characters (e.g. a UUID)')
    .optional()
    .describe('For safe retries: the same key and arguments again return the first answer, charged once.'),
};

/** The tool's input schema: the operation's, plus `idempotency_key` when the operation takes one. */
const toolInput = (op: Operation, schema: z.ZodObject): z.ZodObject => (op.idempotent ? schema.extend(IDEMPOTENCY_ARG) : tool(schema));

/** What a credit-spending call was charged, in the result's `_meta` and one line of its text. */
function receiptMeta(r: Receipt): { meta: Record<string, unknown>; line: string } {
  const meta: Record<string, unknown> = { 'tsfm/credits_charged': r.credits, 'tsfm/request_cost_nano_usd': r.costNanoUsd };
  if (r.creditsRemaining !== null) meta['tsfm/credits_remaining'] = r.creditsRemaining;
  if (r.replayed) meta['tsfm/idempotent_replayed'] = true;
  const left = r.creditsRemaining !== null ? `, ${r.creditsRemaining} free credits left` : '';
  return { meta, line: r.replayed ? `Idempotent replay of an earlier call: charged 0 credits${left}.` : `Charged ${r.credits} credits${left}.` };
}

/**
 * The MCP boundary's one error mapper: application errors keep the HTTP API's code and status
 * (402 billing_required, 403, 404, 422 …) so an agent can react to them; validation paths are
 * the tool argument paths (no `body` prefix). Unknown faults stay generic, logged in full.
 */
export function mcpErrorReport(err: unknown, log: FastifyBaseLogger, what: Record<string, unknown>): ErrorReport {
  const known = reportError(err, []);
  if (known) return known;
  log.error({ err, ...what }, 'MCP tool failed');
  return { error: 'Internal error', code: 'internal_error', status: 500 };
}

/** tools/list, with lean input schemas (src/mcp/schema.ts); calls are still validated by the SDK against the full zod schemas. */
export function listTools(ops: readonly Operation[]): Tool[] {
  return ops.map((op) => ({
    name: op.id,
    title: op.summary,
    description: toolDescription(op),
    inputSchema: leanToolSchema(toolInput(op, op.mcpInput ?? op.input)) as Tool['inputSchema'],
    annotations: toolAnnotations(op),
  }));
}

function toolDescription(op: Operation): string {
  return `${op.description} (${op.method} ${op.path.replace(/:(\w+)/g, '{$1}')})${op.mcpExample ? ` Example arguments: ${op.mcpExample}` : ''}`;
}

/**
 * A tool's MCP annotations, from its declaration: read-only when it spends no credits and is a GET
 * or declared `readOnly` (hosts may call those without asking); every other tool changes state, a
 * DELETE destructively. `openWorld` declarations fetch URLs the caller names.
 */
export function toolAnnotations(op: Pick<Operation, 'method' | 'spendsCredits' | 'readOnly' | 'openWorld'>): ToolAnnotations {
  const openWorldHint = op.openWorld === true;
  if (!op.spendsCredits && (op.method === 'GET' || op.readOnly === true)) return { readOnlyHint: true, openWorldHint };
  return {
    readOnlyHint: false,
    destructiveHint: op.method === 'DELETE',
    // The same arguments again change nothing more: a DELETE, or a PATCH that sets fields.
    idempotentHint: op.method === 'DELETE' || op.method === 'PATCH',
    openWorldHint,
  };
}

/**
 * The MCP adapter: every declared operation becomes a tool named by its operation id, with the
 * HTTP API's own schemas and service call (same credits, 402, access checks; usage source `mcp`).
 * Each call counts its declared rate-limit points against the account (a batch counts its items).
 */
export function registerTools(server: McpServer, appDeps: Deps, c: ToolCallContext, ops: readonly Operation[]): void {
  // Tool answers are bounded by MCP_MAX_OUTPUT_VALUES (413 beyond, before any hold): the SDK writes the whole answer at once.
  const deps: Deps = {
    ...appDeps,
    config: { ...appDeps.config, forecast: { ...appDeps.config.forecast, maxOutputValues: appDeps.config.forecast.mcpMaxOutputValues } },
  };
  for (const op of ops) {
    server.registerTool(
      op.id,
      {
        title: op.summary,
        description: toolDescription(op),
        // Validation uses the REST input (a batch's items are checked one by one, so one bad item
        // fails alone); tools/list shows the typed `mcpInput` (listTools above).
        inputSchema: toolInput(op, op.input),
        // No outputSchema: results are JSON in the text block (and structuredContent), with the
        // shapes of the HTTP API's responses (/openapi.json). Output schemas made tools/list four
        // times larger for no gain to a model reading the text.
        annotations: toolAnnotations(op),
      },
      async (args: unknown): Promise<CallToolResult> => {
        try {
          if (op.auth !== 'public' && !op.auth.includes(c.principal.kind)) {
            throw new AppError('forbidden', `${op.id} does not accept ${c.principal.kind} credentials`);
          }
          if (op.scope) requireScope(c.principal, op.scope);
          await spendPoints(deps.rateLimiter, c.principal, pointsOf(op, args));
          const { idempotency_key: key, ...input } = args as Record<string, unknown>;
          const receipt = new Receipt();
          const caller: Caller = {
            principal: c.principal,
            credential: () => null,
            requestId: c.nextRequestId(),
            source: 'mcp',
            reportError: (err, id) => mcpErrorReport(err, c.log, { tool: op.id, requestId: id }),
            idempotencyKey: op.idempotent && typeof key === 'string' ? key : null,
            receipt,
            ...(c.signal ? { signal: c.signal } : {}),
          };
          const opArgs = { deps, caller, input: op.idempotent ? input : args };
          // The numbers are in the text too (hosts that show only text): a summary line, then the JSON.
          if (!op.spendsCredits) {
            const out = await op.run(opArgs);
            return { content: [{ type: 'text', text: `${op.summarize(out)}\n${JSON.stringify(out)}` }], structuredContent: out as Structured };
          }
          // A credit-spending answer is serialised before the debit, as over REST: one that cannot be written costs nothing.
          let json: string;
          let out: unknown;
          if (op.runSerialised) {
            json = jsonText(await op.runSerialised(opArgs));
            out = JSON.parse(json);
          } else {
            out = await op.run(opArgs);
            json = JSON.stringify(out);
          }
          const cost = receiptMeta(receipt);
          return {
            content: [{ type: 'text', text: `${op.summarize(out)} ${cost.line}\n${json}` }],
            structuredContent: out as Structured,
            _meta: cost.meta,
          };
        } catch (err) {
          return { isError: true, content: [{ type: 'text', text: errorText(mcpErrorReport(err, c.log, { tool: op.id })) }] };
        }
      },
    );
  }
}
