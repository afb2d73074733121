import type { CatalogModel } from '../catalog/catalog.ts';
import { WORK_MS_PER_TOKEN } from '../catalog/pricing.ts';
import { calibrates, seriesWorkMs } from '../engine/work.ts';
import { AppError, ValidationFailure, type FieldIssue } from '../shared/errors.ts';
import { NumericColumns } from '../shared/numeric-columns.ts';
import { checkTimestamps, parseFrequency, parseStart, timesOf, timestampsRepresentable, type Frequency, unknownFrequencyIssue } from './frequency.ts';
import type { Usage } from './metering.ts';
import { LIMITS, type ForecastRequestT } from './schemas.ts';

export const DEFAULT_QUANTILES = [0.1, 0.5, 0.9];

/** One input after validation: a steps × variates matrix (NaN = missing), cut to the context. */
export interface PreparedInput {
  /**
   * variates[v][t]. Typed columns: a large target arrives as columns from the parser
   * (NumericColumns) and goes to the worker thread as they are (a copy of the bytes, not of
   * millions of numbers one by one).
   */
  variates: Float64Array[];
  originalLength: number;
  truncated: boolean;
  observedPoints: number;
  start: Date | null;
  itemId: unknown;
  metadata: Record<string, unknown> | null;
  ignoredCovariates: string[];
}

export interface PreparedForecast {
  model: CatalogModel;
  inputs: PreparedInput[];
  horizon: number;
  /** As requested (order kept); the engine gets them sorted. */
  quantileLevels: number[];
  numSamples: number;
  frequency: Frequency | null;
  /** parameters.add_history: the engine also returns the in-sample fitted values. */
  addHistory: boolean;
  usage: Usage;
  /** The job's estimated model time (src/engine/work.ts), in milliseconds of the reference core; 0 for models priced by tokens alone. */
  workMs: number;
  metadata: Record<string, unknown> | null;
}

const at = (...path: (string | number)[]) => path;

/**
 * Checks everything the schema cannot (shapes across fields, limits, the model's needs) and
 * turns the request into engine-ready series. Problems are reported all at once as 422 detail,
 * except size limits, which are 413 request_too_large.
 */
export interface PrepareLimits {
  /** Largest response accepted, in numbers (FORECAST_MAX_OUTPUT_VALUES). */
  maxOutputValues: number;
  /**
   * Largest estimated model time of one job, in milliseconds (INFERENCE_MAX_JOB_WORK_MS, half the
   * engine's time limit by default): work that could only run into the limit is refused at planning.
   */
  maxJobWorkMs: number;
}

/** Numbers a forecast returns per step of each series: the mean, each quantile level, each sample. */
export const valuesPerStep = (quantileLevels: number, numSamples: number): number => 1 + quantileLevels + numSamples;

