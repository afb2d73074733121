import { randomUUID } from 'node:crypto';
import { yieldTurn as nextTurn } from '../shared/turns.ts';
import type { Principal } from '../accounts/credentials.ts';
import { creditsFor, priceOf } from '../catalog/pricing.ts';
import { qnorm } from '../engine/stats/normal.ts';
import { parseFrequency, timestampsJson, parseStart, timestampsRepresentable, unknownFrequencyIssue } from '../forecasting/frequency.ts';
import type { Usage } from '../forecasting/metering.ts';
import { executePrepared, planForecast, type CallInfo, type ForecastCtx, type Planned } from '../forecasting/service.ts';
import { AppError, ValidationFailure, type FieldIssue } from '../shared/errors.ts';
import { matrixJson } from '../shared/json.ts';
import { maxAbs, unitOf } from '../shared/unit-scale.ts';
import { ANOMALY_LIMITS, type DetectAnomaliesRequestT, type DetectAnomaliesResponse } from './anomaly-schemas.ts';
import { checkShapes, columnsPerTurn } from './cross-validation.ts';
import { TimeoutCharges } from '../forecasting/timed-out.ts';
import { checkOutputCap, runMetered } from './metered.ts';

/** Scores of one series from index `from` on: NaN where the method has no prediction (or the value is missing). */
export interface SeriesScores {
  expected: Float64Array;
  lower: Float64Array;
  upper: Float64Array;
  score: Float64Array;
  anomaly: boolean[];
}

/**
 * Scores of `m` steps, allocated once: typed columns (no per-point growth, nothing for a scavenge to
 * copy; five arrays of 100,000 pushes were ~20 ms of one turn and their garbage the main thread's GC pauses).
 */
function scoresOf(m: number): SeriesScores {
  return {
    expected: new Float64Array(m),
    lower: new Float64Array(m),
    upper: new Float64Array(m),
    score: new Float64Array(m),
    anomaly: new Array<boolean>(m).fill(false),
  };
}

function put(s: SeriesScores, k: number, expected: number, lower: number, upper: number, score: number, anomaly: boolean): void {
  s.expected[k] = expected;
  s.lower[k] = lower;
  s.upper[k] = upper;
  s.score[k] = score;
  s.anomaly[k] = anomaly;
}

/** Numbers per scored step in the answer: value, expected, lower, upper, score, anomaly. */
const NUMBERS_PER_POINT = 6;
/** Points scored between two turns of the event loop. */
const SLICE = 20_000;

/**
 * Spreads below this share of the series' largest |value| are rounding, not variation: a MAD under
 * it counts as 0 (the residuals of a regular series at 1e200 differ by rounding where at 1 they are
 * equal), and no standard deviation is taken smaller (a constant stretch scores finite). Relative to
 * the series, so the flags do not depend on its units (an absolute floor of 1e-9 hid every anomaly of
 * a series under about 1e-9).
 */
const RESOLUTION = 1e-9;

/** The smallest spread around `center` in a series whose largest |value| is `magnitude` (same units). */
const spreadFloor = (center: number, magnitude: number): number => RESOLUTION * Math.max(Math.abs(center), magnitude) || Number.MIN_VALUE;

/**
 * A column in units of its largest |value| (`unitOf`: a power of two, so exact): the scores are
 * computed there, where no square or sum can overflow, and the expected values and bounds are put
 * back in the data's units.
 */
function inUnits(y: readonly number[], also: readonly number[] = []): { c: number; y: readonly number[]; magnitude: number } {
  const c = unitOf(maxAbs(y, also));
  return { c, y: c === 1 ? y : y.map((v) => v / c), magnitude: maxAbs(y) / c };
}

/**
 * Rolling z-score: the mean and standard deviation of the previous `window` observed values
 * (running sums, O(n)); a value more than `sensitivity` standard deviations away is an anomaly.
 * A step whose window holds fewer than 2 observed values has no prediction.
 */
