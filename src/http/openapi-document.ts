import { isDeepStrictEqual } from 'node:util';
import { ERROR_HELP, ERROR_STATUS, type ErrorCode } from '../shared/errors.ts';
import type { AuthMode } from './auth.ts';
import type { HtmlError, OperationExample } from './openapi.ts';

type Json = Record<string, unknown>;

/** What the route transform learned about one documented route (by operation id). */
export interface RouteDoc {
  auth: AuthMode;
  /** Counted by the rate limiter (every authenticated call, and the per-address sign-in/sign-up routes). */
  rateLimited: boolean;
  /** The route states its own `security` (e.g. /metrics and its METRICS_TOKEN). */
  hasSecurity: boolean;
  example: OperationExample | undefined;
  redirect: { status: 302 | 303; description: string } | undefined;
  html: boolean;
  /** Error statuses answered with an HTML page, with when (`schema.htmlErrors`). */
  htmlErrors: Partial<Record<number, HtmlError>>;
  /** Every error of the route is a page: no implied JSON errors. */
  onlyHtmlErrors: boolean;
  methods: string[];
}

/** Every tag an operation may carry, with what it groups (an unknown tag fails test/http/openapi-lint.test.ts). */
export const TAGS: Record<string, string> = {
  forecasting: 'Forecasts: one request, a batch, or an ensemble of models ranked by backtest. These spend credits.',
  schedules: 'Recurring forecasts: fetch a source on a cron schedule, forecast it, and POST the result to a signed webhook.',
  models: 'The model catalog: ids, kinds, limits, prices and measured speed; also in the OpenAI-style /v1/models shape.',
  auth: 'Sign-up, sign-in, sessions, e-mail confirmation, password reset, and checking a credential.',
  account: 'The signed-in account: profile, privacy settings, deletion, invitations, linked sign-in providers.',
  keys: 'API keys (tsfm_…): create, list, revoke. The secret is shown once.',
  usage: 'What the account used: events and summaries.',
  billing: 'Credits, prices, payments and the cost of a request before it is sent.',
  admin: 'Administrator operations (audited): find accounts, grant credits, reset usage.',
  oauth: 'The OAuth 2.1 authorization server that MCP clients use (RFC 6749, 7591, 7009, 8414, 9728).',
  mcp: 'The Model Context Protocol endpoint: every operation as a tool, for agents.',
  contact: 'The contact form.',
  system: 'Health, status, metrics and this document.',
};

const REASONS: Record<number, string> = {
  400: 'Bad request',
  401: 'Unauthorized',
  402: 'Payment required',
  403: 'Forbidden',
  404: 'Not found',
  405: 'Method not allowed',
  408: 'Request timeout',
  409: 'Conflict',
  413: 'Too large',
  414: 'URI too long',
  415: 'Unsupported media type',
  422: 'Validation error',
  429: 'Too many requests',
  431: 'Request headers too large',
  500: 'Internal error',
  502: 'Bad gateway',
  503: 'Unavailable',
  504: 'Timeout',
};

const HEADERS: Json = {
  RequestId: {
    description: 'The request id: the one sent in `x-request-id` when it is 1–128 of `A-Za-z0-9._:-`, else a new `req_…`. Quote it when you ask for help.',
    schema: { type: 'string' },
  },
  RateLimitLimit: { description: 'Rate-limit points the caller may spend per window.', schema: { type: 'integer' } },
  RateLimitRemaining: { description: 'Points left in the current window.', schema: { type: 'integer' } },
  RateLimitReset: { description: 'When the window resets (Unix time, seconds).', schema: { type: 'integer' } },
  RetryAfter: { description: 'Seconds to wait before retrying.', schema: { type: 'integer' } },
  Location: { description: 'Where the redirect leads.', schema: { type: 'string', format: 'uri-reference' } },
};

const ref = (kind: string, name: string) => ({ $ref: `#/components/${kind}/${name}` });
const rateLimitHeaders = () => ({
  'x-ratelimit-limit': ref('headers', 'RateLimitLimit'),
  'x-ratelimit-remaining': ref('headers', 'RateLimitRemaining'),
  'x-ratelimit-reset': ref('headers', 'RateLimitReset'),
});

