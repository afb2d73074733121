import { createIdleCompactor } from './idle-compaction.ts';
import { newId } from '../shared/ids.ts';
import cookie from '@fastify/cookie';
import formbody from '@fastify/formbody';
import swagger from '@fastify/swagger';
import FindMyWay, { type HTTPMethod } from 'find-my-way';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyRequest } from 'fastify';
import { serializerCompiler } from 'fastify-type-provider-zod';
import type { z } from 'zod';
import type { Deps } from '../deps-types.ts';
import { registerRefusalLog } from './refusals.ts';
import { sendRestError } from './errors.ts';
import { clientErrorHandler, frameworkErrors } from './framework-errors.ts';
import { BODY_TOO_SLOW, watchBodyRate, watchSend } from './progress.ts';
import { BodyParseError, SchemaValidationError } from './validation.ts';
import { registerAuthHook } from './auth.ts';
import { registerCsrfHook } from './csrf.ts';
import { openApiTransforms } from './openapi.ts';
import { registerRateLimitHook } from '../ratelimit/hook.ts';
import { registerMetricsHook } from '../metrics/http.ts';
import { AppError, ValidationFailure } from '../shared/errors.ts';
import { findJsonProblemSliced } from '../shared/json.ts';
import { MCP_PATH } from '../oauth/endpoints.ts';
import { yieldTurn as nextTurn } from '../shared/turns.ts';
import { type ColumnsOption, ForbiddenPrototype, parseJsonSliced } from '../shared/json-sliced.ts';

/**
 * Bodies from this size on (a 100,000 × 20 target is 5.7 MB) are parsed in slices, then walked,
 * validated and prepared in separate turns of the event loop, never together. (A 512 KiB body of
 * 85,000 small objects was 30–140 ms of one JSON.parse; at 64 KiB it is a few ms.)
 */
const LARGE_BODY_BYTES = 64 * 1024;
export const isLargeBody = (req: FastifyRequest): boolean => Number(req.headers['content-length'] ?? 0) >= LARGE_BODY_BYTES;
const hasBody = (req: FastifyRequest): boolean => req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] ?? '0') !== '0';

declare module 'fastify' {
  interface FastifyInstance {
    routeSchemas: Map<string, unknown>;
  }
  interface FastifyContextConfig {
    /** Headers of the route's 200 answer, as OpenAPI header schemas (the cost headers of credit-spending operations). */
    responseHeaders?: Record<string, { type: string; description: string }>;
    /** Large numeric arrays of the body read into typed columns (the operation's `bodyColumns`). */
    bodyColumns?: ColumnsOption;
    /** The route only answers 405 (GET and DELETE /mcp): other methods' 405 does not offer it. */
    methodNotAllowed?: boolean;
  }
}

const API_DESCRIPTION = [
  'Probabilistic forecasts from time-series foundation models and statistical models.',
  '',
  'Authenticate with `Authorization: Bearer <API key>`; operations marked with no security are public.',
  'Errors are `{error, code, request_id}` (422: `{detail[]}` naming each field); every code, its cause and its fix: /docs/errors.',
  'Authenticated calls are rate-limited per account (`X-RateLimit-*` headers; 429 with `Retry-After`).',
  'Which model to use, with measured accuracy and speed: /docs/models.',
].join('\n');

const REQUEST_ID_RE = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * TRUST_PROXY as Fastify takes it. A hop count n trusts the n nearest hops (the address is the
 * n-th X-Forwarded-For entry from the right), the way Fastify treats a number.
 */
function trustProxyOption(v: false | number | string[]): boolean | string[] | ((address: string, hop: number) => boolean) {
  if (typeof v === 'number') return (_address, hop) => hop < v;
  return v;
}

/** Path parameters whose value is a credential (e.g. the local checkout link's secret). */
const SECRET_PARAM = /token|secret|code/i;
/** Anything shaped like one of our bearer secrets (`tsf…_` + 43 base64url characters). */
const SECRET_SHAPE = /tsf[a-z]{0,3}_[A-Za-z0-9_-]{20,}/g;

/**
 * The path as logged: never the query string (it can carry codes and tokens), and path
 * parameters that are credentials replaced by their name, so link secrets never reach the logs.
 */
