import { randomUUID } from 'node:crypto';
import { availableParallelism } from 'node:os';
import type { Principal } from '../accounts/credentials.ts';
import { COMBO_MEMBERS } from '../engine/models/combo.ts';
import { AppError, type FieldIssue, ValidationFailure } from '../shared/errors.ts';
import { throwIfGone } from '../shared/client-gone.ts';
import type { CallInfo, ForecastCtx, Planned } from '../forecasting/service.ts';
import { TurnBudget } from '../shared/turns.ts';
import { NOT_DOWNLOADED } from '../engine/files.ts';
import { executePrepared, executeWritten, planForecast } from '../forecasting/service.ts';
import { parseFrequency, sliceTimestamps } from '../forecasting/frequency.ts';
import { resolveTimes, type PreparedForecast } from '../forecasting/prepare.ts';
import type { Usage } from '../forecasting/metering.ts';
import type { ForecastRequestT, ForecastResponse } from '../forecasting/schemas.ts';
import { RanOutOfTime, settleFailed, TimeoutCharges } from '../forecasting/timed-out.ts';
import { blend, inverseScoreWeights } from './blend.ts';
import { mase, smape, weightedQuantileLoss } from './metrics.ts';
import type { EnsembleRequestT, EnsembleResponse } from './schemas.ts';

const BASELINE_FAMILIES = new Set(['random walk']);
/**
 * Models left out of the default candidates for what they measurably did to the default ensemble,
 * with the reason the filters report. ces: on all of M3 the default ensemble with it scored 12.70 /
 * 1.401 sMAPE / MASE at 10 credits per series, against 12.63 / 1.379 at 8 without it (ADR 0031,
 * bench/results/m3-ensemble-with-ces.md).
 */
const NOT_DEFAULT: ReadonlyMap<string, string> = new Map([['ces', 'on M3 it made the default ensemble worse and costlier']]);

/** Levels the crps score is computed on (deciles), whatever the request asks for. */
const CRPS_LEVELS = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9];

interface Candidate {
  model: string;
  /** One backtest per window, newest first (window k holds out the heldOut points before the last k * heldOut). */
  backtests: PreparedForecast[];
  final: PreparedForecast;
  credits: number;
  usage: Usage;
  /**
   * Set when the candidate is the equal-weight mean of other candidates (`combo` when auto-ets,
   * auto-arima and theta are candidates too): its forecasts are averaged from theirs, not run.
   */
  derivedFrom?: readonly string[];
}

/**
 * Built-in combinations whose members' forecasts an ensemble computes anyway. Running `combo`
 * again would refit its three members on every window: the heaviest jobs of a default ensemble
 * (on 1,000 hourly points about half its CPU time; bench/results/hourly-timeouts.md).
 */
const DERIVED: Record<string, readonly string[]> = { combo: COMBO_MEMBERS };

export interface EnsemblePlan {
  request: EnsembleRequestT;
  heldOut: number;
  /** Backtest windows (1 to MAX_WINDOWS). */
  windows: number;
  candidates: Candidate[];
  filters: string[];
  totalCredits: number;
  usage: Usage;
}

const addUsage = (a: Usage, b: Usage): Usage => ({
  input_tokens: a.input_tokens + b.input_tokens,
  output_tokens: a.output_tokens + b.output_tokens,
  total_tokens: a.total_tokens + b.total_tokens,
});
const ZERO: Usage = { input_tokens: 0, output_tokens: 0, total_tokens: 0 };

/** Most backtest windows per candidate (`backtest_windows`): several windows rank models less by luck. */
export const MAX_WINDOWS = 3;
/** Weight of the equal split in the blend: w = (1 - SHRINK) * (1/score, normalised) + SHRINK / k. */
export const SHRINK = 0.5;
/**
 * How much worse than seasonal naive a candidate's backtest score may be and still be blended
 * (ADR 0035). At 1 (strictly better than seasonal naive, the rule until 2026-11-27) one short
 * window's noise left out good models: measured on M3, ETT daily and ETT hourly (with and without
 * TinyTimeMixer) the strict yardstick was the worst of the margins tried on every set.
 */
export const YARDSTICK_MARGIN = 1.25;
const MARGIN_TEXT = `${Math.round((YARDSTICK_MARGIN - 1) * 100)}%`;

