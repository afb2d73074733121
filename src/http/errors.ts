import type { FastifyBaseLogger, FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { isResponseSerializationError } from 'fastify-type-provider-zod';
import { AppError, type ErrorReport, locate, reportError, ValidationFailure } from '../shared/errors.ts';
import { BodyParseError, issuesToDetail, LOC_ROOT, SchemaValidationError } from './validation.ts';

/**
 * The REST boundary's one error mapper. Services' field paths are placed under the request part
 * the route reads its input from (`body`, `query`, `path`), FastAPI-style.
 */
function locPrefix(req: FastifyRequest): string {
  const schema = req.routeOptions.schema;
  if (schema?.body) return 'body';
  if (schema?.querystring) return 'query';
  if (schema?.params) return 'path';
  return 'body';
}

export function sendRestError(err: FastifyError | Error, req: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (err instanceof AppError) {
    for (const [k, v] of Object.entries(err.headers)) reply.header(k, v);
    return reply.code(err.status).send({ error: err.message, code: err.code });
  }
  if (err instanceof SchemaValidationError) {
    return reply.code(422).send({ detail: issuesToDetail(LOC_ROOT[err.part] ?? err.part, err.issues, err.data) });
  }
  if (err instanceof ValidationFailure) {
    return reply.code(422).send({ detail: locate(err.issues, [locPrefix(req)]) });
  }
  if (err instanceof BodyParseError) {
    return reply.code(422).send({ detail: [{ loc: ['body', 0], msg: 'JSON decode error', type: 'json_invalid' }] });
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
  return reply.code(500).send({ error: `Internal server error (request id ${req.id})`, code: 'internal_error', request_id: req.id });
}

/** A failed item of a REST answer (batch): the same mapping, validation paths under `body` (the item's). */
export function restItemReport(err: unknown, itemRequestId: string, log: FastifyBaseLogger): ErrorReport {
  const known = reportError(err, ['body']);
  if (known) return known;
  log.error({ err }, 'batch item failed unexpectedly');
  return { error: `Internal error (request id ${itemRequestId})`, code: 'internal_error', status: 500 };
}
