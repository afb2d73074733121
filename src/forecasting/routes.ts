import type { Deps } from '../deps.ts';
import { principalOf } from '../http/auth.ts';
import { AppError } from '../http/errors.ts';
import { AUTH_ERRORS, errors } from '../http/schemas.ts';
import type { ZApp } from '../http/types.ts';
import { runBatch } from './batch.ts';
import { ForecastBatchRequest, ForecastBatchResponseBody, ForecastRequest, ForecastResponseBody, LIMITS } from './schemas.ts';
import { runForecast } from './service.ts';
import { CLIENT_HEADER_DOC, usageSourceOf } from '../usage/source.ts';

const FORECAST_ERRORS = errors(...AUTH_ERRORS, 402, 403, 404, 413, 502, 503, 504);

export function registerForecastRoutes(app: ZApp, deps: Deps): void {
  app.post('/v1/forecast', {
    config: { auth: 'user' },
    schema: {
      operationId: 'forecast',
      description: CLIENT_HEADER_DOC,
      tags: ['forecasting'],
      security: [{ bearer: [] }],
      body: ForecastRequest,
      response: { 200: ForecastResponseBody, ...FORECAST_ERRORS },
    },
    handler: async (req) => {
      const principal = principalOf(req);
      return runForecast(deps, principal, req.body, { requestId: req.id, source: usageSourceOf(req, principal, 'api') });
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
    handler: async (req) => {
      if (req.body.requests.length > LIMITS.maxBatch) {
        throw new AppError('request_too_large', `A batch holds at most ${LIMITS.maxBatch} requests (got ${req.body.requests.length})`);
      }
      return runBatch(deps, principalOf(req), req.body.requests, { requestId: req.id, source: 'batch' }, (err) =>
        req.log.error({ err }, 'batch item failed unexpectedly'),
      );
    },
  });
}
