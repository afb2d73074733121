import type { Principal } from '../accounts/credentials.ts';
import { AppError, ValidationFailure } from '../http/errors.ts';
import { issuesToDetail } from '../http/validation.ts';
import { ForecastRequest, type ForecastResponse } from './schemas.ts';
import { planForecast, runPlanned, type CallInfo, type ForecastCtx, type Planned } from './service.ts';

export interface BatchItemError {
  error: string;
  code: AppError['code'] | 'validation_error';
  status: number;
  detail?: Record<string, unknown>[];
}

export type BatchItem<T = ForecastResponse> = { ok: true; result: T; error: null } | { ok: false; result: null; error: BatchItemError };

/** Turns any failure of one item into its error entry; unexpected faults stay generic. */
export function itemError(err: unknown, requestId: string): BatchItemError {
  if (err instanceof AppError) return { error: err.message, code: err.code, status: err.status };
  if (err instanceof ValidationFailure) {
    return { error: err.message, code: 'validation_error', status: 422, detail: err.detail as unknown as Record<string, unknown>[] };
  }
  return { error: `Internal error (request id ${requestId})`, code: 'internal_error', status: 500 };
}

/**
 * Each item is validated, authorised and metered on its own and all run concurrently (the
 * engine's pool and the per-account cap bound the real parallelism). Item k is billed under
 * request id `<id>:<k>`. Every item is planned first: when the items' responses together would
 * pass the output cap, the whole batch is refused (413) before any credit is held.
 * `finish` turns each item's response into what the caller sends (e.g. serialised JSON); the
 * item is debited only once that succeeded.
 */
export async function runBatch<T = ForecastResponse>(
  ctx: ForecastCtx,
  principal: Principal,
  requests: unknown[],
  call: CallInfo,
  onUnexpected?: (err: unknown) => void,
  finish: (response: ForecastResponse) => Promise<T> | T = (r) => r as T,
): Promise<{ object: 'list'; data: BatchItem<T>[] }> {
  const planned = requests.map((raw, k): { plan: Planned } | { error: BatchItemError } => {
    const parsed = ForecastRequest.safeParse(raw);
    if (!parsed.success) {
      const detail = issuesToDetail('body', parsed.error.issues, raw);
      return { error: { error: 'Request validation failed', code: 'validation_error', status: 422, detail: detail as unknown as Record<string, unknown>[] } };
    }
    try {
      return { plan: planForecast(ctx, parsed.data) };
    } catch (err) {
      if (!(err instanceof AppError) && !(err instanceof ValidationFailure)) onUnexpected?.(err);
      return { error: itemError(err, `${call.requestId}:${k}`) };
    }
  });
  const outputValues = planned.reduce((a, p) => a + ('plan' in p ? p.plan.prepared.usage.output_tokens : 0), 0);
  const cap = ctx.config.forecast.maxOutputValues;
  if (outputValues > cap) {
    throw new AppError(
      'request_too_large',
      `The batch's responses would hold ${outputValues} numbers together (requests[].parameters.prediction_length × series × ` +
        `(1 + quantile_levels + num_samples), summed over requests); at most ${cap} are accepted. Split the batch or lower those fields`,
    );
  }
  const data = await Promise.all(
    planned.map(async (p, k): Promise<BatchItem<T>> => {
      if ('error' in p) return { ok: false, result: null, error: p.error };
      const itemId = `${call.requestId}:${k}`;
      try {
        const result = await runPlanned(ctx, principal, p.plan, { requestId: itemId, source: call.source }, finish);
        return { ok: true, result, error: null };
      } catch (err) {
        if (!(err instanceof AppError) && !(err instanceof ValidationFailure)) onUnexpected?.(err);
        return { ok: false, result: null, error: itemError(err, itemId) };
      }
    }),
  );
  return { object: 'list', data };
}
