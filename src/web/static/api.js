// The one way the pages talk to the service: the public HTTP API, same origin, session cookie.
// fetch sends an Origin header on POST/PATCH/DELETE, which the server's CSRF check requires.

/** An error answer of the API, kept with its code so pages can explain it. */
export class ApiError extends Error {
  constructor(status, code, message, detail) {
    super(message);
    this.status = status;
    this.code = code;
    this.detail = detail;
  }
}

/** What a user can do about each error code (the API's own message follows it). */
const HINTS = {
  missing_credential: 'Please sign in first.',
  invalid_credential: 'Your session has ended: sign in again.',
  invalid_credentials: 'The e-mail or password is wrong.',
  billing_required: 'Your free credits are used up: turn billing on in Account → Billing.',
  no_model_access: 'This model needs active billing.',
  model_not_found: 'This model is not in the catalog.',
  model_unavailable: 'This model is not installed on the server.',
  conflict: 'This conflicts with something that exists already.',
  forbidden: 'This needs the administrator role.',
  not_found: 'Not found.',
  rate_limit_exceeded: 'Too many requests: wait a moment and try again.',
  payload_too_large: 'The data is too large for one request.',
  request_too_large: 'The request is too large.',
  upstream_timeout: 'The model took too long to answer.',
  upstream_unavailable: 'The service is busy: try again shortly.',
  invalid_argument: 'A value is not accepted.',
  network_error: 'The server could not be reached.',
};

/** A readable sentence for any error thrown by request(). */
export function describeError(err) {
  if (err instanceof ApiError) {
    if (err.code === 'validation_error' && Array.isArray(err.detail)) {
      const parts = err.detail.map((d) => {
        const loc = (d.loc ?? []).filter((p) => p !== 'body' && p !== 'query');
        return loc.length > 0 ? `${loc.join('.')}: ${d.msg}` : d.msg;
      });
      return `Please check the form — ${parts.join('; ')}`;
    }
    const hint = HINTS[err.code];
    return hint && hint !== err.message ? `${hint} ${err.message} (${err.code})` : `${err.message} (${err.code})`;
  }
  return err instanceof Error ? err.message : String(err);
}

/**
 * Calls the API; resolves to {data, requestId} or throws ApiError.
 * `client: 'playground'` marks forecasts so usage records them with source `playground`.
 */
export async function request(method, path, { body, client } = {}) {
  const headers = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (client) headers['x-tsfm-client'] = client;
  let res;
  try {
    res = await fetch(path, { method, headers, credentials: 'same-origin', body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (err) {
    throw new ApiError(0, 'network_error', err instanceof Error ? err.message : 'network error');
  }
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!res.ok) {
    if (res.status === 422 && data && Array.isArray(data.detail)) throw new ApiError(422, 'validation_error', 'The request was not valid', data.detail);
    throw new ApiError(res.status, data?.code ?? `http_${res.status}`, data?.error ?? `HTTP ${res.status}`);
  }
  return { data, requestId: res.headers.get('x-request-id') };
}

export const api = {
  get: async (path) => (await request('GET', path)).data,
  post: async (path, body, opts) => (await request('POST', path, { body: body ?? {}, ...opts })).data,
  patch: async (path, body) => (await request('PATCH', path, { body })).data,
  del: async (path) => (await request('DELETE', path)).data,
};
