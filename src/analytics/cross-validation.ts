import { yieldTurn as nextTurn } from '../shared/turns.ts';
import { randomUUID } from 'node:crypto';
import type { Principal } from '../accounts/credentials.ts';
import { mase, smape, weightedQuantileLoss } from '../ensemble/metrics.ts';
import { DEFAULT_QUANTILES } from '../forecasting/prepare.ts';
import type { ForecastRequestT, ForecastResponse } from '../forecasting/schemas.ts';
import { executePrepared, jobOf, matrixNumbers, planForecast, type CallInfo, type ForecastCtx, type Planned } from '../forecasting/service.ts';
import { AppError, type FieldIssue, ValidationFailure } from '../shared/errors.ts';
import { TurnBudget } from '../shared/turns.ts';
import { TimeoutCharges } from '../forecasting/timed-out.ts';
import { checkOutputCap, JOBS_IN_FLIGHT, limited, runMetered, totalOf } from './metered.ts';
import { ANALYTICS_LIMITS, type CrossValidationRequestT, type CrossValidationResponse } from './schemas.ts';

type Metrics = CrossValidationResponse['results'][number]['metrics'];
type Step = number | null | (number | null)[];

/**
 * 422 for targets that are not one consistent shape (all numbers, or all arrays of one width):
 * what prepareForecast checks for a forecast, for the operations that read targets without one.
 */
export function checkShapes(inputs: readonly { target?: readonly Step[] | undefined }[]): void {
  const issues: FieldIssue[] = [];
  inputs.forEach((x, i) => {
    const target = x.target ?? [];
    const width = Array.isArray(target[0]) ? target[0].length : 1;
    const t = brokenStep(target);
    if (t >= 0) {
      issues.push({
        path: ['inputs', i, 'target', t],
        msg: `Expected ${width} variates like the first step: use [[v], [v], ...] or [v, v, ...]`,
        type: 'value_error',
      });
    }
  });
  if (issues.length > 0) throw new ValidationFailure(issues);
}

/**
 * The first step that breaks a target's shape (all numbers, or all arrays of the first step's
 * width), or -1; a target starting with a number that holds an array anywhere breaks at step 0. In
 * plain loops: 10 targets of 100,000 steps were 15–30 ms of one turn with every/findIndex.
 */
function brokenStep(target: readonly Step[]): number {
  const first = target[0];
  if (!Array.isArray(first)) {
    for (let t = 1; t < target.length; t++) if (Array.isArray(target[t])) return 0;
    return -1;
  }
  const width = first.length;
  for (let t = 0; t < target.length; t++) {
    const s = target[t];
    if (!Array.isArray(s) || s.length !== width) return t;
  }
  return -1;
}

/** Values of a column that are not NaN (observed), in a plain loop. */
export function observedCount(xs: readonly number[]): number {
  let n = 0;
  for (let t = 0; t < xs.length; t++) if (!Number.isNaN(xs[t] as number)) n++;
  return n;
}

/** A target as steps × variates with NaN for missing values. */
export function toColumns(target: readonly Step[]): number[][] {
  const width = Array.isArray(target[0]) ? target[0].length : 1;
  return Array.from({ length: width }, (_, v) => target.map((s) => (Array.isArray(s) ? (s[v] ?? Number.NaN) : (s ?? Number.NaN))));
}

/**
 * Every input's target as columns (`toColumns`) with each column's observed count, one input per
 * turn of the event loop (1,000 inputs × 100,000 steps were one turn of seconds); for the analytics
 * plans (anomalies, imputation).
 */
export async function columnsPerTurn(inputs: readonly { target?: readonly Step[] | undefined }[]): Promise<{ columns: number[][][]; observedOf: number[][] }> {
  const columns: number[][][] = [];
  /** observedOf[i][v]: observed values of variate v of input i, counted in the same turn. */
  const observedOf: number[][] = [];
  for (const x of inputs) {
    const cols = toColumns(x.target ?? []);
    columns.push(cols);
    observedOf.push(cols.map(observedCount));
    await nextTurn();
  }
  return { columns, observedOf };
}