/**
 * Backtest windows: window k (0-based) holds out the heldOut points ending k * heldOut before the
 * end; a window is used only while at least half of the shortest input stays before it.
 */
export function backtestWindows(heldOut: number, shortest: number, wanted = MAX_WINDOWS): number {
  let w = 0;
  while (w < Math.min(wanted, MAX_WINDOWS) && shortest - (w + 1) * heldOut >= Math.ceil(shortest / 2)) w++;
  return Math.max(1, w);
}

/** Inverse-score weights shrunk toward equal weights (forecast combination's "shrink to the mean"). */
export function shrunkWeights(scores: number[]): number[] {
  const inv = inverseScoreWeights(scores);
  return inv.map((w) => (1 - SHRINK) * w + SHRINK / inv.length);
}

/**
 * The blend's members among candidates already ranked (best score first): those scoring at most
 * `margin` times the yardstick's score (every one when the yardstick has no finite score), or the
 * best alone when none does; then the first `topN`. `eligible` lists the candidates the yardstick kept.
 */
export function selectMembers<T>(
  ranked: readonly T[],
  scoreOf: (t: T) => number,
  yardstick: number,
  topN: number,
  margin = YARDSTICK_MARGIN,
): { members: T[]; eligible: T[] } {
  const eligible = ranked.filter((t) => !Number.isFinite(yardstick) || scoreOf(t) <= margin * yardstick);
  return { members: (eligible.length > 0 ? eligible : ranked.slice(0, 1)).slice(0, topN), eligible };
}

/**
 * The seasonal-naive forecast of `train` for `h` steps (the last season repeated; the last value
 * when the season is 1 or longer than the data): the yardstick a member must beat on the backtest.
 */
export function seasonalNaive(train: number[], h: number, season: number): number[] {
  const n = train.length;
  const m = season > 1 && n >= season ? season : 1;
  return Array.from({ length: h }, (_, k) => train[n - m + (k % m)] as number);
}

/**
 * Hold-out length: the prediction length, or half the shortest input when that is shorter,
 * so that at least half of every series stays for fitting. Minimum 1 (series of 2+ steps).
 */
export function heldOutLength(predictionLength: number, shortest: number): number {
  return Math.max(0, Math.min(predictionLength, Math.floor(shortest / 2)));
}

function describe(err: unknown): string {
  if (err instanceof ValidationFailure) return err.issues.map((d) => d.msg).join('; ');
  if (err instanceof Error) return err.message;
  return String(err);
}

/**
 * Chooses the candidates and prices everything before anything runs: which models, the
 * held-out length, each model's backtest and final forecast, and the budget.
 */
