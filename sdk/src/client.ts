import ky, { HTTPError, TimeoutError } from 'ky';
import createClient, { type Client } from 'openapi-fetch';
import pMap from 'p-map';
import { errorFor, errorFromResponse, parseRetryAfter, TsfmError } from './errors.ts';
import type { components, paths } from './schema.ts';

type Schemas = components['schemas'];
export type ForecastRequest = Schemas['ForecastRequest'];
export type ForecastInput = Schemas['ForecastInput'];
export type ForecastParameters = Schemas['ForecastParameters'];
export type ForecastResponse = Schemas['ForecastResponseBody'];
export type Prediction = Schemas['Prediction'];
export type EnsembleRequest = Schemas['EnsembleForecastRequest'];
export type EnsembleResponse = Schemas['EnsembleForecastResponseBody'];
export type BatchItem = Schemas['ForecastBatchItemBody'];
export type CrossValidationRequest = NonNullable<paths['/v1/cross-validation']['post']['requestBody']>['content']['application/json'];
export type CrossValidationResponse = Schemas['CrossValidationResponseBody'];
export type DetectAnomaliesRequest = NonNullable<paths['/v1/detect-anomalies']['post']['requestBody']>['content']['application/json'];
export type DetectAnomaliesResponse = Schemas['DetectAnomaliesResponseBody'];
export type ImputeRequest = NonNullable<paths['/v1/impute']['post']['requestBody']>['content']['application/json'];
export type ImputeResponse = Schemas['ImputeResponseBody'];
export type CatalogModel = Schemas['CatalogModel'];
export type UsageSummary = Schemas['UsageSummary'];
export type ApiKey = Schemas['ApiKey'];
export type CreatedApiKey = Schemas['CreatedApiKey'];
/** Scopes and limits of a new key (all optional; docs/keys.md). */
export type CreateKeyOptions = Omit<Schemas['CreateKeyRequest'], 'label'>;
/** A key's new label and limits: an absent field stays, null removes the limit. */
export type UpdateKeyRequest = Schemas['UpdateKeyRequest'];
export type Session = Schemas['SessionResponse'];
export type CredentialInfo = Schemas['ValidateCredentialResponse'];

/** Largest number of series per /v1/forecast call and of requests per /v1/forecast/batch call. */
export const MAX_PER_CALL = 64;
export const DEFAULT_BASE_URL = 'http://127.0.0.1:8000';

export interface ClientOptions {
  /** An API key (`tsfm_…`) or a session token; sent as `Authorization: Bearer …`. */
  apiKey?: string;
  /** The service's address, e.g. https://forecast.example.com (default http://127.0.0.1:8000). */
  baseUrl?: string;
  /** Per-attempt timeout in milliseconds (default 60000). A timeout is not retried (the call may have run). */
  timeoutMs?: number;
  /** Retries after a 429 or 503 (default 3), waiting `retry-after` when sent, else exponential backoff with jitter. */
  maxRetries?: number;
  /** Longest wait the client accepts between attempts, ms (default 60000); a longer `retry-after` fails at once. */
  maxRetryDelayMs?: number;
  /** A fetch implementation (default: the global one). */
  fetch?: typeof globalThis.fetch;
}

export interface ChunkOptions {
  /** Series (or requests) per call, at most 64 (default 64). */
  chunkSize?: number;
  /** Calls in flight at once (default 4). */
  concurrency?: number;
  /** Called after each call completes with the number of series (or requests) done so far and the total. */
  onProgress?: (done: number, total: number) => void;
  signal?: AbortSignal;
}

export interface ForecastManyResponse extends ForecastResponse {
  /** The id of each underlying call, in order. */
  ids: string[];
}

const RETRY_STATUSES = [429, 503];

/** The SDK's client: typed methods over the public HTTP API (`client.api` is the raw typed openapi-fetch client). */
export class TsfmClient {
  readonly baseUrl: string;
  /** Every route of /openapi.json, typed; responses are `{ data, error, response }`. */
  readonly api: Client<paths>;