export interface CvPlan {
  horizon: number;
  step: number;
  windows: number;
  levels: number[];
  /** cutoffs[k][i]: observed steps of input i before window k (oldest window first). */
  cutoffs: number[][];
  /** runs[m][k]: model m's forecast of window k. */
  runs: Planned[][];
  credits: number;
  usage: Planned['prepared']['usage'];
}

/** Validates, cuts the windows and prices every run before anything runs. */
export async function planCrossValidation(ctx: ForecastCtx, req: CrossValidationRequestT): Promise<CvPlan> {
  const h = req.prediction_length;
  const step = req.step_size ?? h;
  const W = req.n_windows;
  const models = [...new Set(req.models)];
  if (models.length * W > ANALYTICS_LIMITS.maxRuns) {
    throw new AppError(
      'request_too_large',
      `${models.length} models × ${W} n_windows = ${models.length * W} model runs; at most ${ANALYTICS_LIMITS.maxRuns} per cross-validation`,
    );
  }
  const lengths = req.inputs.map((x) => x.target?.length ?? 0);
  const span = h + (W - 1) * step;
  const issues = lengths.flatMap((n, i) =>
    n - span >= 1
      ? []
      : [
          {
            path: ['inputs', i, 'target'],
            msg: `inputs[${i}] has ${n} steps; ${W} windows of ${h} steps ${step} apart need more than ${span} (fewer n_windows, a smaller step_size or prediction_length)`,
            type: 'too_short',
            ctx: { needed: span + 1 },
          },
        ],
  );
  if (issues.length > 0) throw new ValidationFailure(issues);
  const levels = req.quantile_levels ?? DEFAULT_QUANTILES;
  const cutoffs = Array.from({ length: W }, (_, k) => lengths.map((n) => n - h - (W - 1 - k) * step));
  const windowRequest = (model: string, k: number): ForecastRequestT => ({
    model,
    inputs: req.inputs.map((x, i) => ({
      target: x.target?.slice(0, cutoffs[k]![i]!),
      start: x.start ?? null,
      // Each window's forecast names its input by item_id only: the rest of the input's metadata
      // would be copied windows × models times. The request's own metadata is echoed once, at the top.
      metadata: null,
      item_id: itemIdOf(x),
    })),
    parameters: { prediction_length: h, frequency: req.frequency ?? null, quantile_levels: levels },
    metadata: null,
  });
  // Each run is prepared on its own (a copy of the history): 40 runs over 100,000 points were 86 ms of one turn.
  const turns = new TurnBudget();
  const runs: Planned[][] = [];
  for (const m of models) {
    const row: Planned[] = [];
    for (let k = 0; k < W; k++) {
      if (turns.spent) await turns.next();
      row.push(planForecast(ctx, windowRequest(m, k)));
    }
    runs.push(row);
  }
  const all = runs.flat();
  const actualValues = req.inputs.reduce((a, x) => a + toColumns(x.target ?? []).length, 0) * h * W;
  checkOutputCap(ctx, all.reduce((a, p) => a + p.prepared.usage.output_tokens, 0) + actualValues, `This cross-validation (${all.length} runs)`);
  const { credits, usage } = totalOf(all);
  return { horizon: h, step, windows: W, levels, cutoffs, runs, credits, usage };
}

/** Symmetric pairs of quantile levels (q, 1−q), q < 0.5, as intervals. */
function intervals(levels: readonly number[]): [number, number][] {
  const out: [number, number][] = [];
  for (const lo of levels) {
    const hi = levels.find((x) => Math.abs(x - (1 - lo)) < 1e-9);
    if (lo < 0.5 && hi !== undefined) out.push([lo, hi]);
  }
  return out.sort((a, b) => a[0] - b[0]);
}

interface Tally {
  smape: number[];
  mase: number[];
  wql: number[];
  inside: number[];
  total: number[];
}

