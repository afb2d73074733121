import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger, FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, ERROR_STATUS, type ErrorCode } from '../shared/errors.ts';
import { newId } from '../shared/ids.ts';
import { sendRestError } from './errors.ts';
import { BODY_TOO_SLOW } from './progress.ts';

/** Paths are quoted in a message up to this length; a longer one is described, never echoed. */
const MAX_QUOTED_PATH = 100;

const quotePath = (path: string): string => (path.length <= MAX_QUOTED_PATH ? `'${path}'` : `of ${path.length} characters`);

/**
 * What Fastify's router refuses before any route runs (Fastify's `frameworkErrors`): a path that
 * is not valid percent-encoding, a path parameter longer than the router's limit (100 characters;
 * no id of this service comes near). Answered by the REST error mapper, in the `{error, code,
 * request_id}` shape, without quoting a long path back.
 */
export function frameworkErrors(err: FastifyError, req: FastifyRequest, reply: FastifyReply): FastifyReply {
  reply.header('x-request-id', req.id);
  const path = (req.raw.url ?? '').split('?')[0] ?? '';
  if (err.code === 'FST_ERR_BAD_URL') {
    return sendRestError(
      new AppError(
        'request_error',
        `The path ${quotePath(path)} is not valid percent-encoding: '%' must start a %XX escape of UTF-8 bytes (send a literal '%' as %25)`,
      ),
      req,
      reply,
    );
  }
  if (err.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    return sendRestError(
      new AppError('uri_too_long', `The path ${quotePath(path)} has a segment longer than 100 characters, the most a path parameter (an id) may be`),
      req,
      reply,
    );
  }
  // FST_ERR_ASYNC_CONSTRAINT (no route here has an asynchronous constraint) and anything newer: a fault of ours.
  return sendRestError(err, req, reply);
}

/** The parser's reason when it is one of its own short fixed sentences (never the client's bytes). */
const PARSER_REASON = /^[A-Za-z][A-Za-z0-9 '.,-]{0,99}$/;

/** What an HTTP parse failure (Node's `clientError`) is answered with: status from the code table, and why. */
export function clientErrorAnswer(err: NodeJS.ErrnoException & { reason?: unknown }): { code: ErrorCode; error: string } {
  if (err.code === 'HPE_HEADER_OVERFLOW') {
    return {
      code: 'headers_too_large',
      error: 'The request line and headers are larger than the server accepts (16 KiB in all); send fewer or shorter headers',
    };
  }
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return {
      code: 'request_timeout',
      error: 'The request did not arrive in time: its headers and body must be sent within REQUEST_TIMEOUT_MS (60 s by default)',
    };
  }
  if (err.code === BODY_TOO_SLOW) {
    return {
      code: 'request_timeout',
      error: 'The request body arrived too slowly: at least REQUEST_BODY_MIN_BYTES_PER_SECOND (1024 by default) over every REQUEST_BODY_RATE_WINDOW_MS (10 s)',
    };
  }
  const reason = typeof err.reason === 'string' && PARSER_REASON.test(err.reason) ? ` (${err.reason})` : '';
  const what =
    err.code === 'HPE_INVALID_CONTENT_LENGTH' || err.code === 'HPE_UNEXPECTED_CONTENT_LENGTH'
      ? 'its Content-Length header is not one decimal number'
      : err.code === 'HPE_INVALID_TRANSFER_ENCODING'
        ? 'it sends both Content-Length and Transfer-Encoding, or a Transfer-Encoding other than chunked last'
        : 'it is not well-formed HTTP/1.1';
  return { code: 'request_error', error: `The HTTP request could not be read: ${what}${reason}` };
}

/**
 * Node's HTTP parser refusing a request (malformed Content-Length, Content-Length with
 * Transfer-Encoding, headers over the size limit, a timeout): there is no request object, so the
 * answer is written on the socket here, in the same `{error, code, request_id}` shape as every
 * other error, with a fresh request id in the body and the `x-request-id` header, then the
 * connection is closed (what follows on it cannot be framed).
 */
export function clientErrorHandler(log: FastifyBaseLogger) {
  return (err: NodeJS.ErrnoException & { reason?: unknown }, socket: Socket): void => {
    // A reset connection has nobody to answer.
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    const { code, error } = clientErrorAnswer(err);
    const status = ERROR_STATUS[code];
    const id = newId('req');
    log.debug({ status, reason: code, parser: err.code, request_id: id }, 'request refused by the HTTP parser');
    const body = JSON.stringify({ error, code, request_id: id });
    if (socket.writable) {
      socket.write(
        `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\n` +
          `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
          `x-request-id: ${id}\r\nConnection: close\r\n\r\n${body}`,
      );
    }
    socket.destroy();
  };
}