/** The codes answered with a status, with cause and fix: the description of that error response. */
export function statusDescription(status: number): string {
  const codes = (Object.keys(ERROR_STATUS) as ErrorCode[]).filter((c) => ERROR_STATUS[c] === status);
  const lines = codes.map((c) => `- \`${c}\`: ${ERROR_HELP[c].cause} ${ERROR_HELP[c].fix}`);
  return `${REASONS[status] ?? `HTTP ${status}`}. \`code\` is one of:\n${lines.join('\n')}`;
}

/** The shared error responses (components.responses), one per status, by name. */
function errorResponses(statuses: Iterable<number>): Json {
  const out: Json = {};
  for (const s of [...new Set(statuses)].sort()) {
    const body = s === 422 ? 'HTTPValidationError' : 'ErrorResponseBody';
    const headers: Json = { 'x-request-id': ref('headers', 'RequestId') };
    if (s === 429 || s === 503) headers['retry-after'] = ref('headers', 'RetryAfter');
    if (s === 429) Object.assign(headers, rateLimitHeaders());
    out[`Error${s}`] = { description: statusDescription(s), headers, content: { 'application/json': { schema: ref('schemas', body) } } };
  }
  return out;
}

const isRecord = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Is this response's body one of the service's `{error, code}` or 422 `detail[]` shapes (not, e.g., an OAuth RFC error)? */
function isServiceError(response: Json): boolean {
  const content = isRecord(response.content) ? response.content : {};
  const schema = isRecord(content['application/json']) ? (content['application/json'] as Json).schema : undefined;
  const r = isRecord(schema) ? schema.$ref : undefined;
  return r === '#/components/schemas/ErrorResponseBody' || r === '#/components/schemas/HTTPValidationError';
}

/** A body that is one of the service's error shapes, whichever (an idempotent operation's 422). */
function isServiceErrorUnion(response: Json): boolean {
  const content = isRecord(response.content) ? response.content : {};
  const schema = isRecord(content['application/json']) ? (content['application/json'] as Json).schema : undefined;
  const options = isRecord(schema) && Array.isArray(schema.anyOf) ? schema.anyOf : [];
  const service = ['#/components/schemas/ErrorResponseBody', '#/components/schemas/HTTPValidationError'];
  return options.length > 0 && options.every((o) => isRecord(o) && service.includes(String(o.$ref)));
}

function finishOperation(op: Json, route: RouteDoc | undefined, usedStatuses: Set<number>, schemas: Json): void {
  const auth = route?.auth ?? 'public';
  if (!route?.hasSecurity) {
    op.security = auth === 'public' ? [] : auth === 'optional' ? [{ bearer: [] }, {}] : [{ bearer: [] }];
  }
  const responses: Json = isRecord(op.responses) ? op.responses : {};
  const hasBody = isRecord(op.requestBody);
  // 422: every request's path, query and body pass the unstorable-string and depth check (src/http/app.ts), declared or not.
  const implied = [422, 500];
  if (hasBody) implied.push(415);
  if (auth === 'user' || auth === 'admin') implied.push(400, 401);
  if (auth === 'admin') implied.push(403);
  if (route?.rateLimited) implied.push(429);
  if (route?.onlyHtmlErrors) implied.length = 0;
  for (const s of implied)
    if (!(String(s) in responses))
      responses[String(s)] = { content: { 'application/json': { schema: ref('schemas', s === 422 ? 'HTTPValidationError' : 'ErrorResponseBody') } } };

  if (route?.html) {
    for (const [k, v] of Object.entries(responses))
      if (k.startsWith('2') && isRecord(v) && !v.content) v.content = { 'text/html': { schema: { type: 'string', description: 'An HTML page' } } };
  }
  if (route?.redirect) {
    for (const [k, v] of Object.entries(responses)) if (k.startsWith('2') && isRecord(v) && !v.content) delete responses[k];
    const { status, description } = route.redirect;
    responses[String(status)] = { description, headers: { location: ref('headers', 'Location'), 'x-request-id': ref('headers', 'RequestId') } };
  }
  for (const [status, value] of Object.entries(responses)) {
    if (!isRecord(value)) continue;
    const code = Number(status);
    if (code >= 400 && (isServiceError(value) || value.description === undefined || value.description === 'Default Response') && code in REASONS) {
      if (isServiceError(value) || !value.content) {
        responses[status] = ref('responses', `Error${code}`);
        usedStatuses.add(code);
        continue;
      }
      value.description = isServiceErrorUnion(value)
        ? statusDescription(code)
        : `${REASONS[code]}: the body says what went wrong (on OAuth routes, an RFC 6749 error object with \`error\` and \`error_description\`).`;
    }
    if (code >= 200 && code < 300) {
      if (!value.description || value.description === 'Default Response') value.description = successDescription(op, value, schemas);
      const headers: Json = isRecord(value.headers) ? value.headers : {};
      headers['x-request-id'] = ref('headers', 'RequestId');
      if (route?.rateLimited) Object.assign(headers, rateLimitHeaders());
      value.headers = headers;
    }
  }
  op.responses = withHtmlErrors(responses, route?.htmlErrors ?? {});
  applyExample(op, op.responses as Json, route?.example);
}

