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
  conflict: 409,
  payload_too_large: 413,
  request_too_large: 413,
  unsupported_media_type: 415,
  request_rejected: 422,
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

/** One entry of a 422 body, FastAPI-style: where, what, which kind of failure. */
export interface ValidationIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
  input?: unknown;
  ctx?: Record<string, unknown>;
}

/** A validation failure raised by service code (not by a schema): answered as 422 `{detail}`. */
export class ValidationFailure extends Error {
  readonly detail: ValidationIssue[];
  constructor(detail: ValidationIssue[]) {
    super(detail.map((d) => `${d.loc.join('.')}: ${d.msg}`).join('; '));
    this.name = 'ValidationFailure';
    this.detail = detail;
  }
}

export const notFound = (what: string) => new AppError('not_found', `${what} not found`);
