import type { Principal } from '../accounts/credentials.ts';
import { AppError, type ErrorReport, ValidationFailure, zodIssues } from '../shared/errors.ts';
import { ForecastRequest, type ForecastResponse, LIMITS } from './schemas.ts';
import { planForecast, runPlanned, type CallInfo, type ForecastCtx, type Planned } from './service.ts';
import { TurnBudget } from '../shared/turns.ts';

export type BatchItem<T = ForecastResponse> = { ok: true; result: T; error: null } | { ok: false; result: null; error: ErrorReport };

/**
 * Each item is validated, authorised and metered on its own and all run concurrently (the
 * engine's pool and per-account cap bound the real parallelism). Item k is billed under request
 * id `<id>:<k>`. A failed item becomes its error entry through the caller's own error mapper
 * (REST and MCP place validation paths differently).
 * Every item is planned first: when the items' responses together would pass the output cap,
 * the whole batch is refused (413) before any credit is held. `finish` turns each item's
 * response into what the caller sends (e.g. serialised JSON); the item is debited only once
 * that succeeded.
 */
export type PlannedItem = { plan: Planned } | { error: ErrorReport };

/**
 * Plans every item (validation, model, limits, price) and refuses the whole batch (413) when it
 * has too many items or its responses together would pass the output cap. Shared by the run and
 * the quote, so a quote cannot drift from what the batch would do.
 */
export async function planBatch(ctx: ForecastCtx, requests: unknown[], reportItemError: (err: unknown, k: number) => ErrorReport): Promise<PlannedItem[]> {
  if (requests.length > LIMITS.maxBatch) {
    throw new AppError('request_too_large', `A batch holds at most ${LIMITS.maxBatch} requests (got ${requests.length})`);
  }
  // Items are validated and prepared on a turn budget: 64 items of 1,000 inputs each were 120–150 ms of one turn.
  const turns = new TurnBudget();
  const planned: PlannedItem[] = [];
  for (const [k, raw] of requests.entries()) {
    if (turns.spent) await turns.next();
    planned.push(planItem(ctx, raw, k, reportItemError));
  }
  const outputValues = planned.reduce((a, p) => a + ('plan' in p ? p.plan.prepared.usage.output_tokens : 0), 0);
  const cap = outputValues > 0 ? ctx.config.forecast.maxOutputValues : 0;
  if (outputValues > cap) {
    throw new AppError(
      'request_too_large',
      `The batch's responses would hold ${outputValues} numbers together (requests[].parameters.prediction_length × series × ` +
        `(1 + quantile_levels + num_samples), summed over requests); at most ${cap} are accepted. Split the batch or lower those fields`,
    );
  }
  return planned;
}

/** One item of a batch: validated and planned, or its error entry. */
function planItem(ctx: ForecastCtx, raw: unknown, k: number, reportItemError: (err: unknown, k: number) => ErrorReport): PlannedItem {
  try {
    const parsed = ForecastRequest.safeParse(raw);
    if (!parsed.success) throw new ValidationFailure(zodIssues(parsed.error.issues, raw));
    if (parsed.data.dry_run !== undefined) {
      throw new ValidationFailure([
        { path: ['dry_run'], msg: 'dry_run applies to the whole batch: set it beside requests, not on an item', type: 'value_error' },
      ]);
    }
    return { plan: planForecast(ctx, parsed.data) };
  } catch (err) {
    return { error: reportItemError(err, k) };
  }
}

export async function runBatch<T = ForecastResponse>(
  ctx: ForecastCtx,
  principal: Principal,
  requests: unknown[],
  call: CallInfo,
  reportError: (err: unknown, itemRequestId: string) => ErrorReport,
  finish: (response: ForecastResponse) => Promise<T> | T = (r) => r as T,
  /** `finish` only serialises: see runPlanned. */
  encode = false,
): Promise<{ object: 'list'; data: BatchItem<T>[] }> {
  const planned = await planBatch(ctx, requests, (err, k) => reportError(err, `${call.requestId}:${k}`));
  const data = await Promise.all(
    planned.map(async (p, k): Promise<BatchItem<T>> => {
      if ('error' in p) return { ok: false, result: null, error: p.error };
      const itemId = `${call.requestId}:${k}`;
      try {
        const result = await runPlanned(ctx, principal, p.plan, { ...call, requestId: itemId }, finish, undefined, encode);
        return { ok: true, result, error: null };
      } catch (err) {
        return { ok: false, result: null, error: reportError(err, itemId) };
      }
    }),
  );
  return { object: 'list', data };
}