const HTML_PAGE = { 'text/html': { schema: { type: 'string', description: 'An HTML page saying what went wrong.' } } };

/**
 * A browser page's error answers (`schema.htmlErrors`): a page, or, where the same status is also
 * answered as JSON (to API clients of a route that takes both), both media types.
 */
function withHtmlErrors(responses: Json, htmlErrors: Partial<Record<number, HtmlError>>): Json {
  if (Object.keys(htmlErrors).length === 0) return responses;
  for (const [status, declared] of Object.entries(htmlErrors)) {
    if (declared === undefined) continue;
    const code = Number(status);
    const current = responses[status];
    const when = typeof declared === 'string' ? declared : declared.when;
    const alsoJson = typeof declared !== 'string' || (isRecord(current) && (current.$ref === `#/components/responses/Error${code}` || isServiceError(current)));
    const headers: Json = { 'x-request-id': ref('headers', 'RequestId') };
    if (code === 429) Object.assign(headers, { 'retry-after': ref('headers', 'RetryAfter') }, rateLimitHeaders());
    responses[status] = alsoJson
      ? {
          description: `${statusDescription(code)}\n\nAs an HTML page (text/html) instead: ${when}`,
          headers,
          content: { 'application/json': { schema: ref('schemas', code === 422 ? 'HTTPValidationError' : 'ErrorResponseBody') }, ...HTML_PAGE },
        }
      : { description: `${REASONS[code] ?? `HTTP ${code}`}, answered as an HTML page: ${when}`, headers, content: HTML_PAGE };
  }
  return Object.fromEntries(Object.entries(responses).sort(([a], [b]) => a.localeCompare(b)));
}

/** A success response's description: the schema's own words (or its named component's) when it has them, else the operation's summary. */
function successDescription(op: Json, response: Json, schemas: Json): string {
  const content = isRecord(response.content) ? Object.values(response.content)[0] : undefined;
  let schema = isRecord(content) && isRecord(content.schema) ? content.schema : undefined;
  if (schema && typeof schema.description !== 'string' && typeof schema.$ref === 'string') {
    const named = schemas[schema.$ref.split('/').pop() ?? ''];
    if (isRecord(named)) schema = named;
  }
  if (schema && typeof schema.description === 'string') return schema.description;
  const summary = typeof op.summary === 'string' ? op.summary : 'The operation';
  return `Success (${summary.charAt(0).toLowerCase()}${summary.slice(1)}).`;
}

function applyExample(op: Json, responses: Json, example: OperationExample | undefined): void {
  if (!example) return;
  const { request } = example;
  if (request !== undefined) {
    // One example object for the whole call: parameters take their values by name, the body the rest.
    const params = (Array.isArray(op.parameters) ? op.parameters : []).filter(isRecord);
    const names = new Set(params.map((p) => p.name));
    if (isRecord(request)) for (const p of params) if (typeof p.name === 'string' && p.name in request) p.example = request[p.name];
    const body = isRecord(request) ? Object.fromEntries(Object.entries(request).filter(([k]) => !names.has(k))) : request;
    if (isRecord(op.requestBody) && isRecord(op.requestBody.content)) {
      for (const media of Object.values(op.requestBody.content)) if (isRecord(media)) media.example = body;
    }
  }
  if (example.response !== undefined) {
    const ok = Object.entries(responses).find(([k, v]) => k.startsWith('2') && isRecord(v) && isRecord(v.content));
    const media = ok && isRecord(ok[1]) && isRecord(ok[1].content) ? Object.values(ok[1].content)[0] : undefined;
    if (isRecord(media)) media.example = example.response;
  }
}

/** Every `$ref` string under `value`. */
function refsIn(value: unknown, out: Set<string>): Set<string> {
  if (Array.isArray(value)) for (const v of value) refsIn(v, out);
  else if (isRecord(value)) {
    for (const [k, v] of Object.entries(value)) {
      if (k === '$ref' && typeof v === 'string') out.add(v);
      else refsIn(v, out);
    }
  }
  return out;
}

