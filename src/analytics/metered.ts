import { availableParallelism } from 'node:os';
import type { Principal } from '../accounts/credentials.ts';
import { settleFailed, TimeoutCharges } from '../forecasting/timed-out.ts';
import type { Usage } from '../forecasting/metering.ts';
import type { CallInfo, ForecastCtx, Planned } from '../forecasting/service.ts';
import { AppError } from '../shared/errors.ts';
import { throwIfGone } from '../shared/client-gone.ts';

export const ZERO_USAGE: Usage = { input_tokens: 0, output_tokens: 0, total_tokens: 0 };

export const addUsage = (a: Usage, b: Usage): Usage => ({
  input_tokens: a.input_tokens + b.input_tokens,
  output_tokens: a.output_tokens + b.output_tokens,
  total_tokens: a.total_tokens + b.total_tokens,
});

/** Price and usage of several planned forecasts: each is billed as the forecast it is. */
export function totalOf(plans: readonly Planned[]): { credits: number; usage: Usage } {
  let credits = 0;
  let usage = ZERO_USAGE;
  for (const p of plans) {
    credits += p.credits;
    usage = addUsage(usage, p.prepared.usage);
  }
  return { credits, usage };
}

/**
 * Fails with 413 when the forecasts of one analytics call would together return more numbers than
 * one forecast may (FORECAST_MAX_OUTPUT_VALUES): the same output cap, whatever the operation.
 */
export function checkOutputCap(ctx: ForecastCtx, outputValues: number, what: string): void {
  const max = ctx.config.forecast.maxOutputValues;
  if (outputValues > max) {
    throw new AppError(
      'request_too_large',
      `${what} would return ${outputValues} numbers; at most ${max} are accepted. Use fewer inputs, windows, models or steps`,
    );
  }
}

/**
 * The metered path of an analytics call, as the forecast's: access to every model, one hold for
 * the whole price before anything runs, the runs, `finish` (e.g. serialise the answer), then one
 * commit (debit and usage event) or a release: an answer that cannot be produced or written, or
 * whose client left (`call.signal`), costs nothing.
 */
export async function runMetered<R, T = R>(
  ctx: ForecastCtx,
  principal: Principal,
  call: CallInfo,
  charge: { model: string; models: readonly string[]; credits: number; usage: Usage },
  /** Runs the engine jobs, each through `charges.watch` so that the jobs that ran out of time are charged if the call fails. */
  work: (charges: TimeoutCharges) => Promise<R>,
  finish: (result: R) => Promise<T> | T = (r) => r as unknown as T,
): Promise<T> {
  for (const m of new Set(charge.models)) await ctx.meter.checkModelAccess(principal, m);
  const hold = await ctx.meter.hold({
    principal,
    requestId: call.requestId,
    source: call.source,
    model: charge.model,
    usage: charge.usage,
    credits: charge.credits,
  });
  const t0 = performance.now();
  const charges = new TimeoutCharges();
  let out: T;
  try {
    out = await finish(await work(charges));
    // A call whose client left is not committed (ADR 0040); its runs were stopped through the same signal.
    throwIfGone(call.signal);
  } catch (err) {
    // Released, but for the jobs that ran for the engine's whole time limit (ADR 0039).
    await settleFailed(hold, charges, err, call, charge.credits, Math.round(performance.now() - t0));
    throw err;
  }
  // The settled debit goes on the call's receipt: the cost headers (REST) and _meta (MCP) read it.
  call.receipt?.add(await hold.commit({ latencyMs: Math.round((performance.now() - t0) * 100) / 100 }));
  return out;
}

/**
 * Engine jobs one analytics call keeps in flight: the engine's default share of the threads for one
 * account (half of them, at least one). One more would only wait behind the call's own jobs, and a
 * wait past INFERENCE_QUEUE_WAIT_MS behind a long one was a 503 for the whole call.
 */
export const JOBS_IN_FLIGHT = Math.max(1, Math.ceil(availableParallelism() / 2));

/**
 * Runs the tasks at most `limit` at a time (a request's runs do not flood the engine's queue), in
 * order. After a failure nothing new starts, and the call fails with the first error once the tasks
 * in flight have ended, so that what they cost is known before the call is settled.
 */
export async function limited<T>(tasks: readonly (() => Promise<T>)[], limit: number): Promise<T[]> {
  const out = new Array<T>(tasks.length);
  let next = 0;
  let failure: { err: unknown } | null = null;
  const worker = async () => {
    while (next < tasks.length && !failure) {
      const k = next++;
      try {
        out[k] = await (tasks[k] as () => Promise<T>)();
      } catch (err) {
        failure ??= { err }; // the others start nothing new: the call fails as a whole
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, worker));
  if (failure) throw (failure as { err: unknown }).err;
  return out;
}
