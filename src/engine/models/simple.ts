import { driftForecast, naiveForecast, seasonalNaiveForecast } from '../stats/random-walk.ts';
import { statisticalModel } from './common.ts';

/** The random-walk baselines (stats/random-walk.ts), never blended with seasonal naive. */
export { driftForecast, naiveForecast, seasonalNaiveForecast };

export const naive = statisticalModel(
  {
    id: 'naive',
    license: 'MIT',
    name: 'Naive',
    family: 'random walk',
    description: 'Repeats the last observation. The baseline every model must beat.',
    minPoints: 2,
    capabilities: ['fitted_values'],
    quantileMethod: 'analytic: random walk, sd_h = sigma * sqrt(h), sigma from in-sample one-step errors',
  },
  naiveForecast,
);

export const seasonalNaive = statisticalModel(
  {
    id: 'seasonal-naive',
    license: 'MIT',
    name: 'Seasonal naive',
    family: 'random walk',
    description: 'Repeats the last observed season; falls back to naive when the series is shorter than a season.',
    minPoints: 2,
    capabilities: ['seasonality', 'fitted_values'],
    quantileMethod: 'analytic: seasonal random walk, sd_h = sigma * sqrt(floor((h-1)/m) + 1), sigma from in-sample seasonal errors',
  },
  seasonalNaiveForecast,
);

export const drift = statisticalModel(
  {
    id: 'drift',
    license: 'MIT',
    name: 'Random walk with drift',
    family: 'random walk',
    description: 'Extends the line from the first to the last observation; strong on short yearly series.',
    minPoints: 2,
    capabilities: ['fitted_values'],
    quantileMethod: 'analytic: random walk with drift, sd_h = sigma * sqrt(h * (1 + h / (n - 1)))',
  },
  driftForecast,
);
