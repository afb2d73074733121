import type { Principal } from '../accounts/credentials.ts';
import { AppError, type ErrorReport, ValidationFailure, zodIssues } from '../shared/errors.ts';
import { ForecastRequest, type ForecastResponse, LIMITS } from './schemas.ts';
import { runForecast, type CallInfo, type ForecastCtx } from './service.ts';

export type BatchItem = { ok: true; result: ForecastResponse; error: null } | { ok: false; result: null; error: ErrorReport };

/**
 * Each item is validated, authorised and metered on its own and all run concurrently (the
 * engine's pool bounds the real parallelism). Item k is billed under request id `<id>:<k>`.
 * A failed item becomes its error entry through the caller's own error mapper (REST and MCP
 * place validation paths differently).
 */
export async function runBatch(
  ctx: ForecastCtx,
  principal: Principal,
  requests: unknown[],
  call: CallInfo,
  reportError: (err: unknown, itemRequestId: string) => ErrorReport,
): Promise<{ object: 'list'; data: BatchItem[] }> {
  if (requests.length > LIMITS.maxBatch) {
    throw new AppError('request_too_large', `A batch holds at most ${LIMITS.maxBatch} requests (got ${requests.length})`);
  }
  const data = await Promise.all(
    requests.map(async (raw, k): Promise<BatchItem> => {
      const itemId = `${call.requestId}:${k}`;
      try {
        const parsed = ForecastRequest.safeParse(raw);
        if (!parsed.success) throw new ValidationFailure(zodIssues(parsed.error.issues, raw));
        const result = await runForecast(ctx, principal, parsed.data, { requestId: itemId, source: call.source });
        return { ok: true, result, error: null };
      } catch (err) {
        return { ok: false, result: null, error: reportError(err, itemId) };
      }
    }),
  );
  return { object: 'list', data };
}
