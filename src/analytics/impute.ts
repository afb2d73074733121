import { yieldTurn as nextTurn } from '../shared/turns.ts';
import { randomUUID } from 'node:crypto';
import type { Principal } from '../accounts/credentials.ts';
import { creditsFor, priceOf } from '../catalog/pricing.ts';
import { calibrates, seriesWorkMs } from '../engine/work.ts';
import { parseFrequency, unknownFrequencyIssue } from '../forecasting/frequency.ts';
import type { ForecastRequestT } from '../forecasting/schemas.ts';
import { executePrepared, planForecast, type CallInfo, type ForecastCtx, type Planned } from '../forecasting/service.ts';
import { AppError, ValidationFailure, type FieldIssue } from '../shared/errors.ts';
import { matrixJson } from '../shared/json.ts';
import { checkShapes, columnsPerTurn, observedCount } from './cross-validation.ts';
import { IMPUTE_MAX_GAPS, type ImputeRequestT, type ImputeResponse } from './impute-schemas.ts';
import { TimeoutCharges } from '../forecasting/timed-out.ts';
import { addUsage, checkOutputCap, JOBS_IN_FLIGHT, limited, runMetered, ZERO_USAGE } from './metered.ts';

/**
 * Most gap contexts per engine job. Jobs are also cut by their estimated work (src/engine/work.ts,
 * INFERENCE_MAX_JOB_WORK_MS): 25 auto-ets fits of 1,000 hourly points were one job of about 60 s, past
 * the engine's time limit, so that no imputation could fill 25 single nulls of an hourly series.
 */
export const CHUNK = 25;

/**
 * Rate-limit points of an imputation, read defensively before validation: with a model, the
 * engine jobs it causes (a forward and a backward job per CHUNK gaps, counted up to the
 * IMPUTE_MAX_GAPS a request may hold); linear interpolation (or nothing to fill) is one point.
 */
export function imputePoints(input: unknown): number {
  const body = (input ?? {}) as { method?: unknown; inputs?: unknown };
  if (body.method === 'linear' || !Array.isArray(body.inputs)) return 1;
  let gaps = 0;
  for (const x of body.inputs) {
    const target = (x as { target?: unknown } | null)?.target;
    if (!Array.isArray(target)) continue;
    const width = Array.isArray(target[0]) ? target[0].length : 1;
    for (let v = 0; v < width && gaps <= IMPUTE_MAX_GAPS; v++) {
      let inGap = false;
      for (const step of target) {
        const missing = (Array.isArray(step) ? step[v] : step) === null;
        if (missing && !inGap) gaps++;
        inGap = missing;
      }
    }
    if (gaps > IMPUTE_MAX_GAPS) break;
  }
  return Math.max(1, 2 * Math.ceil(Math.min(gaps, IMPUTE_MAX_GAPS) / CHUNK));
}

/** A run of missing values [start, end) in one variate of one input. */
export interface Gap {
  input: number;
  variate: number;
  start: number;
  end: number;
}

export function gapsOf(y: readonly number[]): [number, number][] {
  const out: [number, number][] = [];
  let t = 0;
  while (t < y.length) {
    if (!Number.isNaN(y[t]!)) {
      t++;
      continue;
    }
    const s = t;
    while (t < y.length && Number.isNaN(y[t]!)) t++;
    out.push([s, t]);
  }
  return out;
}

/**
 * The point a share `w` (in [0, 1]) of the way from `a` to `b`. a + (b − a)·w, as before, unless the
 * difference overflows (a and b of opposite signs past half the largest double: 1e308 and −1e308
 * interpolated to null); then (1 − w)·a + w·b, whose terms cannot. Kept between a and b, so finite
 * whenever they are.
 */
export function between(a: number, b: number, w: number): number {
  const d = b - a;
  const x = Number.isFinite(d) ? a + d * w : (1 - w) * a + w * b;
  return Math.min(Math.max(x, Math.min(a, b)), Math.max(a, b));
}