/** Mean of the finite values (null when none); summed as shares of the count if the plain sum overflows (MASE can be huge). */
const mean = (xs: number[]): number | null => {
  const f = xs.filter(Number.isFinite);
  if (f.length === 0) return null;
  const sum = f.reduce((a, b) => a + b, 0);
  return Number.isFinite(sum) ? sum / f.length : f.reduce((a, b) => a + b / f.length, 0);
};

function finish(t: Tally, pairs: [number, number][]): Metrics {
  return {
    smape: mean(t.smape),
    mase: mean(t.mase),
    wql: mean(t.wql),
    coverage: pairs.map(([lo, hi], j) => ({
      nominal: Math.round((hi - lo) * 1e9) / 1e9,
      lower_level: lo,
      upper_level: hi,
      observed: t.total[j]! > 0 ? t.inside[j]! / t.total[j]! : null,
    })),
  };
}

/**
 * The metrics of one series and window are numbers wherever they are defined (an observed held-out
 * value; for WQL, a quantile level): the metrics are computed without overflow, so one that is not
 * finite is past the largest double in the data's units (a MASE over a flat training part, whose
 * scale falls back to 1), the input's fault. A 422 naming it, before any debit, rather than a null or
 * a metric quietly left out of the averages.
 */
function checkScores(
  i: number,
  v: number,
  width: number,
  actual: readonly number[],
  levels: number,
  scores: { smape: number; mase: number; wql: number },
): void {
  if (observedCount(actual) === 0) return;
  const bad = (['smape', 'mase', 'wql'] as const).find((k) => !Number.isFinite(scores[k]) && (k !== 'wql' || levels > 0));
  if (!bad) return;
  throw new ValidationFailure([
    {
      path: ['inputs', i, 'target'],
      msg: `inputs[${i}]${width > 1 ? ` (variate ${v})` : ''}: its ${bad} in a window is not a finite number (past the largest representable, about 1.8e308); divide the series by a power of ten (e.g. 1e300)`,
      type: 'value_error',
    },
  ]);
}

/** Scores one window's forecast against the held-out values of every input and variate. */
function scoreWindow(
  fc: ForecastResponse,
  columns: number[][][],
  cutoffs: number[],
  h: number,
  season: number,
  pairs: [number, number][],
  into: Tally[],
): void {
  columns.forEach((cols, i) => {
    const out = fc.outputs[i];
    if (!out) return;
    // Read once per input (the worker may have written them as text).
    const mean = matrixNumbers(out.mean);
    const qs = (out.quantile_predictions ?? []).map((q) => ({ level: q.level, values: matrixNumbers(q.values) }));
    cols.forEach((series, v) => {
      const cut = cutoffs[i]!;
      const train = series.slice(0, cut);
      const actual = series.slice(cut, cut + h);
      const point = mean.map((row) => row[v]!);
      const scores = {
        smape: smape(actual, point),
        mase: mase(actual, point, train, season),
        wql: weightedQuantileLoss(
          actual,
          qs.map((q) => q.level),
          qs.map((q) => q.values.map((row) => row[v]!)),
        ),
      };
      checkScores(i, v, cols.length, actual, qs.length, scores);
      for (const t of into) {
        t.smape.push(scores.smape);
        t.mase.push(scores.mase);
        t.wql.push(scores.wql);
        pairs.forEach(([lo, hi], j) => {
          const low = qs.find((q) => q.level === lo)!.values;
          const high = qs.find((q) => q.level === hi)!.values;
          actual.forEach((y, s) => {
            if (Number.isNaN(y)) return;
            t.total[j]!++;
            if (y >= low[s]![v]! && y <= high[s]![v]!) t.inside[j]!++;
          });
        });
      }
    });
  });
}

const tally = (pairs: number): Tally => ({ smape: [], mase: [], wql: [], inside: new Array(pairs).fill(0), total: new Array(pairs).fill(0) });

