import type { z } from 'zod';
import { suggestField } from './suggest.ts';

type ZodIssue = z.core.$ZodIssue;

/**
 * The closed list of application error codes and the one table from code to HTTP status.
 * Services throw AppError; each boundary (REST, OAuth, MCP) maps it to its own wire format.
 */
export const ERROR_STATUS = {
  missing_credential: 400,
  invalid_argument: 400,
  request_error: 400,
  invalid_credential: 401,
  invalid_credentials: 401,
  billing_required: 402,
  key_budget_exceeded: 402,
  no_model_access: 403,
  model_access_denied: 403,
  forbidden: 403,
  key_model_not_allowed: 403,
  not_found: 404,
  model_not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  conflict: 409,
  model_not_installed: 409,
  idempotency_in_progress: 409,
  payload_too_large: 413,
  request_too_large: 413,
  uri_too_long: 414,
  unsupported_media_type: 415,
  request_rejected: 422,
  idempotency_mismatch: 422,
  validation_error: 422,
  rate_limit_exceeded: 429,
  headers_too_large: 431,
  internal_error: 500,
  grpc_error: 502,
  upstream_grpc_error: 502,
  upstream_empty: 502,
  upstream_unavailable: 503,
  upstream_timeout: 504,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;
export const ERROR_CODES = Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]];

/** Why a code is answered and what the caller does about it: /docs/errors and the OpenAPI responses are made from this. */
export interface ErrorHelp {
  cause: string;
  fix: string;
}