export async function planEnsemble(ctx: ForecastCtx, req: EnsembleRequestT, canUse: (model: string) => Promise<boolean>): Promise<EnsemblePlan> {
  const params: Partial<NonNullable<EnsembleRequestT['parameters']>> = req.parameters ?? {};
  const horizon = params.prediction_length ?? 24;
  const lengths = req.inputs.map((x) => x.target?.length ?? 0);
  const shortest = Math.min(...lengths);
  const heldOut = heldOutLength(horizon, shortest);
  // The inputs' time axes do not depend on the model: a bad timestamp is one 422 naming it, not a
  // reason every candidate is filtered out.
  const timeIssues: FieldIssue[] = [];
  const freqCode = params.frequency ?? params.freq ?? null;
  resolveTimes(req.inputs, freqCode === null ? null : parseFrequency(freqCode), freqCode !== null, horizon, timeIssues);
  if (timeIssues.length > 0) throw new ValidationFailure(timeIssues);
  if (heldOut < 1) {
    const i = lengths.indexOf(shortest);
    throw new ValidationFailure([
      { path: ['inputs', i, 'target'], msg: `inputs[${i}] has ${shortest} steps; an ensemble needs at least 2 to hold one out`, type: 'too_short' },
    ]);
  }

  const windows = backtestWindows(heldOut, shortest, req.backtest_windows);
  const explicit = req.models ?? null;
  const filters: string[] = [];
  let ids: string[];
  if (explicit) {
    ids = [...new Set(explicit)];
    for (const id of ids) ctx.catalog.get(id); // unknown → 404 model_not_found
  } else {
    ids = [];
    for (const m of ctx.catalog.list({ task: 'forecast' })) {
      // Unavailable models are candidates that cannot run: the loop below records why (not
      // downloaded, files being verified), so that a missing model is never left out silently.
      if (!m.available) {
        ids.push(m.id);
        continue;
      }
      // Benchmark baselines (naive, seasonal naive, drift) are yardsticks, not blend material:
      // on M3 they lower the blend's accuracy (bench/results/m3-ensemble.md). Name them to use them.
      if (BASELINE_FAMILIES.has(m.family)) filters.push(`${m.id}: baseline, not a default candidate (list it in models to include it)`);
      else if (NOT_DEFAULT.has(m.id)) filters.push(`${m.id}: not a default candidate (${NOT_DEFAULT.get(m.id)}; list it in models to include it)`);
      // A model that would pad these inputs up to its context (TinyTimeMixer under 512 points) runs them
      // less accurately and at a neural price: named, it runs; by default it is left out.
      else if (m.padded_below !== null && shortest - windows * heldOut < m.padded_below)
        filters.push(`${m.id}: would pad inputs shorter than ${m.padded_below} points, not a default candidate (list it in models to include it)`);
      else ids.push(m.id);
    }
  }

  const finalReq = (model: string): ForecastRequestT => ({ model, inputs: req.inputs, parameters: req.parameters ?? null, metadata: req.metadata ?? null });
  const backtestReq = (model: string, k: number): ForecastRequestT => ({
    model,
    inputs: req.inputs.map((x) => ({
      target: x.target?.slice(0, (x.target?.length ?? 0) - (k + 1) * heldOut),
      start: x.start ?? null,
      // Cut like the target; a length mismatch stays one (the final request reports it).
      timestamps: x.timestamps ? sliceTimestamps(x.timestamps, x.timestamps.length - (k + 1) * heldOut) : null,
      metadata: x.metadata ?? null,
    })),
    parameters: {
      ...params,
      prediction_length: heldOut,
      quantile_levels: req.scoring_metric === 'crps' ? CRPS_LEVELS : (params.quantile_levels ?? params.quantiles ?? null),
      quantiles: null,
      num_samples: null,
    },
    metadata: null,
  });

  const candidates: Candidate[] = [];
  const notDownloaded: string[] = [];
  let total = 0;
  let usage = ZERO;
  const turns = new TurnBudget();
  for (const id of ids) {
    const model = ctx.catalog.get(id);
    if (!model.available) {
      // Not downloaded, by default: one line for all of them (a fresh install has several).
      if (!explicit && model.unavailable_reason === NOT_DOWNLOADED(id)) notDownloaded.push(id);
      else filters.push(`${id}: not available (${model.unavailable_reason ?? 'not downloaded'})`);
      continue;
    }
    if (!(await canUse(id))) {
      if (explicit) throw new AppError('no_model_access', `Your account has no access to model '${id}'`);
      filters.push(`${id}: no access for this account`);
      continue;
    }
    let backtests: PreparedForecast[];
    let final: PreparedForecast;
    let credits: number;
    try {
      // Each preparation copies the history: a turn of the event loop whenever the budget is spent.
      const b: Planned[] = [];
      for (let k = 0; k < windows; k++) {
        if (turns.spent) await turns.next();
        b.push(planForecast(ctx, backtestReq(id, k)));
      }
      if (turns.spent) await turns.next();
      const f = planForecast(ctx, finalReq(id));
      backtests = b.map((x) => x.prepared);
      final = f.prepared;
      credits = b.reduce((a, x) => a + x.credits, 0) + f.credits;
    } catch (err) {
      if (err instanceof ValidationFailure || (err instanceof AppError && err.status < 500 && err.code !== 'model_not_found')) {
        filters.push(`${id}: cannot serve these inputs (${describe(err)})`);
        continue;
      }
      throw err;
    }
    if (req.max_models != null && candidates.length >= req.max_models) {
      filters.push(`${id}: skipped, max_models=${req.max_models} reached`);
      continue;
    }
    const members = DERIVED[id];
    if (members?.every((m) => candidates.some((c) => c.model === m))) {
      // Averaged from its members' forecasts in this ensemble: no job of its own, no charge.
      candidates.push({ model: id, backtests, final, credits: 0, usage: ZERO, derivedFrom: members });
      continue;
    }
    if (req.budget != null && total + credits > req.budget) {
      filters.push(`${id}: skipped, its ${credits} credits would exceed the budget of ${req.budget} (${total} planned)`);
      continue;
    }
    const u = backtests.reduce((a, b) => addUsage(a, b.usage), final.usage);
    candidates.push({ model: id, backtests, final, credits, usage: u });
    total += credits;
    usage = addUsage(usage, u);
  }
  if (notDownloaded.length > 0) filters.push(`not downloaded (npm run models -- pull <id>): ${notDownloaded.join(', ')}`);
  const hasCovariates = req.inputs.some((x) => x.past_covariates || x.future_covariates || x.static_covariates);
  if (hasCovariates) {
    const ignoring = candidates.filter((c) => !c.final.model.uses_covariates).map((c) => c.model);
    if (ignoring.length > 0) filters.push(`covariates ignored by: ${ignoring.join(', ')}`);
  }
  if (candidates.length === 0) {
    throw new ValidationFailure([
      {
        path: [explicit ? 'models' : 'inputs'],
        msg: `No candidate model can serve this request: ${filters.join('; ') || 'none available'}`,
        type: 'value_error',
      },
    ]);
  }
  checkAnswerSize(ctx, candidates);
  return { request: req, heldOut, windows, candidates, filters, totalCredits: total, usage };
}

