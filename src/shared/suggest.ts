import { distance } from 'fastest-levenshtein';

/**
 * "Did you mean …?" for unknown request fields: first the names people bring from other
 * forecasting APIs (TimeGPT's `h`, `freq`-style habits, `horizon`), then the closest known field by
 * edit distance. Paths are the places the field belongs (`parameters.prediction_length`).
 */
const HABITS: Record<string, string> = {
  h: 'parameters.prediction_length',
  horizon: 'parameters.prediction_length',
  fh: 'parameters.prediction_length',
  steps: 'parameters.prediction_length',
  forecast_horizon: 'parameters.prediction_length',
  prediction_length: 'parameters.prediction_length',
  frequency: 'parameters.frequency',
  freq: 'parameters.frequency',
  level: 'parameters.quantile_levels',
  levels: 'parameters.quantile_levels',
  quantile_levels: 'parameters.quantile_levels',
  quantiles: 'parameters.quantile_levels',
  num_samples: 'parameters.num_samples',
  context_length: 'parameters.context_length',
  y: 'inputs[].target',
  values: 'inputs[].target',
  data: 'inputs[].target',
  series: 'inputs',
  target: 'inputs[].target',
  timestamps: 'inputs[].timestamps',
  ds: 'inputs[].timestamps',
  dates: 'inputs[].timestamps',
  start: 'inputs[].start',
  unique_id: 'inputs[].item_id',
  id: 'inputs[].item_id',
  model_id: 'model',
  model_name: 'model',
};

const KNOWN = [
  'model',
  'inputs',
  'parameters',
  'metadata',
  'models',
  'max_models',
  'budget',
  'top_n',
  'scoring_metric',
  'requests',
  'inputs[].target',
  'inputs[].start',
  'inputs[].timestamps',
  'inputs[].past_covariates',
  'inputs[].future_covariates',
  'inputs[].static_covariates',
  'inputs[].metadata',
  'inputs[].item_id',
  'parameters.prediction_length',
  'parameters.frequency',
  'parameters.quantile_levels',
  'parameters.context_length',
  'parameters.num_samples',
];

/** Where an unknown field `key` (found at `path`) probably belongs, or null. */
export function suggestField(key: string, path: readonly (string | number)[]): string | null {
  const k = key.toLowerCase();
  // The field's own place (`inputs.target` for inputs[0].target): a route whose schema does not
  // take a field other routes take (impute has no `parameters`) must not answer "did you mean
  // 'parameters'?" for `parameters`.
  const self = [...path.filter((p) => typeof p === 'string'), k].join('.');
  const elsewhere = (name: string): boolean => name.replaceAll('[]', '') !== self;
  // Own keys only: `constructor` and the like are not habits (the fuzz test sends them).
  const habit = Object.hasOwn(HABITS, k) ? HABITS[k] : undefined;
  if (habit) return elsewhere(habit) ? habit : null;
  let best: string | null = null;
  let bestD = Number.POSITIVE_INFINITY;
  for (const name of KNOWN.filter(elsewhere)) {
    const leaf = name.split(/[.\]]/).at(-1) as string;
    const d = distance(k, leaf);
    if (d < bestD) {
      best = name;
      bestD = d;
    }
  }
  return best !== null && bestD <= Math.max(1, Math.floor(k.length / 3)) ? best : null;
}

const squash = (s: string) => s.toLowerCase().replace(/[^a-z0-9]/g, '');

/** Catalog ids close to an unknown one (`autoets`, `AutoETS` → `auto-ets`), best first, at most 3. */
export function closeIds(id: string, ids: readonly string[]): string[] {
  const want = squash(id);
  const tail = (s: string) => squash(s.split('/').at(-1) ?? s);
  return ids
    .map((candidate) => ({ candidate, d: Math.min(distance(want, squash(candidate)), distance(want, tail(candidate))) }))
    .filter(({ candidate, d }) => d <= Math.max(2, Math.floor(want.length / 3)) || squash(candidate).includes(want))
    .sort((a, b) => a.d - b.d || a.candidate.localeCompare(b.candidate))
    .slice(0, 3)
    .map(({ candidate }) => candidate);
}

/** The message of a 404 for an unknown model id. */
export function unknownModelMessage(id: string, ids: readonly string[]): string {
  const close = closeIds(id, ids);
  const hint = close.length > 0 ? `; did you mean ${close.map((c) => `'${c}'`).join(' or ')}?` : '';
  return `Model '${id}' is not in the catalog${hint} (GET /api/models lists them)`;
}
