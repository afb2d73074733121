import type { z } from 'zod';
import type { Principal } from '../accounts/credentials.ts';
import type { Deps } from '../deps-types.ts';
import type { UsageSource } from '../forecasting/metering.ts';
import type { Receipt } from './receipt.ts';
import { AppError, type ErrorReport } from './errors.ts';
import type { JsonChunks } from './json.ts';
import type { ColumnsOption } from './json-sliced.ts';
import type { Scope } from './scopes.ts';

/** The credential kinds an operation accepts (every boundary also has its own rules on top). */
export type CredentialKind = Principal['kind'];

/** What the boundary (REST route, MCP tool, …) tells the service about the call. */
export interface Caller {
  /** The authenticated caller; null when a public operation is called without a credential. */
  principal: Principal | null;
  /** The raw credential presented to the boundary, for operations that check one themselves. */
  credential(): string | null;
  /** Metering id of this call; unique per call (an MCP request may carry several calls). */
  requestId: string;
  /** Where usage is recorded as coming from: chosen by the boundary, never by the service. */
  source: UsageSource;
  /** The boundary's error mapper, for answers that carry errors as data (batch items). */
  reportError(err: unknown, requestId: string): ErrorReport;
  /** The client's idempotency key (REST `Idempotency-Key` header, MCP `idempotency_key`), already checked for shape. */
  idempotencyKey?: string | null;
  /** What the call was charged, filled by the service and read by the boundary (cost headers). */
  receipt?: Receipt;
  /**
   * Aborted when the client leaves before the answer is sent (REST: the response's connection
   * closed; MCP: the HTTP request of the tool call). Metered services pass it to the engine and
   * do not commit a call whose client left (src/shared/client-gone.ts, ADR 0040).
   */
  signal?: AbortSignal;
}

/**
 * A worked example of a call (the OpenAPI document shows it; test/http/openapi-quality.test.ts
 * checks it against the schemas): the request, the answer, or both. Typed by the schemas, so an
 * example that no longer fits is a type error.
 */
export type OperationExample<I extends z.ZodObject, O extends z.ZodType> =
  | { request: z.input<I>; response?: z.input<O> }
  | { request?: z.input<I>; response: z.input<O> };

export interface OperationArgs<I> {
  deps: Deps;
  caller: Caller;
  input: I;
}

/**
 * One operation, declared once: REST routes, MCP tools and the OpenAPI document are loops over
 * these declarations, so a rule written here (auth, rate-limit points, source) reaches every surface.
 */
export interface OperationFields<I extends z.ZodObject, O extends z.ZodType> {
  /** The operation id of the API contract; also the MCP tool name. */
  id: string;
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /**
   * Fastify path pattern (`/api/models/:modelId`). A GET's or DELETE's input is its path parameters
   * when it has any, else its query; a POST's or PATCH's is its body, plus its path parameters when
   * it has any (`PATCH /v1/schedules/:id`: `id` from the path, the rest from the body).
   */
  path: string;
  tags: string[];
  /** Short title (OpenAPI summary, MCP tool title). */
  summary: string;
  /** What it does, its limits and what it costs (OpenAPI description, MCP tool description). */
  description: string;
  /** Required: every operation is documented with a worked example. */
  example: OperationExample<I, O>;
  input: I;
  /**
   * The MCP tool's input schema when it differs from REST's (a batch's items typed for the model,
   * where REST validates them one by one). It must parse into what `input` parses into.
   */
  mcpInput?: z.ZodObject;
  output: O;
  /** REST: the body may be absent (it is then read as `{}`). */
  optionalBody?: boolean;
  /** 'public', or the credential kinds that may call the operation. */
  auth: 'public' | readonly CredentialKind[];
  /** A public operation that reads the credential of the call when one is sent (OpenAPI: bearer or none). */
  readsCredential?: boolean;
  /**
   * The scope an API key or OAuth token needs (sessions hold every scope; ADR 0016). Checked by
   * both boundaries before the call: the REST auth hook and the MCP adapter.
   */
  scope?: Scope;
  /** REST error statuses for the OpenAPI document (200 is the output). */
  errors: readonly number[];
  /**
   * Rate-limit points of one call (default 1). It receives the input before validation (REST
   * counts requests before validating them, so invalid requests count too): read it defensively.
   */
  points?: (input: unknown) => number;
  /** Uses credits (MCP annotations: not read-only). */
  spendsCredits: boolean;
  /**
   * A POST that changes nothing (a quote, a check): MCP `readOnlyHint`. Without it an operation is
   * read-only when it is a GET that spends no credits; every other one changes state (src/mcp/tools.ts,
   * `toolAnnotations`), so hosts ask before calling it.
   */
  readOnly?: boolean;
  /** Fetches URLs the caller names, now or later (ingest, schedules): MCP `openWorldHint`. */
  openWorld?: boolean;
  /**
   * Accepts an idempotency key (REST `Idempotency-Key` header, MCP `idempotency_key` argument):
   * set by `idempotent()` (src/idempotency/operation.ts), which also wraps `run`/`runSerialised`.
   */
  idempotent?: boolean;
  /**
   * REST: large arrays under these member names of a large body are read by the sliced parser into
   * typed columns (src/shared/numeric-columns.ts) when they hold only numbers and nulls (rows of
   * 1..maxWidth of them); the operation must accept a NumericColumns there (prepareForecast does).
   */
  bodyColumns?: ColumnsOption;
  /** The usage source a REST call records (default `api`); MCP calls record `mcp`. */
  restSource?: UsageSource;
  /**
   * Runs before `run` / `runSerialised` on every boundary (REST, MCP, the CLI through REST): work on
   * the validated input that must not be one turn of the event loop, e.g. parsing a request's large
   * timestamp arrays ahead in slices (parseTimestampsAhead) before its synchronous planning.
   */
  prepare?(input: z.output<I>): Promise<void>;
  run(args: OperationArgs<z.output<I>>): Promise<z.input<O>>;
  /**
   * REST only, for answers that can be large (forecasts): runs the call and returns the answer
   * already serialised (in slices that yield to the event loop), so that the debit happens after
   * serialisation and the adapter streams the chunks. Same output as `run`.
   */
  runSerialised?(args: OperationArgs<z.output<I>>): Promise<JsonChunks>;
  /** A worked example of the MCP tool's arguments (compact JSON), shown in its description. */
  mcpExample?: string;
  /** One line of text describing a result (MCP hosts that show text only). */
  summarize(output: z.input<O>): string;
}