export function prepareForecast(req: ForecastRequestT, model: CatalogModel, limits: PrepareLimits): PreparedForecast {
  const p: Partial<NonNullable<ForecastRequestT['parameters']>> = req.parameters ?? {};
  const issues: FieldIssue[] = [];
  const horizon = p.prediction_length ?? 24;

  if (req.inputs.length > LIMITS.maxInputs) {
    throw new AppError('request_too_large', `At most ${LIMITS.maxInputs} inputs per request (got ${req.inputs.length})`);
  }
  const freqCode = p.frequency ?? p.freq ?? null;
  let frequency: Frequency | null = null;
  if (freqCode !== null) {
    frequency = parseFrequency(freqCode);
    if (!frequency) {
      issues.push(unknownFrequencyIssue(freqCode, at('parameters', p.frequency != null ? 'frequency' : 'freq')));
    }
  }
  const levelsRaw = p.quantile_levels ?? p.quantiles ?? DEFAULT_QUANTILES;
  if (new Set(levelsRaw).size !== levelsRaw.length) {
    issues.push({ path: at('parameters', p.quantile_levels ? 'quantile_levels' : 'quantiles'), msg: 'Quantile levels must be distinct', type: 'value_error' });
  }
  if (model.max_horizon !== null && horizon > model.max_horizon) {
    issues.push({
      path: at('parameters', 'prediction_length'),
      msg: `Model '${model.id}' forecasts at most ${model.max_horizon} steps`,
      type: 'less_than_equal',
      input: horizon,
      ctx: { maximum: model.max_horizon },
    });
  }
  const addHistory = p.add_history === true;
  if (addHistory && !model.capabilities.includes('fitted_values')) {
    issues.push({
      path: at('parameters', 'add_history'),
      msg: `Model '${model.id}' has no in-sample fitted values; add_history needs a model with the capability 'fitted_values' (auto-ets, auto-arima, naive, seasonal-naive, drift)`,
      type: 'value_error',
      input: true,
    });
  }
  const times = resolveTimes(req.inputs, frequency, freqCode !== null, horizon, issues);
  frequency = times.frequency;
  const contextLimit = Math.min(p.context_length ?? model.context_length, model.max_context_length);
  const numSamples = p.num_samples ?? 0;
  // Work follows the model and the season (src/engine/work.ts): each series' input tokens are its
  // observed values, or its estimated model time in WORK_MS_PER_TOKEN units when that is more.
  const workShape = { seasonLength: frequency?.seasonLength ?? null, calibrated: calibrates({ quantileLevels: levelsRaw, numSamples, horizon }) };
  let workMs = 0;
  let longest = 0;
  let input_tokens = 0;
  // Series of one request mostly share a length: each length is estimated once (up to 100,000 series).
  const workByLength = new Map<number, number>();
  const workOf = (points: number): number => {
    const known = workByLength.get(points);
    if (known !== undefined) return known;
    const w = seriesWorkMs(model.id, { points, ...workShape });
    workByLength.set(points, w);
    return w;
  };

  let totalPoints = 0;
  const inputs: PreparedInput[] = [];
  req.inputs.forEach((input, i) => {
    const target = input.target;
    // Read by the sliced parser straight into columns (src/shared/numeric-columns.ts): already checked, nothing to copy.
    const columns = (target as unknown) instanceof NumericColumns ? (target as unknown as NumericColumns) : null;
    if (!target || target.length === 0) {
      issues.push({ path: at('inputs', i, 'target'), msg: 'Field required: a non-empty series', type: 'missing' });
      return;
    }
    if (target.length > LIMITS.maxSeriesLength) {
      throw new AppError('request_too_large', `inputs[${i}].target has ${target.length} steps; at most ${LIMITS.maxSeriesLength} are accepted`);
    }
    let variates: Float64Array[];
    if (columns) variates = columns.columns;
    else {
      // Canonical form is [[v...], ...]; a flat [v, ...] is one variate.
      const flat = target.every((s) => !Array.isArray(s));
      const nested = target.every((s) => Array.isArray(s));
      if (!flat && !nested) {
        issues.push({ path: at('inputs', i, 'target'), msg: 'Mixes numbers and arrays: use [[v], [v], ...] or [v, v, ...]', type: 'value_error' });
        return;
      }
      const width = flat ? 1 : (target[0] as (number | null)[]).length;
      const n = target.length;
      variates = Array.from({ length: width }, () => new Float64Array(n));
      if (flat) {
        const col = variates[0] as Float64Array;
        for (let t = 0; t < n; t++) col[t] = (target[t] as number | null) ?? Number.NaN;
      } else {
        for (let t = 0; t < n; t++) {
          const row = target[t] as (number | null)[];
          if (row.length !== width) {
            issues.push({ path: at('inputs', i, 'target', t), msg: `Expected ${width} variates like the first step, got ${row.length}`, type: 'value_error' });
            return;
          }
          for (let v = 0; v < width; v++) (variates[v] as Float64Array)[t] = row[v] ?? Number.NaN;
        }
      }
    }
    const width = variates.length;
    totalPoints += target.length * width;
    const originalLength = target.length;
    const truncated = originalLength > contextLimit;
    const kept = truncated ? variates.map((s) => s.slice(originalLength - contextLimit)) : variates;
    let observed = 0;
    let minObserved = Number.POSITIVE_INFINITY;
    for (const s of kept) {
      let n = 0;
      for (let t = 0; t < s.length; t++) if (!Number.isNaN(s[t] as number)) n++;
      observed += n;
      minObserved = Math.min(minObserved, n);
      const work = workOf(s.length);
      workMs += work;
      longest = Math.max(longest, s.length);
      input_tokens += Math.max(n, Math.ceil(work / WORK_MS_PER_TOKEN));
    }
    if (minObserved < model.min_points) {
      issues.push({
        path: at('inputs', i, 'target'),
        msg: `inputs[${i}] has ${minObserved} observed points${width > 1 ? ' in its sparsest variate' : ''}; model '${model.id}' needs at least min_points=${model.min_points}`,
        type: 'too_short',
        ctx: { min_points: model.min_points, input_index: i },
      });
    }

    const start = times.starts[i] ?? null;

    const ignored: string[] = [];
    for (const [name, values] of Object.entries(input.past_covariates ?? {})) {
      if (values.length !== originalLength) {
        issues.push({
          path: at('inputs', i, 'past_covariates', name),
          msg: `Must have one value per target step (${originalLength}), got ${values.length}`,
          type: 'value_error',
        });
      }
      ignored.push(name);
    }
    for (const [name, values] of Object.entries(input.future_covariates ?? {})) {
      if (values.length !== horizon && values.length !== originalLength + horizon) {
        issues.push({
          path: at('inputs', i, 'future_covariates', name),
          msg: `Must cover the horizon (${horizon} values) or the context plus the horizon (${originalLength + horizon}), got ${values.length}`,
          type: 'value_error',
        });
      }
      ignored.push(name);
    }
    // One at a time: a spread passes every name as an argument (150,000 names overflow the stack).
    for (const name of Object.keys(input.static_covariates ?? {})) ignored.push(name);

    const metadata = input.metadata ?? null;
    const itemId = metadata && 'item_id' in metadata ? metadata.item_id : (input.item_id ?? undefined);
    inputs.push({
      variates: kept,
      originalLength,
      truncated,
      observedPoints: observed,
      start,
      itemId,
      metadata,
      ignoredCovariates: model.uses_covariates ? [] : ignored,
    });
  });
  if (totalPoints > LIMITS.maxTotalPoints) {
    throw new AppError('request_too_large', `The request holds ${totalPoints} values; at most ${LIMITS.maxTotalPoints} are accepted`);
  }
  if (issues.length > 0) throw new ValidationFailure(issues);

  if (workMs > limits.maxJobWorkMs) throw tooMuchWork(model.id, workMs, limits.maxJobWorkMs, longest, inputs.length, workShape);

  // Work is priced and bounded by what it produces: every number of the response is an output token.
  const seriesCount = inputs.reduce((a, x) => a + x.variates.length, 0);
  const perStep = valuesPerStep(levelsRaw.length, numSamples);
  // add_history returns one fitted value per step of the context each series was fitted on.
  const historyValues = addHistory ? inputs.reduce((a, x) => a + x.variates.length * (x.variates[0]?.length ?? 0), 0) : 0;
  // Each output's timestamps (one per step, returned when the input has a start and the request a
  // frequency) weigh more than a number (~27 bytes each): counted like one, in the cap and the price.
  const timestamped = frequency ? inputs.filter((x) => x.start !== null).length : 0;
  const timestampValues = timestamped * horizon;
  const output_tokens = seriesCount * horizon * perStep + historyValues + timestampValues;
  if (output_tokens > limits.maxOutputValues) {
    throw new AppError(
      'request_too_large',
      `The response would hold ${output_tokens} values (parameters.prediction_length ${horizon} × ${seriesCount} series over inputs[].target × ` +
        `(1 mean + ${levelsRaw.length} parameters.quantile_levels + ${numSamples} parameters.num_samples)${addHistory ? ` + ${historyValues} fitted values (parameters.add_history)` : ''}` +
        `${timestampValues > 0 ? ` + ${timestampValues} timestamps (prediction_length × ${timestamped} inputs with a start or timestamps)` : ''}); at most ${limits.maxOutputValues} are accepted. ` +
        `Lower prediction_length, num_samples or quantile_levels${timestampValues > 0 ? ', leave out inputs[].start and timestamps (the forecast then has none)' : ''}, or split the inputs over several requests`,
    );
  }
  return {
    model,
    inputs,
    horizon,
    quantileLevels: levelsRaw,
    numSamples,
    frequency,
    addHistory,
    usage: { input_tokens, output_tokens, total_tokens: input_tokens + output_tokens },
    workMs,
    metadata: req.metadata ?? null,
  };
}