  constructor(opts: ClientOptions = {}) {
    this.baseUrl = normalizeBaseUrl(opts.baseUrl ?? DEFAULT_BASE_URL);
    const timeout = opts.timeoutMs ?? 60_000;
    const maxRetryAfter = opts.maxRetryDelayMs ?? 60_000;
    const fetchImpl = opts.fetch ?? globalThis.fetch;
    // ky does the retrying: only 429 and 503 (the server did not run the call), honouring retry-after,
    // and connection refusals (the request never left); never a timeout or a dropped connection.
    const retrying = async (request: Request): Promise<Response> => {
      try {
        return await ky(request, {
          fetch: fetchImpl,
          timeout,
          throwHttpErrors: (status) => RETRY_STATUSES.includes(status),
          retry: {
            limit: opts.maxRetries ?? 3,
            methods: ['get', 'post', 'put', 'patch', 'delete', 'head', 'options'],
            statusCodes: RETRY_STATUSES,
            afterStatusCodes: RETRY_STATUSES,
            maxRetryAfter,
            backoffLimit: maxRetryAfter,
            jitter: true,
            shouldRetry: ({ error }) => {
              if (!(error instanceof HTTPError)) return connectionRefused(error);
              // ky would clamp a long retry-after to maxRetryAfter; waiting less than asked is pointless.
              const after = parseRetryAfter(error.response.headers.get('retry-after'));
              return after !== null && after * 1000 > maxRetryAfter ? false : undefined;
            },
          },
        });
      } catch (err) {
        if (err instanceof HTTPError) return err.response;
        if (err instanceof TimeoutError) {
          throw errorFor({ status: 0, code: 'timeout', message: `no answer from ${request.method} ${request.url} within ${timeout} ms`, cause: err });
        }
        if (err instanceof TsfmError) throw err;
        if (err instanceof Error && err.name === 'AbortError') throw err;
        const reason = err instanceof Error ? (causeCode(err) ?? err.message) : String(err);
        throw errorFor({ status: 0, code: 'network_error', message: `cannot reach ${this.baseUrl}: ${reason}`, cause: err });
      }
    };
    this.api = createClient<paths>({
      baseUrl: this.baseUrl,
      fetch: retrying,
      headers: opts.apiKey ? { authorization: `Bearer ${opts.apiKey}` } : {},
    });
  }

  /** Logs in with e-mail and password; the session token can be used as `apiKey` (e.g. to create a key). */
  static async login(email: string, password: string, opts: Omit<ClientOptions, 'apiKey'> = {}): Promise<Session> {
    const c = new TsfmClient(opts);
    return unwrap(await c.api.POST('/api/auth/login', { body: { email, password } }));
  }

  /** One forecast call (up to 1000 series; see forecastMany for large sets). */
  async forecast(request: ForecastRequest, signal?: AbortSignal): Promise<ForecastResponse> {
    // The route answers a ForecastQuote only with dry_run: true, which this method never sends.
    const body = { ...request, dry_run: undefined };
    return unwrap(await this.api.POST('/v1/forecast', { body, ...(signal ? { signal } : {}) })) as ForecastResponse;
  }

  /**
   * Forecasts any number of series: splits `inputs` into calls of at most 64, runs them
   * concurrently and returns one response with the outputs in the order of the inputs
   * (usage summed). The first failing call fails the whole (calls already done are charged).
   */
  async forecastMany(request: ForecastRequest, opts: ChunkOptions = {}): Promise<ForecastManyResponse> {
    const parts = await this.chunked(request.inputs, opts, (inputs) => this.forecast({ ...request, inputs }, opts.signal));
    return mergeForecasts(parts);
  }

