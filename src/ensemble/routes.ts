import type { Deps } from '../deps.ts';
import { principalOf } from '../http/auth.ts';
import { AUTH_ERRORS, errors } from '../http/schemas.ts';
import type { ZApp } from '../http/types.ts';
import { EnsembleForecastRequest, EnsembleForecastResponseBody } from './schemas.ts';
import { runEnsemble } from './service.ts';
import { CLIENT_HEADER_DOC, usageSourceOf } from '../usage/source.ts';

export function registerEnsembleRoutes(app: ZApp, deps: Deps): void {
  app.post('/v1/forecast/ensemble', {
    config: { auth: 'user' },
    schema: {
      operationId: 'forecastEnsemble',
      description: CLIENT_HEADER_DOC,
      tags: ['forecasting'],
      security: [{ bearer: [] }],
      body: EnsembleForecastRequest,
      response: { 200: EnsembleForecastResponseBody, ...errors(...AUTH_ERRORS, 402, 403, 404, 413, 502, 503, 504) },
    },
    handler: async (req) => {
      const principal = principalOf(req);
      return runEnsemble(deps, principal, req.body, { requestId: req.id, source: usageSourceOf(req, principal, 'ensemble') });
    },
  });
}
