import type { components } from './schema.ts';

/** The API's closed list of error codes (from its OpenAPI document), plus the client's own. */
export type ApiErrorCode = components['schemas']['ErrorResponseBody']['code'];
export type ClientErrorCode = 'timeout' | 'network_error' | 'invalid_response' | 'invalid_input';
export type ValidationIssue = components['schemas']['HTTPValidationError']['detail'][number];

/**
 * Every failure the SDK reports. `code` is the API's machine-readable code (`billing_required`,
 * `rate_limit_exceeded`, `validation_error` for a 422, …) or the client's own (`timeout`,
 * `network_error`, `invalid_response`, `invalid_input`); `status` is the HTTP status (0 when no
 * answer came back).
 */
export class TsfmError extends Error {
  override readonly name: string = 'TsfmError';
  readonly status: number;
  readonly code: ApiErrorCode | ClientErrorCode;
  /** The server's x-request-id, to quote when reporting a problem. */
  readonly requestId: string | null;
  /** Field-level problems of a 422 (`loc` names the field, e.g. ["body","inputs",0,"target"]). */
  readonly detail: ValidationIssue[];
  /** Seconds the server asked to wait (429, 503), when it said. */
  readonly retryAfter: number | null;

  constructor(init: {
    message: string;
    status: number;
    code: ApiErrorCode | ClientErrorCode;
    requestId?: string | null;
    detail?: ValidationIssue[];
    retryAfter?: number | null;
    cause?: unknown;
  }) {
    super(init.message, init.cause !== undefined ? { cause: init.cause } : undefined);
    this.status = init.status;
    this.code = init.code;
    this.requestId = init.requestId ?? null;
    this.detail = init.detail ?? [];
    this.retryAfter = init.retryAfter ?? null;
  }
}

/** 401, or the codes `missing_credential` (answered 400) and `invalid_credential`: no credential, or a bad or revoked one. */
export class AuthenticationError extends TsfmError {
  override readonly name = 'AuthenticationError';
}
/** 402: credits exhausted and billing inactive (`billing_required`), or the API key's monthly_credit_limit reached (`key_budget_exceeded`). */
export class BillingRequiredError extends TsfmError {
  override readonly name = 'BillingRequiredError';
}
/** 403: the credential may not do this (model reserved to billing accounts, a model outside the key's allowed_models, a scope the key lacks, admin route). */
export class PermissionDeniedError extends TsfmError {
  override readonly name = 'PermissionDeniedError';
}
/** 404: unknown model or resource. */
export class NotFoundError extends TsfmError {
  override readonly name = 'NotFoundError';
}
/** 400/413/415/422: the request itself is wrong (see `detail` for a 422); also input the client refuses before sending (`invalid_input`). */
export class InvalidRequestError extends TsfmError {
  override readonly name = 'InvalidRequestError';
}
/** 429 after the retries ran out. */
export class RateLimitError extends TsfmError {
  override readonly name = 'RateLimitError';
}
/** 5xx (after retries for 503), a timeout, or no answer at all. */
export class ServiceError extends TsfmError {
  override readonly name = 'ServiceError';
}

type ErrorInit = ConstructorParameters<typeof TsfmError>[0];

/** Codes that are about the credential whatever the status (the server answers a missing one with 400). */
const CREDENTIAL_CODES: ReadonlySet<string> = new Set(['missing_credential', 'invalid_credential', 'invalid_credentials']);

/** The typed error for an HTTP status (and, for credentials and the client's own input checks, the code). */
export function errorFor(init: ErrorInit): TsfmError {
  const s = init.status;
  if (s === 401 || CREDENTIAL_CODES.has(init.code)) return new AuthenticationError(init);
  if (init.code === 'invalid_input') return new InvalidRequestError(init);
  if (s === 402) return new BillingRequiredError(init);
  if (s === 403) return new PermissionDeniedError(init);
  if (s === 404) return new NotFoundError(init);
  if (s === 429) return new RateLimitError(init);
  if (s >= 400 && s < 500) return new InvalidRequestError(init);
  return new ServiceError(init);
}

/** Seconds from a `retry-after` header (delta-seconds or an HTTP date); null when absent or unreadable. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | null {
  if (value === null || value.trim() === '') return null;
  const n = Number(value);
  if (Number.isFinite(n)) return Math.max(0, n);
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, (at - now) / 1000);
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Builds the typed error from an error response's status, headers and parsed body. */
export function errorFromResponse(res: Response, body: unknown): TsfmError {
  const base = {
    status: res.status,
    requestId: res.headers.get('x-request-id'),
    retryAfter: parseRetryAfter(res.headers.get('retry-after')),
  };
  if (isRecord(body) && Array.isArray(body.detail) && res.status === 422) {
    const detail = body.detail as ValidationIssue[];
    const first = detail[0];
    const where = first ? `${first.loc.join('.')}: ${first.msg}` : 'invalid request';
    return errorFor({ ...base, code: 'validation_error', detail, message: `${where}${detail.length > 1 ? ` (and ${detail.length - 1} more)` : ''}` });
  }
  if (isRecord(body) && typeof body.error === 'string' && typeof body.code === 'string') {
    return errorFor({ ...base, code: body.code as ApiErrorCode, message: body.error });
  }
  return errorFor({ ...base, code: 'invalid_response', message: `HTTP ${res.status} ${res.statusText || ''}`.trim() });
}