  /** An ensemble forecast (backtest-ranked blend of models). */
  async ensemble(request: EnsembleRequest, signal?: AbortSignal): Promise<EnsembleResponse> {
    const body = { ...request, dry_run: undefined };
    return unwrap(await this.api.POST('/v1/forecast/ensemble', { body, ...(signal ? { signal } : {}) })) as EnsembleResponse;
  }

  /** A rolling-origin cross-validation of one or more models (/v1/cross-validation). */
  async crossValidate(request: CrossValidationRequest, signal?: AbortSignal): Promise<CrossValidationResponse> {
    return unwrap(await this.api.POST('/v1/cross-validation', { body: request, ...(signal ? { signal } : {}) }));
  }

  /** Anomalies: values outside a model's one-step-ahead interval, or rolling z-scores (/v1/detect-anomalies). */
  async detectAnomalies(request: DetectAnomaliesRequest, signal?: AbortSignal): Promise<DetectAnomaliesResponse> {
    return unwrap(await this.api.POST('/v1/detect-anomalies', { body: request, ...(signal ? { signal } : {}) }));
  }

  /** Fills the nulls of each series: forecast and backcast across each gap, or linear (/v1/impute). */
  async impute(request: ImputeRequest, signal?: AbortSignal): Promise<ImputeResponse> {
    return unwrap(await this.api.POST('/v1/impute', { body: request, ...(signal ? { signal } : {}) }));
  }

  /** Ensembles for any number of series, 64 per call; `result` merges the blended forecasts in input order. */
  async ensembleMany(request: EnsembleRequest, opts: ChunkOptions = {}): Promise<{ result: ForecastManyResponse; parts: EnsembleResponse[] }> {
    const parts = await this.chunked(request.inputs, opts, (inputs) => this.ensemble({ ...request, inputs }, opts.signal));
    return { result: mergeForecasts(parts.map((p) => p.ensemble_result)), parts };
  }

  /**
   * Runs any number of forecast requests through /v1/forecast/batch, 64 per call, concurrently;
   * the items come back in the order of the requests, each with `ok` and its result or error.
   */
  async forecastBatch(requests: ForecastRequest[], opts: ChunkOptions = {}): Promise<BatchItem[]> {
    const parts = await this.chunked(requests, opts, async (chunk) => {
      const r = unwrap(await this.api.POST('/v1/forecast/batch', { body: { requests: chunk }, ...(opts.signal ? { signal: opts.signal } : {}) }));
      if (!('data' in r)) throw errorFor({ status: 200, code: 'invalid_response', message: 'expected a batch answer, got a quote' });
      return r.data;
    });
    return parts.flat();
  }

  /** The model catalog. */
  async models(): Promise<CatalogModel[]> {
    return unwrap(await this.api.GET('/api/models')).models;
  }

  async model(id: string): Promise<CatalogModel> {
    return unwrap(await this.api.GET('/api/models/{modelId}', { params: { path: { modelId: id } } }));
  }

  /** Usage totals, per day, per model and per source; `start`/`end` are ISO 8601 (end exclusive). */
  async usage(range: { start?: string; end?: string } = {}): Promise<UsageSummary> {
    return unwrap(await this.api.GET('/api/account/usage/summary', { params: { query: range } }));
  }

  /** Which account and credential kind this client's credential belongs to (401 when invalid). */
  async whoami(): Promise<CredentialInfo> {
    return unwrap(await this.api.POST('/v1/validate', { body: {} }));
  }

  readonly keys = {
    list: async (): Promise<ApiKey[]> => unwrap(await this.api.GET('/api/account/keys')).keys,
    /** Creates a key; its secret (`key`) is in this answer only. */
    create: async (label: string, opts: CreateKeyOptions = {}): Promise<CreatedApiKey> =>
      unwrap(await this.api.POST('/api/account/keys', { body: { ...opts, label } })),
    /** Renames a key or changes its limits (needs a session or a key with scope keys:write). */
    update: async (id: string, patch: UpdateKeyRequest): Promise<ApiKey> =>
      unwrap(await this.api.PATCH('/api/account/keys/{key_id}', { params: { path: { key_id: id } }, body: patch })),
    revoke: async (id: string): Promise<void> => {
      unwrap(await this.api.DELETE('/api/account/keys/{key_id}', { params: { path: { key_id: id } } }));
    },
  };

