import type { FastifyError, FastifyReply } from 'fastify';
import { z } from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { principalOf } from '../http/auth.ts';
import { clientLeftSignal } from '../http/client-signal.ts';
import type { Deps } from '../deps-types.ts';
import { randomUUID } from 'node:crypto';
import { AppError, reportError, ValidationFailure } from '../shared/errors.ts';
import { findJsonProblemSliced } from '../shared/json.ts';
import { BodyParseError } from '../http/validation.ts';
import { operations } from '../operations.ts';
import type { ZApp } from '../http/types.ts';
import { allowCrossOrigin } from '../oauth/cors.ts';
import { MCP_PATH, mcpResourceMetadataUrl } from '../oauth/endpoints.ts';
import { MCP_SCOPE } from '../oauth/schemas.ts';
import { errorText, listTools, registerTools } from './tools.ts';
import { ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';

const SERVER_INFO = { name: 'tsfm-forecasting', version: '0.1.0' };

/** What a model reads first (MCP `initialize` → instructions). */
/** OpenAPI only (the MCP SDK parses the body itself): the shape of a JSON-RPC message; `params` is whatever the method takes (tools/list gives each tool's schema). */
const JsonRpcMessage = z
  .object({
    jsonrpc: z.literal('2.0').describe('JSON-RPC version.'),
    id: z.union([z.string(), z.number().int()]).optional().describe('Request id; absent on notifications.'),
    method: z.string().describe('e.g. initialize, tools/list, tools/call.'),
    params: z.record(z.string(), z.unknown()).optional().describe('The method’s parameters (tools/call: `name` and `arguments`).'),
  })
  .meta({ id: 'JsonRpcMessage' });

export const MCP_INSTRUCTIONS = [
  'Probabilistic time-series forecasts. Call listModels to pick a model id (auto-ets, theta and combo are good defaults; naive for a baseline),',
  'then forecast with inputs[].target as the numbers oldest first and parameters.prediction_length as the horizon;',
  'set parameters.frequency (e.g. MS, D, H) and inputs[].start, or send inputs[].timestamps (one ISO time per value; the frequency is inferred), to get timestamps and seasonality.',
  'forecastBatch runs up to 64 requests; forecastEnsemble backtests several models and blends the best.',
  'Forecasts use credits (see getBillingSummary); results are JSON in the text. Errors say code, HTTP status and the field at fault.',
].join(' ');

/**
 * Rate-limit points of an MCP HTTP request itself: one per JSON-RPC message except tool calls,
 * which count their operation's declared points when they run (src/mcp/tools.ts).
 */
export function mcpRequestPoints(body: unknown): number {
  const messages = Array.isArray(body) ? body : [body];
  return messages.filter((m) => (m as { method?: unknown } | null)?.method !== 'tools/call').length;
}

type JsonRpcReply = { status: number; body: Record<string, unknown> };

const rpcId = (m: unknown): string | number | null => {
  const id = (m as { id?: unknown } | null)?.id;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
};

/**
 * What the MCP endpoint refuses before the SDK reads a message, after the credential is checked:
 * - a JSON-RPC batch (an array): MCP removed batching in protocol 2025-06-18, and a batch would
 *   multiply what one HTTP request may ask for (each call has MCP_MAX_OUTPUT_VALUES of answer);
 * - what no database can store (NUL, lone surrogates), nesting deeper than MAX_JSON_DEPTH or an
 *   object of too many members (the checks every REST body gets in src/http/app.ts). In a tool's
 *   arguments it is that tool's error result (isError, the field at fault), as for any bad argument;
 *   elsewhere a JSON-RPC Invalid Request.
 */
export async function refuseBody(body: unknown, toolNames: ReadonlySet<string>): Promise<JsonRpcReply | null> {
  if (Array.isArray(body)) {
    return {
      status: 400,
      body: {
        jsonrpc: '2.0',
        error: { code: -32600, message: 'Invalid Request: JSON-RPC batches are not supported (MCP 2025-06-18 removed them); send one message per POST' },
        id: null,
      },
    };
  }
  const problem = await findJsonProblemSliced(body);
  if (!problem) return invalidToolCall(body, toolNames);
  const [p0, p1, ...rest] = problem.path;
  const msg = body as { method?: unknown; params?: { name?: unknown } };
  if (msg.method === 'tools/call' && p0 === 'params' && p1 === 'arguments' && rpcId(body) !== null) {
    const report = reportError(new ValidationFailure([{ path: rest, msg: problem.msg, type: problem.type }]), []);
    const text = report ? errorText(report) : problem.msg;
    return { status: 200, body: { jsonrpc: '2.0', id: rpcId(body), result: { isError: true, content: [{ type: 'text', text }] } } };
  }
  const where = problem.path.join('.') || '(message)';
  return { status: 400, body: { jsonrpc: '2.0', error: { code: -32600, message: `Invalid Request: ${where}: ${problem.msg}` }, id: rpcId(body) } };
}

/**
 * A tools/call the SDK would answer badly: with no params or non-object arguments it answers
 * -32603 Internal error with a dump of its schema issues, and an unknown tool as a tool result.
 * Both are the caller's mistakes, JSON-RPC -32602 Invalid params (MCP 2025-06-18, "Error Handling").
 */
function invalidToolCall(body: unknown, toolNames: ReadonlySet<string>): JsonRpcReply | null {
  const msg = body as { method?: unknown; params?: unknown } | null;
  if (msg?.method !== 'tools/call' || rpcId(body) === null) return null;
  const invalid = (message: string): JsonRpcReply => ({ status: 200, body: { jsonrpc: '2.0', id: rpcId(body), error: { code: -32602, message } } });
  const params = msg.params;
  if (!params || typeof params !== 'object' || Array.isArray(params)) return invalid('Invalid params: tools/call takes params {name, arguments}');
  const { name, arguments: args } = params as { name?: unknown; arguments?: unknown };
  if (typeof name !== 'string') return invalid('Invalid params: params.name must be the name of a tool (tools/list names them)');
  if (!toolNames.has(name)) return invalid(`Unknown tool '${name.slice(0, 100)}': tools/list names the tools`);
  if (args !== undefined && (args === null || typeof args !== 'object' || Array.isArray(args))) {
    return invalid('Invalid params: params.arguments must be an object of the tool’s arguments');
  }
  return null;
}

/**
 * The hosted MCP endpoint: Streamable HTTP, stateless. Every POST gets a fresh server and
 * transport (no session id, JSON responses), so any instance can answer any request.
 * Credentials: `Authorization: Bearer` with an OAuth access token, an API key or a session token;
 * the browser cookie is not accepted here.
 */
export function registerMcpRoutes(app: ZApp, deps: Deps): void {
  // One JSON Schema validator (an Ajv instance, used only for elicitation) for every request's short-lived
  // server: building one per request was ~2 ms of the event loop's time per MCP call.
  const jsonSchemaValidator = new AjvJsonSchemaValidator();
  const metadataUrl = mcpResourceMetadataUrl(deps.config);
  const toolNames: ReadonlySet<string> = new Set(operations.map((op) => op.id));
  allowCrossOrigin(app, [MCP_PATH]);

  const unauthorized = (reply: FastifyReply, code: 'missing_credential' | 'invalid_credential', message: string) => {
    const params = [`resource_metadata="${metadataUrl}"`, `scope="${MCP_SCOPE}"`];
    if (code === 'invalid_credential') params.unshift('error="invalid_token"', `error_description="${message.replaceAll('"', "'")}"`);
    return reply
      .code(401)
      .header('www-authenticate', `Bearer ${params.join(', ')}`)
      .send({ error: message, code, request_id: reply.request.id });
  };

  app.post(MCP_PATH, {
    bodyLimit: deps.config.mcpBodyLimitBytes,
    // The shared auth hook resolves the Bearer credential (so rate limits and other per-account
    // hooks see the principal); its failures are turned into MCP's 401 below.
    config: { auth: 'user', acceptsOAuthTokens: true, crossOrigin: true, points: (req) => mcpRequestPoints(req.body), openapiBody: JsonRpcMessage },
    schema: {
      operationId: 'postMcp',
      example: { request: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'listModels', arguments: { task: 'forecast' } } } },
      summary: 'MCP endpoint',
      tags: ['mcp'],
      security: [{ bearer: [] }],
      description:
        'MCP Streamable HTTP endpoint (JSON-RPC). Tools are named by the operation ids of this API. ' +
        'A body over MCP_BODY_LIMIT_BYTES (2 MiB by default) is answered with HTTP 413 and a JSON-RPC error (code -32000); larger data go through the REST API.',
    },
    errorHandler: (err, req, reply) => {
      if (err instanceof AppError) {
        if (err.code === 'missing_credential' || err.code === 'invalid_credential') return unauthorized(reply, err.code, err.message);
        // Refusals before any message is read (429 rate_limited, 403 …): JSON-RPC, with the API's code and status as data.
        return reply
          .code(err.status)
          .headers(err.headers)
          .send({ jsonrpc: '2.0', error: { code: -32000, message: err.message, data: { code: err.code, status: err.status } }, id: null });
      }
      // A body that is not JSON is a JSON-RPC parse error, not a REST validation error.
      // (A compressed body never gets here: src/http/app.ts refuses it with 415 before parsing, answered above.)
      if (err instanceof BodyParseError) {
        return reply.code(400).send({ jsonrpc: '2.0', error: { code: -32700, message: `Parse error: the body must be JSON (${err.detail})` }, id: null });
      }
      if ((err as FastifyError).code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
        return reply.code(415).send({ jsonrpc: '2.0', error: { code: -32000, message: 'Unsupported Media Type: send application/json' }, id: null });
      }
      if ((err as FastifyError).code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
        return reply.code(413).send({
          jsonrpc: '2.0',
          error: {
            code: -32000,
            message: `Request body is too large: at most ${deps.config.mcpBodyLimitBytes} bytes over MCP (MCP_BODY_LIMIT_BYTES); send larger data through the REST API or give ingestSeries a url`,
          },
          id: null,
        });
      }
      req.log.error({ err }, 'MCP request failed');
      return reply.code(500).send({ jsonrpc: '2.0', error: { code: -32603, message: `Internal error (request id ${req.id})` }, id: null });
    },
    handler: async (req, reply) => {
      // Bearer only: the browser's session cookie does not open the MCP endpoint.
      if (!req.headers.authorization) return unauthorized(reply, 'missing_credential', 'A credential is required: send "Authorization: Bearer <token>"');
      const who = principalOf(req);
      const refusal = await refuseBody(req.body, toolNames);
      if (refusal) return reply.code(refusal.status).send(refusal.body);

      const server = new McpServer(SERVER_INFO, { capabilities: { tools: {} }, instructions: MCP_INSTRUCTIONS, jsonSchemaValidator });
      registerTools(
        server,
        deps,
        {
          principal: who,
          // Unique per call even when a client repeats its x-request-id, and under the request id
          // (costs by request id cover every call; batch items add `:<k>` below the call's id).
          nextRequestId: () => `${req.id}:mcp_${randomUUID().replaceAll('-', '').slice(0, 16)}`,
          log: req.log,
          signal: clientLeftSignal(reply.raw),
        },
        operations,
      );
      // Registering tools claims `listChanged`; a stateless endpoint never notifies, so say so.
      server.server.registerCapabilities({ tools: { listChanged: false } });
      server.server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: listTools(operations) }));
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      await server.connect(transport);
      // The transport writes the response itself; carry over the headers set so far (request id, CORS).
      for (const [k, v] of Object.entries(reply.getHeaders())) if (v !== undefined) reply.raw.setHeader(k, v as string);
      reply.hijack();
      reply.raw.on('close', () => {
        void transport.close();
        void server.close();
      });
      await transport.handleRequest(req.raw, reply.raw, req.body);
    },
  });

  // Stateless: no server-initiated stream and no session to delete.
  for (const method of ['GET', 'DELETE'] as const) {
    app.route({
      method,
      url: MCP_PATH,
      schema: { hide: true },
      config: { methodNotAllowed: true },
      handler: async (_req, reply) =>
        reply
          .code(405)
          .header('allow', 'POST')
          .send({ jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed: this MCP endpoint is stateless; POST JSON-RPC messages' }, id: null }),
    });
  }
}