/**
 * 413 for a job estimated past the engine's budget, saying what to shorten: the context that one
 * series of the longest kind could keep, the inputs, the season (a frequency with a shorter cycle),
 * or the model.
 */
function tooMuchWork(
  model: string,
  workMs: number,
  maxMs: number,
  longest: number,
  inputs: number,
  shape: { seasonLength: number | null; calibrated: boolean },
): AppError {
  const one = (points: number) => seriesWorkMs(model, { points, ...shape });
  let fits = 0;
  if (one(longest) > maxMs) {
    // The longest context one series may keep: the estimate grows with the points (binary search).
    let lo = 0;
    let hi = longest;
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      if (one(mid) <= maxMs) lo = mid;
      else hi = mid - 1;
    }
    fits = lo;
  }
  const season = shape.seasonLength === null ? 'a season to detect' : `season ${shape.seasonLength}`;
  const fix = [
    fits > 0 ? `parameters.context_length ${fits} or less` : one(longest) > maxMs ? 'a model without a seasonal search (theta, mstl)' : null,
    inputs > 1 ? 'fewer inputs per request (the series of one request run one after the other)' : null,
    shape.seasonLength !== null && shape.seasonLength > 24 ? 'a coarser parameters.frequency (a shorter season)' : null,
    shape.calibrated ? 'no quantile_levels or num_samples and a prediction_length under 24 (no interval calibration: a quarter less)' : null,
  ].filter((x): x is string => x !== null);
  return new AppError(
    'request_too_large',
    `This ${model} forecast is estimated at ${(workMs / 1000).toFixed(1)} s of model time (${inputs} input(s), the longest ${longest} steps, ${season}); ` +
      `one job may take at most ${(maxMs / 1000).toFixed(1)} s (INFERENCE_MAX_JOB_WORK_MS), since the engine stops a job at its time limit. Use ${fix.join(', or ')}`,
  );
}