export function loggablePath(req: FastifyRequest): string {
  const pattern = req.routeOptions?.url;
  const params = (req.params ?? {}) as Record<string, unknown>;
  if (pattern && Object.keys(params).some((k) => SECRET_PARAM.test(k))) {
    return pattern.replace(/:([A-Za-z0-9_]+)/g, (m, name: string) => {
      const v = params[name];
      return SECRET_PARAM.test(name) || typeof v !== 'string' ? m : encodeURIComponent(v);
    });
  }
  return (req.url.split('?')[0] ?? '').replace(SECRET_SHAPE, '[redacted]');
}

/** Node's own timeouts of a request's headers and body, and how often it checks them. */
function httpServerOptions(requestTimeoutMs: number): { requestTimeout: number; headersTimeout: number; connectionsCheckingInterval: number } {
  const headersTimeout = requestTimeoutMs > 0 ? Math.min(60_000, requestTimeoutMs) : 60_000;
  return { requestTimeout: requestTimeoutMs, headersTimeout, connectionsCheckingInterval: Math.min(5_000, Math.max(100, Math.floor(headersTimeout / 4))) };
}

/** The Fastify app with everything but the routes: parsing, errors, OpenAPI, auth and rate-limit hooks. */
export async function createHttpServer(deps: Deps): Promise<FastifyInstance> {
  const { config } = deps;
  const app = Fastify({
    logger:
      deps.logger === false
        ? false
        : {
            level: config.logLevel,
            ...(deps.logStream ? { stream: deps.logStream } : {}),
            redact: ['req.headers.authorization', 'req.headers.cookie', 'res.headers["set-cookie"]'],
            serializers: {
              req: (req: FastifyRequest) => ({ method: req.method, url: loggablePath(req), remoteAddress: req.ip }),
            },
          },
    bodyLimit: config.bodyLimitBytes,
    // How long a connection may take to send a request (ADR 0040): headers and body in all within
    // REQUEST_TIMEOUT_MS (Fastify's default is no limit), headers alone within 60 s at most, checked
    // often enough that the limit holds within a few seconds (Node checks every 30 s by default).
    requestTimeout: config.http.requestTimeoutMs,
    http: httpServerOptions(config.http.requestTimeoutMs),
    trustProxy: trustProxyOption(config.trustProxy),
    requestIdHeader: false,
    // Time-ordered (UUIDv7, `req_` + 32 hex as before): usage events are indexed by (user_id,
    // request_id), and ids that grow with time land at the end of that index instead of on a
    // random page of it, which made every metering commit write a page per call (ADR 0023).
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID_RE.test(given) ? given : newId('req');
    },
    routerOptions: { ignoreTrailingSlash: true },
    // What the router and Node's HTTP parser refuse before any route runs, in the {error, code, request_id} shape.
    frameworkErrors,
    clientErrorHandler: (err, socket) => clientError(err, socket),
    ajv: undefined,
  });
  const clientError = clientErrorHandler(app.log);

  app.setValidatorCompiler<z.ZodType>(({ schema, httpPart }) => (data: unknown) => {
    const r = schema.safeParse(data);
    if (r.success) return { value: r.data };
    return { error: new SchemaValidationError(httpPart ?? 'body', r.error.issues, data) };
  });
  app.setSerializerCompiler(serializerCompiler);

  // JSON bodies: an empty body means "no body" (handy for POST /logout); malformed JSON is a 422.
  const defaultJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') return done(null, undefined);
    // A large body is parsed in slices between turns of the event loop (src/shared/json-sliced.ts),
    // refusing in slices too what the safe parser refuses (__proto__, constructor.prototype, however
    // escaped), with its message. Bad JSON goes to the safe parser, which says where it is wrong.
    if (text.length >= LARGE_BODY_BYTES) {
      const columns = req.routeOptions.config.bodyColumns;
      parseJsonSliced(text, { forbidPrototype: true, ...(columns ? { columns } : {}) }).then(
        (value) => done(null, value),
        // A forbidden key: the safe parser's own answer, from a text that holds only that (no blocking parse).
        (err) => parseSafely(req, err instanceof ForbiddenPrototype ? '{"__proto__":1}' : text, done),
      );
      return;
    }
    parseSafely(req, text, done);
  });
  function parseSafely(req: FastifyRequest, text: string, done: (err: Error | null, value?: unknown) => void): void {
    defaultJson(req, text, (err, value) => {
      if (err) {
        // The safe parser's message says only "not valid JSON"; JSON.parse's says where (line, column).
        let where = err.message;
        try {
          JSON.parse(text);
        } catch (e) {
          if (e instanceof Error) where = e.message;
        }
        return done(new BodyParseError(where), undefined);
      }
      done(null, value);
    });
  }
  await app.register(formbody);
  await app.register(cookie);

  // Memory goes back after large requests: once none is in flight for a while (idle-compaction.ts).
  const compactor = createIdleCompactor({
    // MEMORY_IDLE_COMPACT_MB=0 turns it off: the collection pauses the thread (ADR 0010, sixth pass).
    idleMs: config.memory.idleCompactGrowthBytes > 0 ? config.memory.idleCompactMs : 0,
    growthBytes: config.memory.idleCompactGrowthBytes,
    onCompact: (pauseMs, freedBytes) => app.log.debug({ pauseMs: Math.round(pauseMs), freedMb: Math.round(freedBytes / 1048576) }, 'idle heap compaction'),
  });
  app.decorate('idleCompactor', compactor);
  app.addHook('onClose', async () => compactor.close());
  app.addHook('onRequest', async (req, reply) => {
    reply.header('x-request-id', req.id);
    compactor.begin();
    // 'close' comes once per response, sent or aborted.
    reply.raw.once('close', () => compactor.end());
  });
  registerCsrfHook(app, config);
  // Bodies are read as sent: a compressed one (gzip, br, …) would be parsed as JSON, CSV or a form
  // and refused for the wrong reason. One refusal for every route, before any parser runs (/mcp and
  // the OAuth routes answer it in their own shapes from the AppError).
  app.addHook('preParsing', async (req, reply, payload) => {
    const encoding = req.headers['content-encoding']?.trim().toLowerCase();
    if (encoding && encoding !== 'identity' && hasBody(req)) {
      const named = encoding.length <= 40 ? `'${encoding}'` : 'given';
      throw new AppError('unsupported_media_type', `Content-Encoding ${named} is not accepted: send the body uncompressed (no Content-Encoding header)`, {
        'accept-encoding': 'identity',
      });
    }
    // The body is about to be read (the credential is already checked): it must keep coming.
    if (hasBody(req)) {
      const { bodyMinBytesPerSecond: minBytesPerSecond, bodyRateWindowMs: windowMs } = config.http;
      watchBodyRate(req, reply, { minBytesPerSecond, windowMs }, (socket) =>
        clientError(Object.assign(new Error('request body too slow'), { code: BODY_TOO_SLOW }), socket),
      );
    }
    return payload;
  });

  // An answer whose client stopped reading is dropped after RESPONSE_SEND_TIMEOUT_MS without
  // progress (src/http/progress.ts, ADR 0040).
  const sendTimeoutMs = config.http.sendTimeoutMs;
  if (sendTimeoutMs > 0) {
    app.addHook('onSend', async (req, reply, payload) => {
      watchSend(reply.raw, sendTimeoutMs, (written) => req.log.info({ sendTimeoutMs, written }, 'answer not read in time: connection closed'));
      return payload;
    });
  }
  app.setErrorHandler((err: FastifyError | Error, req, reply) => sendRestError(err, req, reply));
  registerRefusalLog(app);
  // A second router holding every route's path, only to answer "which methods does this path
  // take?": a wrong method is a 405 with Allow, not a 404 (find-my-way is Fastify's own router).
  const paths = FindMyWay({ ignoreTrailingSlash: true });
  app.addHook('onRoute', (route) => {
    // A route that only answers 405 (GET /mcp) is not a method the path takes.
    if (route.config?.methodNotAllowed) return;
    for (const m of Array.isArray(route.method) ? route.method : [route.method]) {
      if (!paths.hasRoute(m as HTTPMethod, route.url)) paths.on(m as HTTPMethod, route.url, () => {});
    }
  });
  app.setNotFoundHandler((req, reply) => {
    const path = req.url.split('?')[0] ?? '/';
    // A route of this very method sent us here itself (a static file that is not there): 404. So is
    // a path only HEAD would match, HEAD being implied by GET: there is no method to offer.
    const routed = paths.find(req.method as HTTPMethod, path) !== null;
    const allow = routed ? [] : (['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] as const).filter((m) => m !== req.method && paths.find(m, path) !== null);
    const offer = allow.filter((m) => m !== 'HEAD');
    if (offer.length > 0 && req.method !== 'OPTIONS') {
      void reply
        .code(405)
        .header('allow', allow.join(', '))
        .send({ error: `${req.method} is not allowed on ${path}; use ${offer.join(' or ')}`, code: 'method_not_allowed', request_id: req.id });
      return;
    }
    void reply.code(404).send({ error: `No route for ${req.method} ${path} (GET /openapi.json lists the routes)`, code: 'not_found', request_id: req.id });
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'TSFM forecasting service',
        version: '0.1.0',
        description: API_DESCRIPTION,
        contact: { name: 'The operator of this service', url: `${config.publicBaseUrl}/docs` },
        license: { name: 'Proprietary: terms set by the operator of this service', url: `${config.publicBaseUrl}/docs` },
      },
      servers: [{ url: config.publicBaseUrl, description: 'This service' }],
      components: {
        securitySchemes: {
          bearer: {
            type: 'http',
            scheme: 'bearer',
            description: 'An API key (tsfm_…), a session token (tsfs_…, from POST /api/auth/login) or, on /mcp only, an OAuth access token.',
          },
          metricsToken: { type: 'http', scheme: 'bearer', description: 'METRICS_TOKEN, set by the operator (GET /metrics only).' },
        },
      },
    },
    ...openApiTransforms(),
  });

  // Each route's declared schemas, by "METHOD /pattern": tests check responses against them.
  const routeSchemas = new Map<string, unknown>();
  app.decorate('routeSchemas', routeSchemas);
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const m of methods) routeSchemas.set(`${m} ${route.url}`, route.schema);
  });

  registerMetricsHook(app, deps);
  // Every string a request carries (body of any content type, query, path) is checked once, here,
  // for what neither database can store (NUL, lone surrogates), and every body for nesting deeper
  // than MAX_JSON_DEPTH (a stack overflow waiting to happen in whatever walks it next) or an object
  // of more than MAX_JSON_MEMBERS members. The walk yields every few ms (findJsonProblemSliced).
  app.addHook('preValidation', async (req, reply) => {
    // A large body was parsed in this turn of the event loop: let other requests run before it is walked.
    if (isLargeBody(req)) await nextTurn();
    const parts = [
      ['path', req.params],
      ['query', req.query],
      ['body', req.body],
    ] as const;
    for (const [root, value] of parts) {
      // The MCP endpoint checks its body itself, after the credential, and answers in JSON-RPC (src/mcp/routes.ts).
      if (root === 'body' && req.routeOptions.url === MCP_PATH && req.method === 'POST') continue;
      const problem = await findJsonProblemSliced(value);
      if (!problem) continue;
      if (req.url.startsWith('/oauth/')) {
        // The authorization server's routes answer in their own shape (RFC 6749 JSON, or the
        // authorize page's HTML): thrown to their error handlers, which make it invalid_request.
        throw new ValidationFailure([{ path: [root, ...problem.path], msg: problem.msg, type: problem.type, ...(problem.ctx ? { ctx: problem.ctx } : {}) }]);
      }
      // Answered here, not thrown: /mcp's error handler speaks JSON-RPC, and this refusal of its path or query is REST's.
      return reply.code(422).send({
        detail: [{ loc: [root, ...problem.path], msg: problem.msg, type: problem.type, ...(problem.ctx ? { ctx: problem.ctx } : {}) }],
        request_id: req.id,
      });
    }
  });
  registerAuthHook(app, deps);
  registerRateLimitHook(app, deps);
  return app;
}
