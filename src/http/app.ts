import { randomUUID } from 'node:crypto';
import cookie from '@fastify/cookie';
import formbody from '@fastify/formbody';
import swagger from '@fastify/swagger';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import {
  isResponseSerializationError,
  jsonSchemaTransform,
  jsonSchemaTransformObject,
  serializerCompiler,
  type ZodTypeProvider,
} from 'fastify-type-provider-zod';
import type { z } from 'zod';
import type { Deps } from '../deps.ts';
import { AppError, ValidationFailure } from './errors.ts';
import { issuesToDetail, LOC_ROOT, SchemaValidationError } from './validation.ts';
import { registerAuthHook } from './auth.ts';
import { registerRoutes } from './routes.ts';
import { registerRateLimitHook } from '../ratelimit/hook.ts';
import { findJsonProblem } from '../shared/json.ts';


declare module 'fastify' {
  interface FastifyInstance {
    routeSchemas: Map<string, unknown>;
  }
}

const REQUEST_ID_RE = /^[A-Za-z0-9._:-]{1,128}$/;

export async function buildApp(deps: Deps): Promise<FastifyInstance> {
  const { config } = deps;
  const app = Fastify({
    logger:
      deps.logger === false
        ? false
        : {
            level: config.logLevel,
            redact: ['req.headers.authorization', 'req.headers.cookie', 'res.headers["set-cookie"]'],
            serializers: {
              // The path only: query strings can carry codes and tokens.
              req: (req: FastifyRequest) => ({ method: req.method, url: req.url.split('?')[0], remoteAddress: req.ip }),
            },
          },
    bodyLimit: config.bodyLimitBytes,
    trustProxy: config.trustProxy,
    requestIdHeader: false,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID_RE.test(given) ? given : `req_${randomUUID().replaceAll('-', '')}`;
    },
    routerOptions: { ignoreTrailingSlash: true },
    ajv: undefined,
  });

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
    defaultJson(req, text, (err, value) => {
      if (err) return done(new ValidationFailure([{ loc: ['body', 0], msg: 'JSON decode error', type: 'json_invalid' }]), undefined);
      done(null, value);
    });
  });
  await app.register(formbody);
  await app.register(cookie);

  app.addHook('onRequest', async (req, reply) => {
    reply.header('x-request-id', req.id);
  });

  app.setErrorHandler((err: FastifyError | Error, req, reply) => sendError(err, req, reply));
  app.setNotFoundHandler((req, reply) => {
    void reply.code(404).send({ error: `No route for ${req.method} ${req.url.split('?')[0]}`, code: 'not_found' });
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'TSFM forecasting service',
        version: '0.1.0',
        description: 'Probabilistic forecasts from time-series foundation models and statistical models.',
      },
      servers: [{ url: config.publicBaseUrl }],
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', description: 'Session token, API key (tsfm_…) or OAuth access token' },
        },
      },
    },
    transform: jsonSchemaTransform,
    transformObject: jsonSchemaTransformObject,
  });

  // Each route's declared schemas, by "METHOD /pattern": tests check responses against them.
  const routeSchemas = new Map<string, unknown>();
  app.decorate('routeSchemas', routeSchemas);
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const m of methods) routeSchemas.set(`${m} ${route.url}`, route.schema);
  });

  // Every string a request carries (body of any content type, query, path) is checked once, here,
  // for what neither database can store (NUL, lone surrogates), and every body for nesting deeper
  // than MAX_JSON_DEPTH (a stack overflow waiting to happen in whatever walks it next).
  app.addHook('preValidation', async (req, reply) => {
    const parts = [
      ['path', req.params],
      ['query', req.query],
      ['body', req.body],
    ] as const;
    for (const [root, value] of parts) {
      const problem = findJsonProblem(value);
      if (!problem) continue;
      if (req.url.startsWith('/oauth/')) {
        // The authorization server answers in RFC 6749's shape.
        return reply.code(400).send({ error: 'invalid_request', error_description: `${[root, ...problem.path].join('.')}: ${problem.msg}` });
      }
      throw new ValidationFailure([{ loc: [root, ...problem.path], msg: problem.msg, type: problem.type }]);
    }
  });
  registerAuthHook(app, deps);
  registerRateLimitHook(app, deps);
  await registerRoutes(app.withTypeProvider<ZodTypeProvider>(), deps);
  return app;
}

function sendError(err: FastifyError | Error, req: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (err instanceof AppError) {
    for (const [k, v] of Object.entries(err.headers)) reply.header(k, v);
    return reply.code(err.status).send({ error: err.message, code: err.code });
  }
  if (err instanceof SchemaValidationError) {
    return reply.code(422).send({ detail: issuesToDetail(LOC_ROOT[err.part] ?? err.part, err.issues, err.data) });
  }
  if (err instanceof ValidationFailure) {
    return reply.code(422).send({ detail: err.detail });
  }
  const fe = err as FastifyError;
  if (isResponseSerializationError(err)) {
    req.log.error({ err }, 'response failed its own schema');
  } else if (fe.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return reply.code(413).send({ error: 'Request body is too large', code: 'payload_too_large' });
  } else if (fe.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return reply.code(415).send({ error: `Unsupported content type: ${req.headers['content-type'] ?? 'none'}`, code: 'unsupported_media_type' });
  } else if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    return reply.code(fe.statusCode).send({ error: fe.message, code: 'request_error' });
  } else {
    req.log.error({ err }, 'unhandled error');
  }
  return reply
    .code(500)
    .send({ error: `Internal server error (request id ${req.id})`, code: 'internal_error', request_id: req.id });
}