/**
 * The whole answer is bounded like one forecast's (FORECAST_MAX_OUTPUT_VALUES): every candidate's
 * final forecast (ranked_results[].result) plus the blend (ensemble_result, shaped like them).
 * Refused (413) at planning, before any credit is held.
 */
function checkAnswerSize(ctx: ForecastCtx, candidates: Candidate[]): void {
  const finals = candidates.map((c) => c.final.usage.output_tokens);
  const total = finals.reduce((a, b) => a + b, 0) + Math.max(0, ...finals);
  const cap = ctx.config.forecast.maxOutputValues;
  if (total <= cap) return;
  throw new AppError(
    'request_too_large',
    `The ensemble's answer would hold ${total} numbers: the final forecast of each of the ${candidates.length} candidates (ranked_results) and the blend (ensemble_result), ` +
      `each parameters.prediction_length × series over inputs[].target × (1 + parameters.quantile_levels + parameters.num_samples); at most ${cap} are accepted. ` +
      'Lower prediction_length, num_samples or quantile_levels, name fewer candidates (models, max_models), or split the inputs over several requests',
  );
}

interface Evaluated {
  candidate: Candidate;
  score: number;
  result: ForecastResponse;
}

/**
 * Score of one backtest window k (mean over inputs and variates). `backtest` null scores the
 * seasonal-naive forecast instead (point metrics only; crps returns NaN).
 */
function scoreBacktest(plan: EnsemblePlan, backtest: ForecastResponse | null, season: number, k: number): number {
  const metric = plan.request.scoring_metric;
  if (!backtest && metric === 'crps') return Number.NaN;
  const scores: number[] = [];
  plan.request.inputs.forEach((input, i) => {
    const target = input.target ?? [];
    const width = Array.isArray(target[0]) ? (target[0] as unknown[]).length : 1;
    const out = backtest ? backtest.outputs[i] : null;
    if (backtest && !out) return;
    for (let v = 0; v < width; v++) {
      const series = target.map((step) => {
        const x = Array.isArray(step) ? step[v] : step;
        return x === null || x === undefined ? Number.NaN : x;
      });
      const end = series.length - k * plan.heldOut;
      const train = series.slice(0, end - plan.heldOut);
      const actual = series.slice(end - plan.heldOut, end);
      const mean = out ? out.mean.map((row) => row[v] as number) : seasonalNaive(train, plan.heldOut, season);
      let s: number;
      if (metric === 'smape') s = smape(actual, mean);
      else if (metric === 'mase') s = mase(actual, mean, train, season);
      else {
        const qs = out?.quantile_predictions ?? [];
        s = weightedQuantileLoss(
          actual,
          qs.map((q) => q.level),
          qs.map((q) => q.values.map((row) => row[v] as number)),
        );
      }
      if (Number.isFinite(s)) scores.push(s);
    }
  });
  return scores.length === 0 ? Number.POSITIVE_INFINITY : scores.reduce((a, b) => a + b, 0) / scores.length;
}