function rewriteRefs(value: unknown, from: string, to: string): void {
  if (Array.isArray(value)) for (const v of value) rewriteRefs(v, from, to);
  else if (isRecord(value)) {
    for (const [k, v] of Object.entries(value)) {
      if (k === '$ref' && v === from) value[k] = to;
      else rewriteRefs(v, from, to);
    }
  }
}

/**
 * Any JSON value, spelled out: what `{}` (zod's `unknown`) means inside a JSON body, typed for
 * client generators. The recursion goes through JsonObject only (openapi-typescript cannot emit a
 * self-referencing union or array alias); arrays nest two deep in the type (the server takes any depth up to its limits).
 */
function jsonValue(arrayDepth = 2): Json {
  const scalars = [{ type: 'string' }, { type: 'number' }, { type: 'boolean' }, { type: 'null' }, ref('schemas', 'JsonObject')];
  return { anyOf: arrayDepth > 0 ? [...scalars, { type: 'array', items: jsonValue(arrayDepth - 1) }] : scalars };
}
const JSON_OBJECT = { type: 'object', description: 'A JSON object with any members.', additionalProperties: jsonValue() };

const SUBSCHEMA_KEYS = new Set(['additionalProperties', 'items', 'schema']);
const SUBSCHEMA_LISTS = new Set(['anyOf', 'oneOf', 'allOf', 'prefixItems']);

/** Empty schemas (free-form values) become "any JSON value" spelled out, so no generated client types a body field as `unknown`. Examples are left alone. */
function typeFreeFormValues(value: unknown): boolean {
  const JSON_VALUE = () => jsonValue();
  let used = false;
  const isEmpty = (v: unknown) => isRecord(v) && Object.keys(v).length === 0;
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) {
      for (const item of node) visit(item);
      return;
    }
    if (!isRecord(node)) return;
    for (const [k, v] of Object.entries(node)) {
      if (k === 'example' || k === 'examples') continue;
      if (SUBSCHEMA_KEYS.has(k) && isEmpty(v)) {
        node[k] = JSON_VALUE();
        used = true;
      } else if (k === 'properties' && isRecord(v)) {
        for (const [name, p] of Object.entries(v)) {
          if (isEmpty(p)) {
            v[name] = JSON_VALUE();
            used = true;
          } else if (isRecord(p) && Object.keys(p).every((key) => key === 'description') && Object.keys(p).length > 0) {
            v[name] = { ...p, ...JSON_VALUE() };
            used = true;
          } else visit(p);
        }
      } else if (SUBSCHEMA_LISTS.has(k) && Array.isArray(v)) {
        v.forEach((item, i) => {
          if (isEmpty(item)) {
            v[i] = JSON_VALUE();
            used = true;
          } else visit(item);
        });
      } else visit(v);
    }
  };
  visit(value);
  return used;
}

/**
 * A request field declared `z.never()` is a refusal with a reason (PATCH of a key's `scopes`: 422
 * "Scopes cannot be changed …"), not part of the contract: it leaves the document (JSON Schema's
 * `not: {}`, which generators type as `unknown`), and the operation's description says why.
 */
function dropRefusedFields(value: unknown): void {
  if (Array.isArray(value)) for (const v of value) dropRefusedFields(v);
  else if (isRecord(value)) {
    const props = value.properties;
    if (isRecord(props)) {
      for (const [name, p] of Object.entries(props)) {
        if (isRecord(p) && isRecord(p.not) && Object.keys(p.not).length === 0) {
          delete props[name];
          if (Array.isArray(value.required)) value.required = value.required.filter((r) => r !== name);
        }
      }
    }
    for (const v of Object.values(value)) dropRefusedFields(v);
  }
}

const MAX_SAFE = Number.MAX_SAFE_INTEGER;

/** zod writes ±(2^53−1) as the bounds of every `.int()`: noise to readers and generators; JSON numbers have no such bound. */
function dropSafeIntegerBounds(value: unknown): void {
  if (Array.isArray(value)) for (const v of value) dropSafeIntegerBounds(v);
  else if (isRecord(value)) {
    if (value.minimum === -MAX_SAFE) delete value.minimum;
    if (value.maximum === MAX_SAFE) delete value.maximum;
    for (const v of Object.values(value)) dropSafeIntegerBounds(v);
  }
}

