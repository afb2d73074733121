import { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';
import type { Deps } from '../deps.ts';
import { principalOf } from '../http/auth.ts';
import { AppError } from '../http/errors.ts';
import { AUTH_ERRORS, errors } from '../http/schemas.ts';
import type { ZApp } from '../http/types.ts';
import { serialiseJson, type JsonChunks } from '../shared/json.ts';
import { runBatch } from './batch.ts';
import { ForecastBatchRequest, ForecastBatchResponseBody, ForecastRequest, ForecastResponseBody, LIMITS } from './schemas.ts';
import { planForecast, runPlanned } from './service.ts';

const FORECAST_ERRORS = errors(...AUTH_ERRORS, 402, 403, 404, 413, 502, 503, 504);

/**
 * Forecast answers are serialised before the debit (a response that cannot be produced costs
 * nothing), in slices that yield to the event loop, and sent as a stream of those slices: a
 * 2-million-number answer neither pins the main thread nor is joined into one huge string.
 * The response schemas below document the shape; tests check the bodies against them.
 */
function sendJson(reply: FastifyReply, parts: string[]): FastifyReply {
  return reply.type('application/json; charset=utf-8').send(Readable.from(parts, { objectMode: false }));
}

export function registerForecastRoutes(app: ZApp, deps: Deps): void {
  app.post('/v1/forecast', {
    config: { auth: 'user' },
    schema: {
      operationId: 'forecast',
      tags: ['forecasting'],
      security: [{ bearer: [] }],
      body: ForecastRequest,
      response: { 200: ForecastResponseBody, ...FORECAST_ERRORS },
    },
    handler: async (req, reply) => {
      const plan = planForecast(deps, req.body);
      const json = await runPlanned(deps, principalOf(req), plan, { requestId: req.id, source: 'api' }, serialiseJson);
      return sendJson(reply, json.chunks);
    },
  });

  app.post('/v1/forecast/batch', {
    config: { auth: 'user' },
    schema: {
      operationId: 'forecastBatch',
      tags: ['forecasting'],
      security: [{ bearer: [] }],
      body: ForecastBatchRequest,
      response: { 200: ForecastBatchResponseBody, ...FORECAST_ERRORS },
    },
    handler: async (req, reply) => {
      if (req.body.requests.length > LIMITS.maxBatch) {
        throw new AppError('request_too_large', `A batch holds at most ${LIMITS.maxBatch} requests (got ${req.body.requests.length})`);
      }
      const out = await runBatch<JsonChunks>(
        deps,
        principalOf(req),
        req.body.requests,
        { requestId: req.id, source: 'batch' },
        (err) => req.log.error({ err }, 'batch item failed unexpectedly'),
        serialiseJson,
      );
      const parts: string[] = ['{"object":"list","data":['];
      out.data.forEach((item, k) => {
        if (k > 0) parts.push(',');
        if (item.ok) parts.push('{"ok":true,"result":', ...item.result.chunks, ',"error":null}');
        else parts.push(JSON.stringify(item));
      });
      parts.push(']}');
      return sendJson(reply, parts);
    },
  });
}
