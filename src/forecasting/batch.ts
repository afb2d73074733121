import type { Principal } from '../accounts/credentials.ts';
import { AppError, ValidationFailure } from '../http/errors.ts';
import { issuesToDetail } from '../http/validation.ts';
import { ForecastRequest, type ForecastResponse } from './schemas.ts';
import { runForecast, type CallInfo, type ForecastCtx } from './service.ts';

export interface BatchItemError {
  error: string;
  code: AppError['code'] | 'validation_error';
  status: number;
  detail?: Record<string, unknown>[];
}

export type BatchItem = { ok: true; result: ForecastResponse; error: null } | { ok: false; result: null; error: BatchItemError };

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
 * engine's pool bounds the real parallelism). Item k is billed under request id `<id>:<k>`.
 */
export async function runBatch(
  ctx: ForecastCtx,
  principal: Principal,
  requests: unknown[],
  call: CallInfo,
  onUnexpected?: (err: unknown) => void,
): Promise<{ object: 'list'; data: BatchItem[] }> {
  const data = await Promise.all(
    requests.map(async (raw, k): Promise<BatchItem> => {
      const itemId = `${call.requestId}:${k}`;
      const parsed = ForecastRequest.safeParse(raw);
      if (!parsed.success) {
        const detail = issuesToDetail('body', parsed.error.issues, raw);
        return { ok: false, result: null, error: { error: 'Request validation failed', code: 'validation_error', status: 422, detail: detail as unknown as Record<string, unknown>[] } };
      }
      try {
        const result = await runForecast(ctx, principal, parsed.data, { requestId: itemId, source: call.source });
        return { ok: true, result, error: null };
      } catch (err) {
        if (!(err instanceof AppError) && !(err instanceof ValidationFailure)) onUnexpected?.(err);
        return { ok: false, result: null, error: itemError(err, itemId) };
      }
    }),
  );
  return { object: 'list', data };
}