export function zscoreScores(values: readonly number[], window: number, sensitivity: number, from: number): SeriesScores {
  const { c, y, magnitude } = inUnits(values);
  const n = y.length;
  const out = scoresOf(Math.max(0, n - from));
  // Sums of (v − shift) keep the running variance accurate for series far from zero.
  const shift = y.find((v) => !Number.isNaN(v)) ?? 0;
  let count = 0;
  let sum = 0;
  let sumSq = 0;
  const add = (v: number, sign: 1 | -1) => {
    if (Number.isNaN(v)) return;
    const d = v - shift;
    count += sign;
    sum += sign * d;
    sumSq += sign * d * d;
  };
  // The window of step t is y[t − window .. t − 1].
  for (let t = Math.max(0, from - window); t < from; t++) add(y[t]!, 1);
  for (let t = from; t < n; t++) {
    if (t > from) {
      add(y[t - 1]!, 1);
      if (t - 1 - window >= 0) add(y[t - 1 - window]!, -1);
    }
    const v = y[t]!;
    if (count < 2) {
      put(out, t - from, Number.NaN, Number.NaN, Number.NaN, Number.NaN, false);
      continue;
    }
    const mean = shift + sum / count;
    const variance = Math.max(0, (sumSq - (sum * sum) / count) / (count - 1));
    const sd = Math.max(Math.sqrt(variance), spreadFloor(mean, magnitude));
    const score = Number.isNaN(v) ? Number.NaN : Math.abs(v - mean) / sd;
    put(out, t - from, mean * c, (mean - sensitivity * sd) * c, (mean + sensitivity * sd) * c, score, score > sensitivity);
  }
  return out;
}

/** Median of the finite values (NaN when none). */
function median(values: number[]): number {
  const f = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (f.length === 0) return Number.NaN;
  const m = f.length >> 1;
  return f.length % 2 ? f[m]! : (f[m - 1]! + f[m]!) / 2;
}

/** Root mean square of finite values, scaled by the largest before squaring (no overflow, no underflow). */
function rms(f: readonly number[]): number {
  const m = maxAbs(f);
  if (m === 0) return 0;
  let sum = 0;
  for (const r of f) sum += (r / m) * (r / m);
  return m * Math.sqrt(sum / f.length);
}

/**
 * Robust residual standard deviation: 1.4826 × the median absolute deviation (the normal-consistent
 * MAD), so the anomalies being looked for do not widen the interval that should catch them; the
 * root mean square when half the residuals or more are identical (a MAD of 0, or not above
 * `resolution`: differences of rounding only).
 */
export function robustSigma(residuals: readonly number[], resolution = 0): number {
  const f = residuals.filter(Number.isFinite);
  if (f.length === 0) return Number.NaN;
  const med = median(f);
  const mad = 1.4826 * median(f.map((r) => Math.abs(r - med)));
  if (mad > resolution) return mad;
  return rms(f);
}

/**
 * Forecast-residual scores: the model's one-step-ahead in-sample predictions `fitted` and a
 * Gaussian interval at `level` percent around them, its spread the robust standard deviation of
 * all in-sample residuals. A value outside the interval is an anomaly; the score is |residual| / sd.
 */
export function residualScores(values: readonly number[], predictions: readonly number[], level: number, from: number): SeriesScores {
  const { c, y, magnitude } = inUnits(values, predictions);
  const fitted = c === 1 ? predictions : predictions.map((f) => f / c);
  const residuals = y.map((v, t) => v - fitted[t]!);
  const z = qnorm(0.5 + level / 200);
  const out = scoresOf(Math.max(0, y.length - from));
  const sigma0 = robustSigma(residuals, RESOLUTION * magnitude);
  for (let t = from; t < y.length; t++) {
    const f = fitted[t]!;
    // No prediction (NaN): none to score. An infinite one is scored, and refused by checkRepresentable.
    if (Number.isNaN(f) || !Number.isFinite(sigma0)) {
      put(out, t - from, Number.NaN, Number.NaN, Number.NaN, Number.NaN, false);
      continue;
    }
    const sd = Math.max(sigma0, spreadFloor(f, magnitude));
    const v = y[t]!;
    const score = Number.isNaN(v) ? Number.NaN : Math.abs(v - f) / sd;
    put(out, t - from, f * c, (f - z * sd) * c, (f + z * sd) * c, score, score > z);
  }
  return out;
}

/**
 * The scores of input `i` hold no number JSON cannot carry: every scored step has a finite expected
 * value, bounds and score (score NaN only for a missing value); else the interval (or the model's
 * prediction) is past the largest double, the input's fault: a 422 naming it, never a null in a
 * number's place (the same rule as a forecast's, ADR 0030).
 */
export function checkRepresentable(i: number, values: readonly (readonly number[])[], scores: readonly SeriesScores[]): void {
  scores.forEach((s, v) => {
    for (let k = 0; k < s.expected.length; k++) {
      const e = s.expected[k]!;
      if (Number.isNaN(e) && Number.isNaN(s.lower[k]!) && Number.isNaN(s.upper[k]!)) continue;
      const value = values[v]![values[v]!.length - s.expected.length + k]!;
      const score = s.score[k]!;
      if (Number.isFinite(e) && Number.isFinite(s.lower[k]!) && Number.isFinite(s.upper[k]!) && (Number.isFinite(score) || Number.isNaN(value))) continue;
      throw new ValidationFailure([
        {
          path: ['inputs', i, 'target'],
          msg: `inputs[${i}]${values.length > 1 ? ` (variate ${v})` : ''}: the expected value or interval at step ${values[v]!.length - s.expected.length + k} is past the largest representable number (about 1.8e308); divide the series by a power of ten (e.g. 1e300) and multiply the expected values and bounds back`,
          type: 'value_error',
        },
      ]);
    }
  });
}

