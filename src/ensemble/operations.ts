import { FORECAST_ERRORS } from '../forecasting/operations.ts';
import { callInfo, defineOperation, principalOf } from '../shared/operation.ts';
import { EnsembleForecastRequest, EnsembleForecastResponseBody } from './schemas.ts';
import { runEnsemble } from './service.ts';
import { idempotent } from '../idempotency/operation.ts';

export const ensembleOperations = [
  idempotent(
    defineOperation({
      id: 'forecastEnsemble',
      method: 'POST',
      path: '/v1/forecast/ensemble',
      tags: ['forecasting'],
      summary: 'Ensemble forecast',
      description:
        'Ranks candidate models on up to three backtest windows, leaves out those worse than seasonal naive there, and blends the top ones with weights shrunk toward equal. Uses credits.',
      input: EnsembleForecastRequest,
      output: EnsembleForecastResponseBody,
      auth: ['session', 'api_key', 'oauth'],
      errors: FORECAST_ERRORS,
      spendsCredits: true,
      restSource: 'ensemble',
      run: ({ deps, caller, input }) => runEnsemble(deps, principalOf(caller), input, callInfo(caller)),
      summarize: (r) => {
        const m = r.ensemble_metadata;
        return `Ensemble of ${m.models_in_ensemble.join(', ')} (by ${m.scoring_metric}), ${m.total_cost_credits} credits.`;
      },
    }),
  ),
];
