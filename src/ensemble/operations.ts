import { FORECAST_ERRORS } from '../forecasting/operations.ts';
import { callInfo, defineOperation, principalOf } from '../shared/operation.ts';
import { EnsembleForecastRequest, EnsembleForecastResponseBody } from './schemas.ts';
import { runEnsemble } from './service.ts';
import { idempotent } from '../idempotency/operation.ts';
import { withDryRun } from '../forecasting/dry-run.ts';
import { parseTimestampsAhead } from '../forecasting/frequency.ts';
import { serialiseJson } from '../shared/json.ts';

export const ensembleOperations = [
  idempotent(
    withDryRun(
      defineOperation({
        id: 'forecastEnsemble',
        method: 'POST',
        path: '/v1/forecast/ensemble',
        tags: ['forecasting'],
        summary: 'Ensemble forecast',
        description:
          'Ranks candidate models on up to three backtest windows, leaves out those more than 25% worse than seasonal naive there, and blends the top ones with weights shrunk toward equal. Uses credits.',
        input: EnsembleForecastRequest,
        prepare: parseTimestampsAhead,
        example: {
          request: {
            inputs: [
              {
                target: [112, 118, 132, 129, 121, 135, 148, 148, 136, 119, 104, 118, 115, 126, 141, 135, 125, 149, 170, 170, 158, 133, 114, 140],
                start: '1949-01-01',
              },
            ],
            parameters: { prediction_length: 6, frequency: 'MS' },
            models: ['auto-ets', 'auto-arima', 'seasonal-naive'],
            top_n: 2,
          },
        },
        output: EnsembleForecastResponseBody,
        auth: ['session', 'api_key', 'oauth'],
        scope: 'forecast',
        errors: FORECAST_ERRORS,
        spendsCredits: true,
        restSource: 'ensemble',
        run: ({ deps, caller, input }) => runEnsemble(deps, principalOf(caller), input, callInfo(caller)),
        // Serialised (in slices) before the debit, like a forecast.
        runSerialised: ({ deps, caller, input }) => runEnsemble(deps, principalOf(caller), input, callInfo(caller), serialiseJson),
        summarize: (r) => {
          const m = r.ensemble_metadata;
          return `Ensemble of ${m.models_in_ensemble.join(', ')} (by ${m.scoring_metric}), ${m.total_cost_credits} credits.`;
        },
      }),
      'forecastEnsemble',
    ),
  ),
];