/**
 * Engine jobs one ensemble keeps in flight: the engine's default share of the threads for one
 * account (half of them, at least one) plus one waiting. All of a candidate set's jobs at once
 * (five default candidates, one backtest each: ten jobs) queue behind each other in the
 * account's share, and on a two-core server the last ones waited past the queue limit
 * (INFERENCE_QUEUE_WAIT_MS, 30 s) on a 1,000-point hourly series and were dropped as "busy"
 * (bench/results/hourly-timeouts-before.md). Handed over a few at a time, each job waits for at
 * most the jobs ahead of it in this ensemble, not for all of them.
 */
export const ENSEMBLE_JOBS_IN_FLIGHT = Math.max(1, Math.ceil(availableParallelism() / 2)) + 1;

/** Runs `task`s with at most `n` pending at once, in the order they were given. */
function limiter(n: number): <T>(task: () => Promise<T>) => Promise<T> {
  let active = 0;
  const queue: (() => void)[] = [];
  return async (task) => {
    // A finished task hands its slot to the next waiter directly (active stays counted).
    if (active >= n) await new Promise<void>((resolve) => queue.push(resolve));
    else active++;
    try {
      return await task();
    } finally {
      const next = queue.shift();
      if (next) next();
      else active--;
    }
  };
}

/** Runs every candidate's backtests and final forecast, a few engine jobs at a time; a failing candidate is dropped. */
export async function executeEnsemble(
  ctx: ForecastCtx,
  plan: EnsemblePlan,
  tenant?: string,
  /** Jobs that ran for the engine's whole time limit: charged (ADR 0039), with the call's answer or without one. */
  charges = new TimeoutCharges(),
  signal?: AbortSignal,
): Promise<{ response: EnsembleResponse; credits: number; usage: Usage }> {
  const t0 = performance.now();
  const req = plan.request;
  const season = plan.candidates[0]?.final.frequency?.seasonLength ?? 1;
  const dropped: string[] = [];
  // Candidates whose run failed, and those of them refused for the input (422 from the engine).
  let failed = 0;
  const refused: ValidationFailure[] = [];
  const run = limiter(ENSEMBLE_JOBS_IN_FLIGHT);
  const ran = new Map<string, { final: ForecastResponse; backtests: ForecastResponse[] }>();
  /** Per candidate: the credits of its jobs that ran out of time (charged though it is dropped). */
  const timedOut: { model: string; credits: number }[] = [];
  let firstTimeout: RanOutOfTime | undefined;
  const settled = await Promise.all(
    plan.candidates
      .filter((c) => !c.derivedFrom)
      .map(async (c): Promise<Evaluated | null> => {
        const own = new TimeoutCharges();
        // Every job of the candidate ends before it is judged: one that runs out of time later is counted too.
        const jobs = await Promise.allSettled([
          // The final forecast's samples stay as the worker wrote them (only picked by the blend).
          run(() => own.watch(executeWritten(ctx, c.final, tenant, signal))),
          ...c.backtests.map((b) => run(() => own.watch(executePrepared(ctx, b, signal, tenant)))),
        ]);
        if (own.credits > 0) {
          timedOut.push({ model: c.model, credits: own.credits });
          charges.credits += own.credits;
          charges.usage = addUsage(charges.usage, own.usage);
        }
        const failure = jobs.find((j) => j.status === 'rejected');
        if (failure) {
          const err: unknown = failure.reason;
          if (err instanceof RanOutOfTime) firstTimeout ??= err;
          failed++;
          if (err instanceof ValidationFailure) refused.push(err);
          dropped.push(`${c.model}: dropped, failed (${describe(err)})`);
          return null;
        }
        const [final, ...bts] = jobs.map((j) => (j as PromiseFulfilledResult<ForecastResponse>).value) as [ForecastResponse, ...ForecastResponse[]];
        ran.set(c.model, { final, backtests: bts });
        const score = bts.reduce((a, bt, k) => a + scoreBacktest(plan, bt, season, k), 0) / bts.length;
        return { candidate: c, score, result: final };
      }),
  );
  for (const c of plan.candidates) {
    if (!c.derivedFrom) continue;
    const parts = c.derivedFrom.map((m) => ran.get(m));
    if (parts.some((p) => p === undefined)) {
      dropped.push(`${c.model}: dropped, a member it averages failed`);
      continue;
    }
    const done = parts as { final: ForecastResponse; backtests: ForecastResponse[] }[];
    const bts = c.backtests.map((_, k) =>
      averaged(
        c.model,
        done.map((p) => p.backtests[k]!),
        req.metadata ?? null,
      ),
    );
    const score = bts.reduce((a, bt, k) => a + scoreBacktest(plan, bt, season, k), 0) / bts.length;
    settled.push({
      candidate: c,
      score,
      result: averaged(
        c.model,
        done.map((p) => p.final),
        req.metadata ?? null,
      ),
    });
  }
  const evaluated = settled.filter((x): x is Evaluated => x !== null);
  if (evaluated.length === 0) {
    // Every candidate refused the input itself (values past the double range, ...): the caller's 422.
    if (failed > 0 && refused.length === failed) throw refused[0]!;
    // Every candidate ran out of time: the 504 of one, charged with all of them (runEnsemble).
    if (failed > 0 && timedOut.length === failed && firstTimeout) throw firstTimeout;
    throw new AppError('upstream_empty', `Every candidate failed: ${dropped.join('; ')}`);
  }
  evaluated.sort((a, b) => a.score - b.score || a.candidate.model.localeCompare(b.candidate.model));
  // The yardstick: seasonal naive on the same windows. A candidate that scores more than
  // YARDSTICK_MARGIN times worse is not blended (if every candidate does, the best one alone answers).
  let yardstick = 0;
  for (let k = 0; k < plan.windows; k++) yardstick += scoreBacktest(plan, null, season, k) / plan.windows;
  const { members, eligible } = selectMembers(evaluated, (e) => e.score, yardstick, req.top_n);
  const inEnsemble = new Set(members.map((m) => m.candidate.model));
  const kept = new Set(eligible);
  const lostToYardstick = evaluated.filter((e) => !kept.has(e)).map((e) => e.candidate.model);
  const yardstickNote =
    lostToYardstick.length === 0
      ? []
      : [
          `${lostToYardstick.join(', ')}: ${req.scoring_metric} ${eligible.length > 0 ? `more than ${MARGIN_TEXT} worse than seasonal naive on the backtest, not blended` : `every candidate is more than ${MARGIN_TEXT} worse than seasonal naive on the backtest; the best one alone answers`} (seasonal naive ${yardstick.toFixed(4)})`,
        ];
  const weights = shrunkWeights(members.map((m) => m.score));
  const weightOf = new Map(members.map((m, k) => [m.candidate.model, weights[k] as number]));

  // What the answer's candidates cost, plus the jobs of dropped candidates that ran out of time.
  const credits = evaluated.reduce((a, e) => a + e.candidate.credits, 0) + charges.credits;
  const usage = evaluated.reduce((a, e) => addUsage(a, e.candidate.usage), charges.usage);
  const blended = blend(
    members.map((m) => m.result),
    weights,
  );
  const latency = Math.round((performance.now() - t0) * 100) / 100;
  const basis = `${req.scoring_metric} over ${plan.windows} backtest window(s) of ${plan.heldOut} points of ${req.inputs.length} input(s), mean over windows and series; candidates more than ${MARGIN_TEXT} worse than seasonal naive there are left out; weights: half 1/score (normalised), half equal, over the top ${members.length}`;
  const ensembleResult: ForecastResponse = {
    ...blended,
    id: `fcst_${randomUUID().replaceAll('-', '')}`,
    created: Math.floor(Date.now() / 1000),
    model: 'ensemble',
    provider: 'ensemble',
    usage,
    latency_ms: latency,
    metadata: req.metadata ?? null,
  };
  const response: EnsembleResponse = {
    id: `ens_${randomUUID().replaceAll('-', '')}`,
    object: 'ensemble_forecast',
    created: Math.floor(Date.now() / 1000),
    ranked_results: evaluated.map((e, k) => {
      const w = weightOf.get(e.candidate.model) ?? 0;
      return {
        model: e.candidate.model,
        rank: k + 1,
        score: Number.isFinite(e.score) ? e.score : Number.MAX_VALUE,
        scoring_metric: req.scoring_metric,
        weight: w,
        selection_reason: inEnsemble.has(e.candidate.model)
          ? `rank ${k + 1} of ${evaluated.length} by backtest ${req.scoring_metric} (${e.score.toFixed(4)}): in the ensemble with weight ${w.toFixed(4)}`
          : !kept.has(e)
            ? `rank ${k + 1} of ${evaluated.length} by backtest ${req.scoring_metric} (${e.score.toFixed(4)}): more than ${MARGIN_TEXT} worse than seasonal naive (${yardstick.toFixed(4)})`
            : `rank ${k + 1} of ${evaluated.length} by backtest ${req.scoring_metric} (${e.score.toFixed(4)}): outside top_n=${req.top_n}`,
        result: e.result,
      };
    }),
    ensemble_result: ensembleResult,
    ensemble_metadata: {
      models_evaluated: evaluated.map((e) => e.candidate.model),
      models_in_ensemble: members.map((m) => m.candidate.model),
      scoring_metric: req.scoring_metric,
      top_n: req.top_n,
      weights: Object.fromEntries(members.map((m, k) => [m.candidate.model, weights[k] as number])),
      cost_breakdown: [
        ...evaluated.map((e) => ({ model: e.candidate.model, credits: e.candidate.credits })),
        ...timedOut.map((t) => ({ model: t.model, credits: t.credits })),
      ],
      total_cost_credits: credits,
      selection: {
        selection_basis: basis,
        held_out_length: plan.heldOut,
        candidate_count: plan.candidates.length,
        filters_applied: [...plan.filters, ...dropped, ...yardstickNote],
        requested_model_count: req.models?.length ?? null,
        strategy: 'holdout_backtest',
      },
    },
  };
  return { response, credits, usage };
}