interface AnomalyPlan {
  columns: number[][][];
  from: number[];
  credits: number;
  usage: Usage;
  fit: Planned | null;
}

/** Validates, sizes and prices a detection before anything runs. */
export async function planAnomalies(ctx: ForecastCtx, req: DetectAnomaliesRequestT): Promise<AnomalyPlan> {
  checkShapes(req.inputs);
  const issues: FieldIssue[] = [];
  const { columns, observedOf } = await columnsPerTurn(req.inputs);
  columns.forEach((cols, i) => {
    const observed = Math.min(...(observedOf[i] as number[]));
    if (observed < ANOMALY_LIMITS.minPoints) {
      issues.push({
        path: ['inputs', i, 'target'],
        msg: `inputs[${i}] has ${observed} observed points${cols.length > 1 ? ' in its sparsest variate' : ''}; anomaly detection needs at least ${ANOMALY_LIMITS.minPoints}`,
        type: 'too_short',
        ctx: { min_points: ANOMALY_LIMITS.minPoints },
      });
    }
  });
  const frequency = req.frequency != null ? parseFrequency(req.frequency) : null;
  if (req.frequency != null && !frequency) {
    issues.push(unknownFrequencyIssue(req.frequency, ['frequency']));
  }
  // Each scored point gets a timestamp: a start that is no date, or one whose last timestamp lies
  // past what a Date holds (a frequency of 100000YS), is a 422 here as for a forecast, not a
  // RangeError when the answer is written.
  req.inputs.forEach((x, i) => {
    if (x.start == null) return;
    const start = parseStart(x.start);
    if (!start) issues.push({ path: ['inputs', i, 'start'], msg: 'Not an ISO 8601 date or date-time', type: 'value_error', input: x.start });
    else if (frequency && !timestampsRepresentable(start, frequency, 0, columns[i]?.[0]?.length ?? 0)) {
      issues.push({
        path: ['inputs', i, 'start'],
        msg: `With frequency '${frequency.code}' and ${columns[i]?.[0]?.length ?? 0} steps, the timestamps run past the representable range of dates (±275,000 years); use a smaller frequency multiple`,
        type: 'value_error',
        input: x.start,
      });
    }
  });
  if (issues.length > 0) throw new ValidationFailure(issues);
  const from = columns.map((cols) => Math.max(0, (cols[0]?.length ?? 0) - (req.detection_size ?? Number.POSITIVE_INFINITY)));
  const scored = columns.reduce((a, cols, i) => a + cols.length * ((cols[0]?.length ?? 0) - from[i]!), 0);
  checkOutputCap(ctx, scored * NUMBERS_PER_POINT, `This detection (${scored} scored points × ${NUMBERS_PER_POINT} numbers)`);
  const observed = observedOf.reduce((a, counts) => a + counts.reduce((b, n) => b + n, 0), 0);
  if (req.method === 'zscore') {
    // No model runs: priced as a statistical model's forecast that reads every value and returns one prediction per scored point.
    const usage = { input_tokens: observed, output_tokens: scored, total_tokens: observed + scored };
    return { columns, from, usage, credits: creditsFor(priceOf('zscore', 'statistical'), usage), fit: null };
  }
  const model = ctx.catalog.get(req.model);
  if (!model.capabilities.includes('fitted_values')) {
    const withFits = ctx.catalog
      .list({ available: true, task: 'forecast' })
      .filter((m) => m.capabilities.includes('fitted_values'))
      .map((m) => m.id);
    throw new ValidationFailure([
      {
        path: ['model'],
        msg: `Model '${model.id}' has no in-sample fitted values; method 'forecast' needs one of: ${withFits.join(', ')} (or use method 'zscore')`,
        type: 'value_error',
        input: req.model,
      },
    ]);
  }
  const longest = Math.max(...columns.map((c) => c[0]?.length ?? 0));
  const fit = planForecast(ctx, {
    model: req.model,
    inputs: req.inputs.map((x) => ({ target: x.target, start: x.start ?? null, metadata: x.metadata ?? null, item_id: x.item_id ?? null })),
    // One fit over the whole series (context_length: all of it) with its one-step-ahead in-sample predictions.
    parameters: {
      prediction_length: 1,
      quantile_levels: [0.5],
      frequency: req.frequency ?? null,
      context_length: Math.min(longest, model.max_context_length),
      add_history: true,
    },
    metadata: null,
  });
  return { columns, from, usage: fit.prepared.usage, credits: fit.credits, fit };
}