/**
 * A declaration: an operation that spends credits must name the scope a key needs for it (ADR 0037),
 * or a key given only usage:read could spend the account's credits.
 */
export type OperationDef<I extends z.ZodObject, O extends z.ZodType> = OperationFields<I, O> &
  ({ spendsCredits: true; scope: Scope } | { spendsCredits: false });

/** A declaration with its types erased, so that lists of different operations can be looped over. */
export interface Operation extends Omit<OperationFields<z.ZodObject, z.ZodType>, 'run' | 'runSerialised' | 'summarize' | 'example'> {
  example: { request?: unknown; response?: unknown };
  /** `input` must already be validated against `input` (both boundaries validate before calling). */
  run(args: OperationArgs<unknown>): Promise<unknown>;
  runSerialised?(args: OperationArgs<unknown>): Promise<JsonChunks>;
  summarize(output: unknown): string;
}

export function defineOperation<I extends z.ZodObject, O extends z.ZodType>(def: OperationDef<I, O>): Operation {
  // The type says so too; this catches a declaration assembled around it (a spread, a cast).
  const declared: OperationFields<I, O> = def;
  if (declared.spendsCredits && !declared.scope) throw new Error(`Operation ${declared.id} spends credits but declares no scope (ADR 0037)`);
  const { runSerialised, prepare } = def;
  const ready = async (input: unknown): Promise<z.output<I>> => {
    if (prepare) await prepare(input as z.output<I>);
    return input as z.output<I>;
  };
  return {
    ...def,
    run: async (args) => def.run({ ...args, input: await ready(args.input) }),
    ...(runSerialised ? { runSerialised: async (args: OperationArgs<unknown>) => runSerialised({ ...args, input: await ready(args.input) }) } : {}),
    summarize: (output) => def.summarize(output as z.input<O>),
  };
}

/** The caller of an operation that requires a credential (the boundaries check it before calling). */
export function principalOf(caller: Caller): Principal {
  if (!caller.principal) throw new AppError('missing_credential', 'A credential is required');
  return caller.principal;
}

/** What a service needs of the caller to meter a call. */
export function callInfo(caller: Caller): { requestId: string; source: UsageSource; receipt?: Receipt; signal?: AbortSignal } {
  return {
    requestId: caller.requestId,
    source: caller.source,
    ...(caller.receipt ? { receipt: caller.receipt } : {}),
    ...(caller.signal ? { signal: caller.signal } : {}),
  };
}

/** Rate-limit points of a call to `op` with `input`: at least 1. */
export function pointsOf(op: Pick<Operation, 'points'>, input: unknown): number {
  return Math.max(1, op.points?.(input) ?? 1);
}