/** One entry per code (a new code without one is a type error), so the error reference cannot drift from the list. */
export const ERROR_HELP: Record<ErrorCode, ErrorHelp> = {
  missing_credential: {
    cause: 'The operation needs a credential and the request carried none (no Authorization header, no session cookie).',
    fix: 'Send `Authorization: Bearer <token>` with an API key (tsfm_…) or a session token; create a key in the account page or with POST /api/account/keys.',
  },
  invalid_argument: {
    cause: 'An argument is well-formed but not acceptable here (for example a webhook whose signature does not verify).',
    fix: 'Read the message: it names the argument. Correct it and send the request again.',
  },
  request_error: {
    cause:
      'The HTTP request itself could not be handled: a path that is not valid percent-encoding (`%ZZ`, a lone `%`), a malformed Content-Length, Content-Length together with Transfer-Encoding, a body on a method that takes none, …',
    fix: 'Check the request line, headers and body against the reference for this operation.',
  },
  invalid_credential: {
    cause:
      'The credential is unknown, expired or revoked, the Authorization header is not `Bearer <token>`, or the token is of a kind this route does not take (OAuth tokens work only on /mcp).',
    fix: 'Sign in again or create a new API key; send it as `Authorization: Bearer <token>`.',
  },
  invalid_credentials: {
    cause: 'The e-mail address and password do not match an account.',
    fix: 'Check both, or reset the password with POST /api/auth/forgot-password.',
  },
  key_budget_exceeded: {
    cause:
      "The API key's monthly_credit_limit would be passed by this call (credits spent this calendar month, UTC, plus what is held for calls still running).",
    fix: 'Wait for the next month, raise or clear the limit with PATCH /api/account/keys/{key_id} (signed in, or with a keys:write key), or use another key.',
  },
  key_model_not_allowed: {
    cause: "The API key's allowed_models list does not include the model asked for (in a forecast, a batch item or an ensemble member).",
    fix: 'Use one of the models the key allows, or change allowed_models with PATCH /api/account/keys/{key_id}.',
  },
  model_not_installed: {
    cause:
      'The model is in the catalog but its files are not on this server (never pulled, or a file failed its sha256 check). Retrying will not help until an operator installs it.',
    fix: 'Use another model (GET /v1/models lists the available ones), or ask the operator to run the pull command named in the message (`npm run models -- pull <id>`).',
  },
  billing_required: {
    cause: 'The account has too few credits for the work asked for (the price is held before the model runs).',
    fix: 'Buy credits (POST /api/account/billing/payments), or ask for less: fewer series, a shorter horizon, a cheaper model (POST /api/billing/costs prices a request).',
  },
  no_model_access: {
    cause: 'The account may not use this model (its plan or the operator restricts it).',
    fix: 'Choose a model your account can use (GET /api/models shows access), or ask the operator for access.',
  },
  model_access_denied: {
    cause: 'Access to the model was refused by the operator’s policy for this account.',
    fix: 'Use another model from GET /api/models, or ask the operator.',
  },
  forbidden: {
    cause:
      'The caller is authenticated but may not do this: an administrator operation, a credential kind the operation does not accept, an API key without the scope the operation needs, or an API key asking for a key with more scopes or looser limits than its own.',
    fix: 'Use an account with the needed role, a credential kind the operation lists, or a signed-in session (or a key created with the scope); the message names what is missing.',
  },
  not_found: {
    cause: 'The resource does not exist, belongs to another account, or the path matches no route.',
    fix: 'Check the id and the path (GET /openapi.json lists the routes).',
  },
  model_not_found: {
    cause: 'No model in the catalog has this id.',
    fix: 'Pick an id from GET /api/models (the message suggests the closest one).',
  },
  method_not_allowed: {
    cause: 'The path exists but not with this HTTP method.',
    fix: 'Use a method from the `Allow` header of the answer.',
  },
  request_timeout: {
    cause:
      'The request did not arrive in time, and the connection was closed: its headers and body took longer than the server allows (60 s by default), or the body stopped or slowed below its minimum rate (1 KiB/s over 10 s by default).',
    fix: 'Send the whole request at once; check for a stalled proxy or network between you and the service.',
  },
  conflict: {
    cause: 'The request conflicts with the current state (the e-mail is registered already, the key name is taken, the action was done before).',
    fix: 'Read the message; fetch the current state and retry with a request that fits it.',
  },
  idempotency_in_progress: {
    cause: 'A request with the same Idempotency-Key is still running; this repeat waited for it (IDEMPOTENCY_WAIT_MS) and it has not finished.',
    fix: 'Retry the same request with the same key a little later: you then get the stored answer, and are not charged twice.',
  },
  idempotency_mismatch: {
    cause: 'The Idempotency-Key was used before with a different request body.',
    fix: 'Use a new key for a new request; reuse a key only to repeat exactly the same request.',
  },
  payload_too_large: {
    cause:
      'The request body is larger than the server accepts (BODY_LIMIT_BYTES), or the text to ingest (pasted, uploaded or fetched from a URL) is larger than INGEST_MAX_BYTES.',
    fix: 'Send less per request: split the series over several requests or a batch, or the table over several ingests.',
  },
  request_too_large: {
    cause:
      'The request asks for more work than one call may (too many series, points, batch items, horizon steps or answer values; an ingest of too many rows, columns or series; or a job whose estimated model time passes INFERENCE_MAX_JOB_WORK_MS); the message names the limit.',
    fix: 'Split the work into several requests within the limit named in the message, or shorten what it names (context_length, frequency, model).',
  },
  uri_too_long: {
    cause: 'A segment of the path is longer than 100 characters, the most a path parameter (a model, key or schedule id) may be.',
    fix: 'Check the id in the path: ids are short (`key_…`, `sch_…`, a model id from GET /api/models).',
  },
  unsupported_media_type: {
    cause:
      'The body’s Content-Type is not one this operation reads (JSON; a few browser form routes also take form encoding, the ingest route CSV/TSV), or the body is compressed (a Content-Encoding such as gzip: bodies are read as sent).',
    fix: 'Send `Content-Type: application/json` with a JSON body, uncompressed (no Content-Encoding header).',
  },
  request_rejected: {
    cause: 'The request was understood but refused by a rule of the service.',
    fix: 'Read the message for the rule, and change the request accordingly.',
  },
  validation_error: {
    cause:
      'The body, query or path does not match the operation’s schema; `detail[]` names each field (`loc`), what is wrong (`msg`, `type`) and often a close valid name.',
    fix: 'Correct the fields listed in `detail[]` (the reference shows each field’s type and limits).',
  },
  rate_limit_exceeded: {
    cause:
      'The account (or, for sign-in and sign-up routes, the client address) used up its rate-limit points for the window, or has its share of the inference queue waiting (INFERENCE_ACCOUNT_QUEUE).',
    fix: 'Wait the seconds in `Retry-After` (see also `X-RateLimit-Reset`) and retry; spread requests out or batch them.',
  },
  headers_too_large: {
    cause: 'The request line and headers together are larger than the server reads (16 KiB); the connection was closed.',
    fix: 'Send fewer or shorter headers (large cookies are the usual cause); put data in the body.',
  },
  internal_error: {
    cause: 'An unexpected fault in the service. Nothing about it is echoed; it is logged with the request id.',
    fix: 'Retry later; if it persists, report the `request_id` of the answer to the operator.',
  },
  grpc_error: {
    cause: 'The gateway failed to talk to the upstream model service.',
    fix: 'Retry later; report the request id if it persists.',
  },
  upstream_grpc_error: {
    cause: 'The remote inference node answered with an error.',
    fix: 'Retry later, or use another model; report the request id if it persists.',
  },
  upstream_empty: {
    cause: 'The model ran but gave no usable forecast for some series (for example a numeric failure); no credits were taken.',
    fix: 'Check the series (constant, too short, extreme values) or try another model.',
  },
  upstream_unavailable: {
    cause: 'The model is not available now: its files are not downloaded, or the inference queue is full.',
    fix: 'Retry after `Retry-After` seconds, or use another model; an operator installs missing models with `npm run models`.',
  },
  upstream_timeout: {
    cause:
      'The model ran for the whole inference time limit (INFERENCE_TIMEOUT_MS of running time). When its thread computed at least the time it was estimated at, the job is charged its price (x-credits-charged; usage status timed_out): the same request would run out of time again. When the server was too busy to give it that time, nothing is charged (Retry-After).',
    fix: 'Ask for less work per request (fewer series, shorter history or horizon) or use a faster model (see /docs/models).',
  },
};

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly headers: Record<string, string>;
  constructor(code: ErrorCode, message: string, headers: Record<string, string> = {}) {
    super(message);
    this.name = 'AppError';
    this.code = code;
    this.status = ERROR_STATUS[code];
    this.headers = headers;
  }
}

