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
  no_model_access: 403,
  model_access_denied: 403,
  forbidden: 403,
  not_found: 404,
  model_not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  idempotency_in_progress: 409,
  payload_too_large: 413,
  request_too_large: 413,
  unsupported_media_type: 415,
  request_rejected: 422,
  idempotency_mismatch: 422,
  validation_error: 422,
  rate_limit_exceeded: 429,
  internal_error: 500,
  grpc_error: 502,
  upstream_grpc_error: 502,
  upstream_empty: 502,
  upstream_unavailable: 503,
  upstream_timeout: 504,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;
export const ERROR_CODES = Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]];

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
    super(issues.map((d) => `${d.path.join('.')}: ${d.msg}`).join('; '));
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