/** Linear interpolation between the neighbouring observations; the nearest observation before the first or after the last. */
export function linearFill(y: readonly number[]): number[] {
  const out = y.slice();
  for (const [s, e] of gapsOf(y)) {
    const before = s > 0 ? y[s - 1]! : Number.NaN;
    const after = e < y.length ? y[e]! : Number.NaN;
    for (let t = s; t < e; t++) {
      if (Number.isNaN(before)) out[t] = after;
      else if (Number.isNaN(after)) out[t] = before;
      else out[t] = between(before, after, (t - s + 1) / (e - s + 1));
    }
  }
  return out;
}

/**
 * The blend of a forecast across a gap of length L (forward[j], from the values before it) and a
 * backcast (backward[j] = the value at end − 1 − j, from the values after it, reversed): the
 * weight of the backcast grows linearly from 1/(L+1) to L/(L+1) across the gap.
 */
export function blendGap(forward: readonly number[] | null, backward: readonly number[] | null, length: number): number[] | null {
  if (!forward && !backward) return null;
  return Array.from({ length }, (_, j) => {
    const f = forward?.[j];
    const b = backward?.[length - 1 - j];
    if (f === undefined) return b!;
    if (b === undefined) return f;
    const w = (j + 1) / (length + 1);
    // A convex combination: no term overflows, whatever the signs.
    return (1 - w) * f + w * b;
  });
}

/**
 * Every filled value of input `i` is a finite number before the answer is written (and so before any
 * debit): the response's schema has numbers there, and a null in a number's place would be charged
 * for. A value that is not is the input's fault (the fill is past the largest double): a 422 naming it.
 */
export function checkFilled(i: number, filled: readonly (readonly number[])[]): void {
  filled.forEach((y, v) => {
    const t = y.findIndex((x) => !Number.isFinite(x));
    if (t < 0) return;
    throw new ValidationFailure([
      {
        path: ['inputs', i, 'target'],
        msg: `inputs[${i}]${filled.length > 1 ? ` (variate ${v})` : ''}: the filled value at step ${t} is not a finite number (past the largest representable, about 1.8e308); divide the series by a power of ten (e.g. 1e300) and multiply the filled series back`,
        type: 'value_error',
      },
    ]);
  });
}

const toTarget = (xs: readonly number[]): (number | null)[] => xs.map((v) => (Number.isNaN(v) ? null : v));

interface ImputePlan {
  columns: number[][][];
  gaps: Gap[];
  /** Per gap: its index among the forward / backward contexts, or -1 when that side has too few values. */
  forwardOf: number[];
  backwardOf: number[];
  /** The batched fits of each direction, CHUNK contexts per job. */
  forward: Planned[];
  backward: Planned[];
  credits: number;
  usage: ImputeResponse['usage'];
}