/** The equal-weight mean of member forecasts (means and quantiles), presented as `model`'s forecast. */
function averaged(model: string, members: ForecastResponse[], metadata: Record<string, unknown> | null): ForecastResponse {
  const b = blend(
    members,
    members.map(() => 1 / members.length),
  );
  const note = { derived: `equal-weight mean of ${members.map((m) => m.model).join(', ')} as forecast in this ensemble` };
  return {
    ...b,
    outputs: b.outputs.map((o) => ({ ...o, metadata: { ...(o.metadata ?? {}), model_info: [note] } })),
    id: `fcst_${randomUUID().replaceAll('-', '')}`,
    created: Math.floor(Date.now() / 1000),
    model,
    provider: members[0]?.provider ?? 'builtin',
    usage: ZERO,
    latency_ms: 0,
    metadata,
  };
}

/** May `principal` use `model`? The candidate filter of an ensemble (run and quote alike). */
export function ensembleAccess(ctx: ForecastCtx, principal: Principal, explicitModels: boolean): (model: string) => Promise<boolean> {
  return async (model) => {
    try {
      await ctx.meter.checkModelAccess(principal, model);
      return true;
    } catch (err) {
      if (err instanceof AppError && (err.code === 'no_model_access' || err.code === 'model_access_denied')) return false;
      // A key restricted to some models: default candidates outside them are skipped; a model
      // listed explicitly is refused with the key's own error (403 key_model_not_allowed).
      if (err instanceof AppError && err.code === 'key_model_not_allowed' && !explicitModels) return false;
      throw err;
    }
  };
}