/**
 * One schema per concept: fastify-type-provider-zod emits every named schema twice (`X` for
 * answers, `XInput` for requests). Where both are the same, requests point at `X` and `XInput`
 * goes; where they differ (defaults make fields optional in a request), both stay. Then every
 * component no operation reaches is dropped.
 */
function mergeInputSchemas(doc: Json, variants: ReadonlySet<string>): void {
  const components = doc.components as Json;
  const schemas = components.schemas as Json;
  let changed = true;
  while (changed) {
    changed = false;
    for (const name of Object.keys(schemas)) {
      const base = name.slice(0, -'Input'.length);
      if (!variants.has(name) || !(base in schemas)) continue;
      const from = `#/components/schemas/${name}`;
      const to = `#/components/schemas/${base}`;
      const candidate = structuredClone(schemas[name]);
      rewriteRefs(candidate, from, to);
      if (!isDeepStrictEqual(candidate, schemas[base])) continue;
      delete schemas[name];
      rewriteRefs(doc, from, to);
      changed = true;
    }
  }
}

/** The request variants fastify-type-provider-zod made (`XInput` beside `X`), told apart from ids that merely end in "Input" (`ForecastInput`). */
function inputVariants(doc: Json): Set<string> {
  const schemas = (doc.components as Json).schemas as Json;
  return new Set(Object.keys(schemas).filter((n) => n.endsWith('Input') && n.slice(0, -'Input'.length) in schemas));
}

function pruneComponents(doc: Json, variants: ReadonlySet<string>): void {
  const components = doc.components as Json;
  const reachable = new Set<string>();
  let frontier = refsIn({ paths: doc.paths }, new Set());
  while (frontier.size > 0) {
    const next = new Set<string>();
    for (const r of frontier) {
      if (reachable.has(r)) continue;
      reachable.add(r);
      const [, , kind, name] = r.split('/');
      const target = kind && name ? (components[kind] as Json | undefined)?.[name] : undefined;
      refsIn(target, next);
    }
    frontier = next;
  }
  for (const kind of ['schemas', 'responses', 'headers'] as const) {
    const group = components[kind] as Json | undefined;
    if (!group) continue;
    for (const name of Object.keys(group)) if (!reachable.has(`#/components/${kind}/${name}`)) delete group[name];
  }
  // A request schema with no answer twin is the concept itself: `XInput` becomes `X`.
  const schemas = components.schemas as Json;
  for (const name of Object.keys(schemas)) {
    const base = name.slice(0, -'Input'.length);
    if (!variants.has(name) || base in schemas) continue;
    schemas[base] = schemas[name];
    delete schemas[name];
    rewriteRefs(doc, `#/components/schemas/${name}`, `#/components/schemas/${base}`);
  }
  components.schemas = Object.fromEntries(Object.entries(schemas).sort(([a], [b]) => a.localeCompare(b)));
}

/** Gives every operation what the rules require (see openApiTransforms) and tidies the components. */
export function finishDocument(doc: Json, routes: ReadonlyMap<string, RouteDoc>): Json {
  const usedStatuses = new Set<number>();
  const paths = (doc.paths ?? {}) as Json;
  const tagsUsed = new Set<string>();
  for (const item of Object.values(paths)) {
    if (!isRecord(item)) continue;
    for (const op of Object.values(item)) {
      if (!isRecord(op)) continue;
      const route = typeof op.operationId === 'string' ? routes.get(op.operationId) : undefined;
      finishOperation(op, route, usedStatuses, ((doc.components as Json | undefined)?.schemas ?? {}) as Json);
      for (const t of Array.isArray(op.tags) ? op.tags : []) tagsUsed.add(String(t));
    }
  }
  doc.tags = [...tagsUsed].sort().map((name) => ({ name, description: TAGS[name] ?? '' }));
  const components = (doc.components ?? {}) as Json;
  components.responses = { ...(components.responses as Json | undefined), ...errorResponses(usedStatuses) };
  components.headers = { ...(components.headers as Json | undefined), ...HEADERS };
  doc.components = components;
  dropSafeIntegerBounds(doc);
  dropRefusedFields(doc);
  const inPaths = typeFreeFormValues(doc.paths);
  const inSchemas = typeFreeFormValues(components.schemas);
  if (inPaths || inSchemas) (components.schemas as Json).JsonObject = JSON_OBJECT;
  const variants = inputVariants(doc);
  mergeInputSchemas(doc, variants);
  pruneComponents(doc, variants);
  return doc;
}