/** Finds the gaps, decides which sides can be modelled, and prices the two batched fits before anything runs. */
export async function planImpute(ctx: ForecastCtx, req: ImputeRequestT): Promise<ImputePlan> {
  checkShapes(req.inputs);
  const { columns, observedOf } = await columnsPerTurn(req.inputs);
  const issues: FieldIssue[] = [];
  columns.forEach((cols, i) => {
    if ((observedOf[i] as number[]).some((n) => n === 0) || (cols[0]?.length ?? 0) === 0) {
      issues.push({ path: ['inputs', i, 'target'], msg: `inputs[${i}] has a variate without any observed value: nothing to impute from`, type: 'value_error' });
    }
  });
  if (req.frequency != null && !parseFrequency(req.frequency)) {
    issues.push(unknownFrequencyIssue(req.frequency, ['frequency']));
  }
  if (issues.length > 0) throw new ValidationFailure(issues);
  const gaps: Gap[] = [];
  for (const [input, cols] of columns.entries()) {
    cols.forEach((y, variate) => {
      for (const [start, end] of gapsOf(y)) gaps.push({ input, variate, start, end });
    });
    await nextTurn();
  }
  const values = columns.reduce((a, cols) => a + cols.length * (cols[0]?.length ?? 0), 0);
  checkOutputCap(ctx, 2 * values, `This imputation (${values} values and as many flags)`);
  const observed = observedOf.reduce((a, counts) => a + counts.reduce((b, n) => b + n, 0), 0);
  const missing = gaps.reduce((a, g) => a + g.end - g.start, 0);
  // An unknown model is 404 even when there is nothing to fill.
  const model = req.method === 'model' ? ctx.catalog.get(req.model) : null;
  const empty: ImputePlan = { columns, gaps, forwardOf: [], backwardOf: [], forward: [], backward: [], credits: 0, usage: ZERO_USAGE };
  if (!model || gaps.length === 0) {
    const usage = { input_tokens: observed, output_tokens: missing, total_tokens: observed + missing };
    return { ...empty, usage, credits: creditsFor(priceOf('linear', 'statistical'), usage) };
  }
  if (gaps.length > IMPUTE_MAX_GAPS) {
    throw new AppError(
      'request_too_large',
      `The inputs hold ${gaps.length} gaps (runs of nulls); at most ${IMPUTE_MAX_GAPS} are filled by a model per request (or use method 'linear')`,
    );
  }
  const minPoints = Math.max(2, model.min_points);
  const forwardTargets: (number | null)[][] = [];
  const backwardTargets: (number | null)[][] = [];
  const forwardOf: number[] = [];
  const backwardOf: number[] = [];
  let forwardH = 0;
  let backwardH = 0;
  for (const g of gaps) {
    const y = columns[g.input]![g.variate]!;
    const before = y.slice(0, g.start);
    const after = y.slice(g.end).reverse();
    const L = g.end - g.start;
    if (observedCount(before) >= minPoints) {
      forwardOf.push(forwardTargets.length);
      forwardTargets.push(toTarget(before));
      forwardH = Math.max(forwardH, L);
    } else forwardOf.push(-1);
    if (observedCount(after) >= minPoints) {
      backwardOf.push(backwardTargets.length);
      backwardTargets.push(toTarget(after));
      backwardH = Math.max(backwardH, L);
    } else backwardOf.push(-1);
  }
  // Batched fits per direction: every gap's context is an input, the horizon the longest gap. A job
  // holds at most CHUNK contexts and at most the work one job may take (a context that alone passes
  // it is refused by planForecast, 413), so that no job runs into the engine's time limit.
  const season = req.frequency != null ? (parseFrequency(req.frequency)?.seasonLength ?? null) : null;
  const context = Math.min(model.context_length, model.max_context_length);
  const plan = (targets: (number | null)[][], h: number): Planned[] => {
    const calibrated = calibrates({ quantileLevels: [], numSamples: 0, horizon: h });
    const workOf = (target: readonly unknown[]) => seriesWorkMs(model.id, { points: Math.min(target.length, context), seasonLength: season, calibrated });
    const chunks: (number | null)[][][] = [];
    let work = 0;
    for (const target of targets) {
      const w = workOf(target);
      const last = chunks.at(-1);
      if (last && last.length < CHUNK && work + w <= ctx.config.forecast.maxJobWorkMs) {
        last.push(target);
        work += w;
      } else {
        chunks.push([target]);
        work = w;
      }
    }
    return chunks.map((inputs) =>
      planForecast(ctx, {
        model: req.model,
        inputs: inputs.map((target) => ({ target })),
        // The mean only: no quantile is billed, and the engine skips the interval calibration's refits.
        parameters: { prediction_length: h, quantile_levels: [], frequency: req.frequency ?? null },
        metadata: null,
      } satisfies ForecastRequestT),
    );
  };
  const forward = plan(forwardTargets, forwardH);
  const backward = plan(backwardTargets, backwardH);
  let usage = ZERO_USAGE;
  let credits = 0;
  for (const p of [...forward, ...backward]) {
    usage = addUsage(usage, p.prepared.usage);
    credits += p.credits;
  }
  if (credits === 0) {
    // No side of any gap has enough values for the model: linear interpolation, priced as such.
    usage = { input_tokens: observed, output_tokens: missing, total_tokens: observed + missing };
    credits = creditsFor(priceOf('linear', 'statistical'), usage);
  }
  return { columns, gaps, forwardOf, backwardOf, forward, backward, credits, usage };
}