/**
 * The metered ensemble: plan and price (413 past the output cap), check the budget, hold once, run,
 * `finish` (e.g. serialise the answer), debit the actual cost once, then the caller sends. Any
 * failure after the hold, in `finish` or the debit included, releases it.
 */
export async function runEnsemble<T = EnsembleResponse>(
  ctx: ForecastCtx,
  principal: Principal,
  req: EnsembleRequestT,
  call: CallInfo,
  finish: (response: EnsembleResponse) => Promise<T> | T = (r) => r as T,
): Promise<T> {
  const plan = await planEnsemble(ctx, req, ensembleAccess(ctx, principal, Boolean(req.models)));
  const hold = await ctx.meter.hold({
    principal,
    requestId: call.requestId,
    source: call.source,
    model: 'ensemble',
    usage: plan.usage,
    credits: plan.totalCredits,
  });
  const charges = new TimeoutCharges();
  const t0 = performance.now();
  try {
    const out = await executeEnsemble(ctx, plan, principal.user.id, charges, call.signal);
    const answer = await finish(out.response);
    // A call whose client left is not committed (ADR 0040): its candidates were stopped by the same signal.
    throwIfGone(call.signal);
    const charge = await hold.commit({ latencyMs: out.response.ensemble_result.latency_ms ?? 0, credits: out.credits, usage: out.usage });
    call.receipt?.add(charge);
    return answer;
  } catch (err) {
    // Released, but for the candidates' jobs that ran for the engine's whole time limit (ADR 0039).
    await settleFailed(hold, charges, err, call, plan.totalCredits, Math.round(performance.now() - t0));
    throw err;
  }
}