/**
 * The time axis of every input, independent of the model: `start` (parsed), or `timestamps`
 * (checked, their frequency inferred when parameters.frequency is not sent), and the request's one
 * frequency. Forecast timestamps must stay representable. Problems are pushed onto `issues`.
 */
export function resolveTimes(
  inputs: ForecastRequestT['inputs'],
  given: Frequency | null,
  givenSent: boolean,
  horizon: number,
  issues: FieldIssue[],
): { frequency: Frequency | null; starts: (Date | null)[] } {
  let frequency = given;
  let inferredFrom = -1;
  const starts = inputs.map((input, i): Date | null => {
    let start: Date | null = null;
    if (input.start != null) {
      start = parseStart(input.start);
      if (!start) issues.push({ path: at('inputs', i, 'start'), msg: 'Not an ISO 8601 date or date-time', type: 'value_error', input: input.start });
    }
    if (input.timestamps == null) return start;
    if (!input.target) return null;
    // Checked against parameters.frequency when sent; otherwise each input's own grid is inferred.
    const read = readTimestamps(input.timestamps, input.target.length, i, start, input.start != null, given, givenSent, issues);
    if (!read) return null;
    if (!frequency) {
      frequency = read.frequency;
      inferredFrom = i;
    } else if (read.frequency.code !== frequency.code) {
      issues.push({
        path: at('inputs', i, 'timestamps'),
        msg: `These timestamps step by '${read.frequency.code}', those of inputs[${inferredFrom}] by '${frequency.code}': one request forecasts one frequency`,
        type: 'value_error',
      });
    }
    return read.start;
  });
  // After the loop: the frequency may come from a later input's timestamps.
  starts.forEach((start, i) => {
    const length = inputs[i]?.target?.length ?? 0;
    if (start && frequency && !timestampsRepresentable(start, frequency, length, horizon)) {
      const field = inputs[i]?.timestamps != null ? 'timestamps' : 'start';
      issues.push({
        path: at('inputs', i, field),
        msg: `With frequency '${frequency.code}', ${length} observed steps and prediction_length ${horizon}, the forecast timestamps run past the representable range of dates (±275,000 years); use a smaller frequency multiple or horizon`,
        type: 'value_error',
        input: inputs[i]?.start ?? inputs[i]?.timestamps?.[0],
      });
    }
  });
  return { frequency, starts };
}

/**
 * Reads `inputs[i].timestamps`: one ISO 8601 time per target step, increasing, on one regular grid
 * (parameters.frequency when given, else inferred). A `start` sent too must be the first of them.
 * Problems are pushed as issues naming `inputs[i].timestamps[j]`; null when there were any.
 */
function readTimestamps(
  raw: readonly string[],
  length: number,
  i: number,
  start: Date | null,
  startSent: boolean,
  given: Frequency | null,
  givenSent: boolean,
  issues: FieldIssue[],
): { start: Date; frequency: Frequency } | null {
  if (raw.length !== length) {
    issues.push({
      path: at('inputs', i, 'timestamps'),
      msg: `Must have one timestamp per target step (${length}), got ${raw.length}`,
      type: 'value_error',
    });
    return null;
  }
  // Parsed ahead in slices for large arrays (parseTimestampsAhead), else now.
  const times = timesOf(raw);
  for (let j = 0; j < times.length; j++) {
    if (Number.isNaN(times[j])) {
      issues.push({ path: at('inputs', i, 'timestamps', j), msg: 'Not an ISO 8601 date or date-time', type: 'value_error', input: raw[j] });
      return null;
    }
  }
  // An unknown parameters.frequency is reported already; the timestamps are not checked against it.
  if (givenSent && !given) return null;
  const check = checkTimestamps(times, given);
  if (!check.ok) {
    issues.push({ path: at('inputs', i, 'timestamps', check.index), msg: check.msg, type: 'value_error', input: raw[check.index] });
    return null;
  }
  const first = new Date(times[0] as number);
  if (startSent && start && start.getTime() !== first.getTime()) {
    issues.push({
      path: at('inputs', i, 'start'),
      msg: `Disagrees with timestamps[0] (${first.toISOString()}); send one of them, or the same time in both`,
      type: 'value_error',
      input: start.toISOString(),
    });
    return null;
  }
  return { start: first, frequency: check.frequency };
}