/** Runs the fits and fills every gap (linearly where neither side could be modelled); no metering. */
export async function executeImpute(
  ctx: ForecastCtx,
  req: ImputeRequestT,
  plan: ImputePlan,
  tenant?: string,
  charges = new TimeoutCharges(),
  signal?: AbortSignal,
): Promise<ImputeResponse> {
  const runs = [...plan.forward, ...plan.backward].map((p) => () => charges.watch(executePrepared(ctx, p.prepared, signal, tenant)));
  const done = await limited(runs, JOBS_IN_FLIGHT);
  const means = (from: number, count: number): number[][] => done.slice(from, from + count).flatMap((r) => r.outputs.map((o) => o.mean.map((row) => row[0]!)));
  const fwd = means(0, plan.forward.length);
  const bwd = means(plan.forward.length, plan.backward.length);
  const filled: number[][][] = [];
  for (const cols of plan.columns) {
    filled.push(cols.map((y) => linearFill(y)));
    await nextTurn();
  }
  if (req.method === 'model') {
    plan.gaps.forEach((g, k) => {
      const L = g.end - g.start;
      const fi = plan.forwardOf[k]!;
      const bi = plan.backwardOf[k]!;
      const forward = fi >= 0 ? fwd[fi]! : null;
      const backward = bi >= 0 ? bwd[bi]! : null;
      const values = blendGap(forward, backward, L);
      if (!values) return;
      const y = filled[g.input]![g.variate]!;
      for (let j = 0; j < L; j++) y[g.start + j] = values[j]!;
    });
  }
  // Written as JSON text in slices (matrixJson): 100,000 steps × 10 series were 2 million small arrays in one turn.
  const outputs: ImputeResponse['outputs'] = [];
  for (const [i, cols] of plan.columns.entries()) {
    const n = cols[0]?.length ?? 0;
    const missing = cols.map((y) => y.map((x) => Number.isNaN(x)));
    let count = 0;
    for (const m of missing) for (const x of m) if (x) count++;
    checkFilled(i, filled[i]!);
    const input = req.inputs[i]!;
    const itemId = input.metadata && 'item_id' in input.metadata ? input.metadata.item_id : (input.item_id ?? undefined);
    outputs.push({
      target: (await matrixJson(filled[i]!, 0, n)) as unknown as number[][],
      filled: (await matrixJson(missing, 0, n)) as unknown as boolean[][],
      filled_count: count,
      metadata: itemId !== undefined && itemId !== null ? { item_id: itemId } : null,
    });
    await nextTurn();
  }
  return {
    id: `imp_${randomUUID().replaceAll('-', '')}`,
    object: 'imputation',
    created: Math.floor(Date.now() / 1000),
    method: req.method,
    model: req.method === 'model' ? req.model : null,
    outputs,
    usage: plan.usage,
    cost_credits: plan.credits,
    metadata: req.metadata ?? null,
  };
}

/** The metered imputation: priced as its two batched fits (or the linear pass), held before, debited after. */
export async function runImpute<T = ImputeResponse>(
  ctx: ForecastCtx,
  principal: Principal,
  req: ImputeRequestT,
  call: CallInfo,
  /** Runs before the debit (e.g. serialiseJson): a failure there releases the hold. */
  finish: (response: ImputeResponse) => Promise<T> | T = (r) => r as unknown as T,
): Promise<T> {
  const plan = await planImpute(ctx, req);
  const models = plan.forward.length + plan.backward.length > 0 ? [req.model] : [];
  return runMetered(
    ctx,
    principal,
    call,
    { model: 'impute', models, credits: plan.credits, usage: plan.usage },
    (charges) => executeImpute(ctx, req, plan, principal.user.id, charges, call.signal),
    finish,
  );
}