/** Runs the fit (if any) and scores every series; no metering. */
export async function executeAnomalies(
  ctx: ForecastCtx,
  req: DetectAnomaliesRequestT,
  plan: AnomalyPlan,
  tenant?: string,
  charges = new TimeoutCharges(),
  signal?: AbortSignal,
): Promise<DetectAnomaliesResponse> {
  const fitted = plan.fit ? await charges.watch(executePrepared(ctx, plan.fit.prepared, signal, tenant)) : null;
  const frequency = req.frequency ? parseFrequency(req.frequency) : null;
  const outputs: DetectAnomaliesResponse['outputs'] = [];
  let total = 0;
  let sinceYield = 0;
  for (let i = 0; i < plan.columns.length; i++) {
    const cols = plan.columns[i]!;
    const from = plan.from[i]!;
    const n = cols[0]?.length ?? 0;
    const perVariate = cols.map((y, v) => {
      if (req.method === 'zscore') return zscoreScores(y, req.window, req.sensitivity, from);
      const f = fitted?.outputs[i]?.fitted_values ?? [];
      return residualScores(
        y,
        y.map((_, t) => f[t]?.[v] ?? Number.NaN),
        req.level,
        from,
      );
    });
    checkRepresentable(i, cols, perVariate);
    // Written as JSON text in slices (matrixJson): six matrices of 100,000 steps were 600,000 small arrays in one turn.
    const text = async (pick: (s: SeriesScores) => ArrayLike<number | boolean>) =>
      (await matrixJson(
        perVariate.map((s) => pick(s)),
        0,
        n - from,
      )) as unknown as never[][];
    let count = 0;
    for (const s of perVariate) for (const a of s.anomaly) if (a) count++;
    total += count;
    const input = req.inputs[i]!;
    const start = input.start ? parseStart(input.start) : null;
    const itemId = input.metadata && 'item_id' in input.metadata ? input.metadata.item_id : (input.item_id ?? undefined);
    outputs.push({
      start_index: from,
      timestamps: start && frequency ? ((await timestampsJson(start, frequency, from, n - from)) as unknown as string[]) : null,
      value: (await matrixJson(cols, from, n)) as unknown as never[][],
      expected: await text((s) => s.expected),
      lower: await text((s) => s.lower),
      upper: await text((s) => s.upper),
      score: await text((s) => s.score),
      anomaly: await text((s) => s.anomaly),
      anomaly_count: count,
      metadata: itemId !== undefined && itemId !== null ? { item_id: itemId } : null,
    });
    sinceYield += n * cols.length;
    if (sinceYield >= SLICE) {
      sinceYield = 0;
      await nextTurn();
    }
  }
  return {
    id: `anom_${randomUUID().replaceAll('-', '')}`,
    object: 'anomaly_detection',
    created: Math.floor(Date.now() / 1000),
    method: req.method,
    model: req.method === 'forecast' ? req.model : null,
    level: req.method === 'forecast' ? req.level : null,
    window: req.method === 'zscore' ? req.window : null,
    sensitivity: req.method === 'zscore' ? req.sensitivity : null,
    outputs,
    anomaly_count: total,
    usage: plan.usage,
    cost_credits: plan.credits,
    metadata: req.metadata ?? null,
  };
}

/** The metered detection: priced as the fit it needs (or the z-score pass), held before, debited after. */
export async function runDetectAnomalies<T = DetectAnomaliesResponse>(
  ctx: ForecastCtx,
  principal: Principal,
  req: DetectAnomaliesRequestT,
  call: CallInfo,
  /** Runs before the debit (e.g. serialiseJson): a failure there releases the hold. */
  finish: (response: DetectAnomaliesResponse) => Promise<T> | T = (r) => r as unknown as T,
): Promise<T> {
  const plan = await planAnomalies(ctx, req);
  if (plan.fit && !plan.fit.prepared.model.available) throw new AppError('upstream_unavailable', `Model '${req.model}' is not available`);
  return runMetered(
    ctx,
    principal,
    call,
    { model: 'detect-anomalies', models: plan.fit ? [req.model] : [], credits: plan.credits, usage: plan.usage },
    (charges) => executeAnomalies(ctx, req, plan, principal.user.id, charges, call.signal),
    finish,
  );
}