/** Runs the planned windows (at most CONCURRENCY at a time) and scores them; no metering. */
export async function executeCrossValidation(
  ctx: ForecastCtx,
  req: CrossValidationRequestT,
  plan: CvPlan,
  tenant?: string,
  charges = new TimeoutCharges(),
  signal?: AbortSignal,
): Promise<CrossValidationResponse> {
  const h = plan.horizon;
  const columns = req.inputs.map((x) => toColumns(x.target ?? []));
  const season = plan.runs[0]?.[0]?.prepared.frequency?.seasonLength ?? 1;
  const pairs = intervals(plan.levels);
  // The worker writes each window's forecast as text (sent as it is); scoring reads it back one window at a time.
  // The request's windows queue here, not in the shared engine queue.
  const tasks = plan.runs.flatMap((windows) =>
    windows.map((p) => () => charges.watch(executePrepared(ctx, p.prepared, signal, tenant, jobOf(p.prepared, true)))),
  );
  const done = await limited(tasks, JOBS_IN_FLIGHT);
  const results: CrossValidationResponse['results'] = [];
  for (const [m, windows] of plan.runs.entries()) {
    const overall = tally(pairs.length);
    const perWindow: CrossValidationResponse['results'][number]['windows'] = [];
    for (const k of windows.keys()) {
      const fc = done[m * plan.windows + k]!;
      const t = tally(pairs.length);
      scoreWindow(fc, columns, plan.cutoffs[k]!, h, season, pairs, [t, overall]);
      perWindow.push({ window: k, metrics: finish(t, pairs), forecast: fc });
      // A window of 10,000 steps is a few ms to read and score: one per turn of the event loop.
      await nextTurn();
    }
    const model = windows[0]!.prepared.model.id;
    results.push({ model, rank: 0, metrics: finish(overall, pairs), windows: perWindow, credits: windows.reduce((a, p) => a + p.credits, 0) });
  }
  const key = (x: (typeof results)[number]) => x.metrics.smape ?? Number.POSITIVE_INFINITY;
  results.sort((a, b) => key(a) - key(b) || a.model.localeCompare(b.model));
  results.forEach((r, k) => {
    r.rank = k + 1;
  });
  return {
    id: `cv_${randomUUID().replaceAll('-', '')}`,
    object: 'cross_validation',
    created: Math.floor(Date.now() / 1000),
    prediction_length: h,
    n_windows: plan.windows,
    step_size: plan.step,
    quantile_levels: plan.levels,
    windows: plan.cutoffs.map((cuts, k) => ({
      window: k,
      cutoffs: cuts,
      actuals: columns.map((cols, i) =>
        Array.from({ length: h }, (_, s) =>
          cols.map((series) => {
            const y = series[cuts[i]! + s]!;
            return Number.isNaN(y) ? null : y;
          }),
        ),
      ),
    })),
    results,
    usage: plan.usage,
    total_cost_credits: plan.credits,
    metadata: req.metadata ?? null,
  };
}

/** The metered cross-validation: every window × model billed as the forecast it runs, held once, debited once. */
export async function runCrossValidation<T = CrossValidationResponse>(
  ctx: ForecastCtx,
  principal: Principal,
  req: CrossValidationRequestT,
  call: CallInfo,
  /** Runs before the debit (e.g. serialiseJson): a failure there releases the hold. */
  finish: (response: CrossValidationResponse) => Promise<T> | T = (r) => r as unknown as T,
): Promise<T> {
  const plan = await planCrossValidation(ctx, req);
  return runMetered(
    ctx,
    principal,
    call,
    { model: 'cross-validation', models: req.models, credits: plan.credits, usage: plan.usage },
    (charges) => executeCrossValidation(ctx, req, plan, principal.user.id, charges, call.signal),
    finish,
  );
}

/** An input's item id (`metadata.item_id` wins over the `item_id` alias, as in a forecast). */
function itemIdOf(x: { metadata?: Record<string, unknown> | null; item_id?: string | number | null }): string | number | null {
  const id = x.metadata && 'item_id' in x.metadata ? x.metadata.item_id : x.item_id;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}
