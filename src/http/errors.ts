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

/**
 * Every error body carries the request id beside the contract's fields (`{error, code}` or 422
 * `{detail}`), so a user can quote it; 4xx reasons are logged at debug level (src/http/refusals.ts).
 */
export function sendRestError(err: FastifyError | Error, req: FastifyRequest, reply: FastifyReply): FastifyReply {
  const send = (status: number, body: Record<string, unknown>) => reply.code(status).send({ ...body, request_id: req.id });
  if (err instanceof AppError) {
    for (const [k, v] of Object.entries(err.headers)) reply.header(k, v);
    return send(err.status, { error: err.message, code: err.code });
  }
  if (err instanceof SchemaValidationError) {
    return send(422, { detail: issuesToDetail(LOC_ROOT[err.part] ?? err.part, err.issues, err.data) });
  }
  if (err instanceof ValidationFailure) {
    return send(422, { detail: locate(err.issues, [locPrefix(req)]) });
  }
  if (err instanceof BodyParseError) {
    return send(422, { detail: [{ loc: ['body', 0], msg: `Invalid JSON: ${err.detail}`, type: 'json_invalid' }] });
  }
  const fe = err as FastifyError;
  if (isResponseSerializationError(err)) {
    req.log.error({ err }, 'response failed its own schema');
  } else if (fe.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    const limit = req.routeOptions.bodyLimit;
    return send(413, {
      error: `Request body is larger than the limit of ${limit} bytes (BODY_LIMIT_BYTES); send fewer or shorter series per request`,
      code: 'payload_too_large',
    });
  } else if (fe.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return send(415, {
      error: `Unsupported content type '${req.headers['content-type'] ?? 'none'}': send the body as JSON with the header Content-Type: application/json`,
      code: 'unsupported_media_type',
    });
  } else if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    return send(fe.statusCode, { error: fe.message, code: 'request_error' });
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