/**
 * One thing wrong with an input, named by its field path inside the operation's input
 * (`['inputs', 0, 'target']`). Services speak in field paths; each boundary places them in its
 * own wire format (REST prefixes the request part: `body`, `query`, `path`).
 */
export interface FieldIssue {
  path: (string | number)[];
  msg: string;
  type: string;
  input?: unknown;
  ctx?: Record<string, unknown>;
}

/** One entry of a 422 body, FastAPI-style: where (`loc`), what, which kind of failure. */
export type ValidationIssue = {
  loc: (string | number)[];
  msg: string;
  type: string;
  input?: unknown;
  ctx?: Record<string, unknown>;
};

/** A validation failure raised by service code (not by a schema): answered as 422. */
export class ValidationFailure extends Error {
  readonly issues: FieldIssue[];
  constructor(issues: FieldIssue[]) {
    // An issue about the input as a whole (a batch item that is not an object) has no path to name.
    super(issues.map((d) => (d.path.length > 0 ? `${d.path.join('.')}: ${d.msg}` : d.msg)).join('; '));
    this.name = 'ValidationFailure';
    this.issues = issues;
  }
}

export const notFound = (what: string) => new AppError('not_found', `${what} not found`);

/** Field issues placed under a wire prefix (`['body']` for REST bodies, `[]` for MCP arguments). */
export function locate(issues: FieldIssue[], prefix: (string | number)[]): ValidationIssue[] {
  return issues.map(({ path, ...rest }) => ({ loc: [...prefix, ...path], ...rest }));
}

/** A known error as `{error, code, status, detail?}`; null for anything else (a fault, never echoed). */
export interface ErrorReport {
  error: string;
  code: ErrorCode;
  status: number;
  detail?: ValidationIssue[];
}

/**
 * The shared core of every boundary's error mapper: an AppError or a ValidationFailure becomes a
 * report (validation paths under `prefix`); anything else is null and the boundary answers its
 * generic internal error.
 */
export function reportError(err: unknown, prefix: (string | number)[]): ErrorReport | null {
  if (err instanceof AppError) return { error: err.message, code: err.code, status: err.status };
  if (err instanceof ValidationFailure) {
    return { error: err.message, code: 'validation_error', status: 422, detail: locate(err.issues, prefix) };
  }
  return null;
}

function valueAt(data: unknown, path: PropertyKey[]): unknown {
  let cur: unknown = data;
  for (const key of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[key as string];
  }
  return cur;
}

const CTX_KEYS = ['minimum', 'maximum', 'expected', 'values', 'format', 'origin', 'inclusive', 'keys'] as const;

/** zod's issues as field issues (FastAPI-style `missing` for absent fields, small inputs echoed). */
export function zodIssues(issues: readonly ZodIssue[], data: unknown): FieldIssue[] {
  return issues.flatMap((issue): FieldIssue[] => {
    const path = issue.path.filter((p): p is string | number => typeof p !== 'symbol');
    if (issue.code === 'unrecognized_keys') {
      // One issue per unknown field, at the field, with where it probably belongs.
      return issue.keys.map((key) => {
        const hint = suggestField(key, path);
        return {
          path: [...path, key],
          msg: `Unknown field '${key}'${hint ? `; did you mean '${hint}'?` : ''}`,
          type: 'extra_forbidden',
          ...(hint ? { ctx: { suggestion: hint } } : {}),
        };
      });
    }
    const input = valueAt(data, path);
    const missing = issue.code === 'invalid_type' && input === undefined;
    const ctx: Record<string, unknown> = {};
    for (const k of CTX_KEYS) {
      const v = (issue as unknown as Record<string, unknown>)[k];
      if (v !== undefined) ctx[k] = typeof v === 'bigint' ? Number(v) : v;
    }
    const out: FieldIssue = {
      path,
      msg: missing ? 'Field required' : issue.message,
      type: missing ? 'missing' : issue.code,
    };
    if (!missing && input !== undefined && isSmall(input)) out.input = input;
    if (Object.keys(ctx).length > 0) out.ctx = ctx;
    return [out];
  });
}

// Echo small inputs only: a 10 MB series must not come back inside an error.
function isSmall(v: unknown): boolean {
  if (v === null || typeof v !== 'object') return typeof v !== 'string' || v.length <= 256;
  try {
    return JSON.stringify(v).length <= 256;
  } catch {
    return false;
  }
}