  private async chunked<I, O>(items: I[], opts: ChunkOptions, run: (chunk: I[]) => Promise<O>): Promise<O[]> {
    const size = opts.chunkSize ?? MAX_PER_CALL;
    if (!Number.isInteger(size) || size < 1 || size > MAX_PER_CALL) {
      throw errorFor({ status: 0, code: 'invalid_input', message: `chunkSize must be an integer from 1 to ${MAX_PER_CALL}, got ${size}` });
    }
    const chunks: I[][] = [];
    for (let i = 0; i < items.length; i += size) chunks.push(items.slice(i, i + size));
    let done = 0;
    opts.onProgress?.(0, items.length);
    return pMap(
      chunks,
      async (chunk) => {
        const out = await run(chunk);
        done += chunk.length;
        opts.onProgress?.(done, items.length);
        return out;
      },
      { concurrency: opts.concurrency ?? 4, ...(opts.signal ? { signal: opts.signal } : {}) },
    );
  }
}

/** The data of an openapi-fetch answer, or the typed error it carries. */
function unwrap<T>(r: { data?: T; error?: unknown; response: Response }): T {
  if (r.response.ok && r.data !== undefined) return r.data;
  throw errorFromResponse(r.response, r.error);
}

function mergeForecasts(parts: ForecastResponse[]): ForecastManyResponse {
  const first = parts[0];
  if (!first) throw errorFor({ status: 0, code: 'invalid_input', message: 'no series to forecast' });
  const usage = { input_tokens: 0, output_tokens: 0, total_tokens: 0 };
  for (const p of parts) {
    usage.input_tokens += p.usage.input_tokens;
    usage.output_tokens += p.usage.output_tokens;
    usage.total_tokens += p.usage.total_tokens;
  }
  const latencies = parts.map((p) => p.latency_ms).filter((x): x is number => x !== null);
  return {
    ...first,
    outputs: parts.flatMap((p) => p.outputs),
    usage,
    latency_ms: latencies.length > 0 ? Math.max(...latencies) : null,
    ids: parts.map((p) => p.id),
  };
}

/**
 * The service address, trimmed and without trailing slashes; a TsfmError (`invalid_input`) unless it
 * is an absolute http:// or https:// URL (`127.0.0.1:8000` has no scheme, and `localhost:8000`
 * reads as the scheme `localhost:`).
 */
export function normalizeBaseUrl(raw: string): string {
  const text = String(raw).trim();
  const fail = (why: string, example = 'http://127.0.0.1:8000') =>
    errorFor({ status: 0, code: 'invalid_input', message: `baseUrl ${JSON.stringify(text).slice(0, 80)} ${why}, e.g. ${example}` });
  if (text === '') throw fail('is empty: give the service address');
  if (!/^https?:\/\//i.test(text)) {
    const bare = /^[\w.-]+(:\d+)?(\/.*)?$/.test(text) && !/^[a-z][\w+.-]*:\/\//i.test(text);
    throw fail('must start with http:// or https://', bare ? `http://${text}` : undefined);
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw fail('is not a valid URL');
  }
  if (url.search || url.hash) throw fail('must not have a query or a fragment');
  return text.replace(/\/+$/, '');
}

function causeCode(err: Error): string | null {
  const cause: unknown = err.cause;
  if (typeof cause === 'object' && cause !== null && 'code' in cause && typeof cause.code === 'string') return cause.code;
  return null;
}

function connectionRefused(err: Error): boolean {
  return causeCode(err) === 'ECONNREFUSED';
}
