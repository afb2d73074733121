import { z } from 'zod';
import type { Principal } from '../accounts/credentials.ts';
import { EnsembleForecastRequest } from '../ensemble/schemas.ts';
import { ensembleAccess, planEnsemble } from '../ensemble/service.ts';
import { AppError, ERROR_CODES, reportError, ValidationFailure, zodIssues } from '../shared/errors.ts';
import { planBatch } from './batch.ts';
import type { Usage } from './metering.ts';
import { ForecastBatchRequest, ForecastRequest, UsageBody } from './schemas.ts';
import { planForecast, type ForecastCtx } from './service.ts';

/**
 * Quotes (POST /v1/forecast/quote, and `dry_run: true` on the three forecast routes): the same
 * planning code as the real call (planForecast, planBatch, planEnsemble; the same access check;
 * the meter's own payment rule), stopped before anything is held, run or charged.
 */
export const QUOTED_OPERATIONS = ['forecast', 'forecastBatch', 'forecastEnsemble'] as const;
export type QuotedOperation = (typeof QUOTED_OPERATIONS)[number];

export const ForecastQuoteRequest = z
  .object({
    operation: z
      .enum(QUOTED_OPERATIONS)
      .default('forecast')
      .describe('The call to price: forecast (POST /v1/forecast, default), forecastBatch (/v1/forecast/batch) or forecastEnsemble (/v1/forecast/ensemble).'),
    request: z
      .record(z.string(), z.unknown())
      .describe("The body you would send to that operation; it is validated as the operation validates it (422 under 'request')."),
  })
  .strict()
  .meta({ id: 'ForecastQuoteRequest' });
export type ForecastQuoteRequestT = z.infer<typeof ForecastQuoteRequest>;

const QuoteRefusal = z
  .object({
    status: z.number().int().describe('HTTP status the call would get: 402, 403, 404, 409, 413 or 503.'),
    code: z.enum(ERROR_CODES),
    message: z.string(),
  })
  .meta({ id: 'QuoteRefusal' });
type Refusal = z.infer<typeof QuoteRefusal>;

export const ForecastQuote = z
  .object({
    object: z.literal('forecast_quote'),
    operation: z.enum(QUOTED_OPERATIONS),
    usage: UsageBody.describe('Tokens the call would use (an ensemble: every backtest and final forecast).'),
    credits: z.number().int().describe('Credits the call would be charged (an ensemble: at most this; a failing candidate is not charged).'),
    cost_nano_usd: z.number().int().describe('The same in nano-USD.'),
    balance_source: z.enum(['free', 'metered', 'free_and_metered']).nullable().describe('Which balance would pay; null when the call would be refused.'),
    free_credits: z.number().int().describe('Part paid from prepaid (free) credits.'),
    metered_credits: z.number().int().describe('Part billed through metered billing.'),
    credits_available: z.number().int().nullable().describe('Prepaid credits on the account now.'),
    would_refuse: QuoteRefusal.nullable().describe('The refusal the call would get now, or null.'),
    items: z
      .array(z.object({ credits: z.number().int(), would_refuse: QuoteRefusal.nullable() }))
      .nullable()
      .describe('forecastBatch: each item (an item fails alone); null otherwise.'),
  })
  .meta({ id: 'ForecastQuote' });
export type ForecastQuoteT = z.infer<typeof ForecastQuote>;

export type QuoteCtx = ForecastCtx & { config: { billing: { creditPriceNanoUsd: number } } };

const ZERO: Usage = { input_tokens: 0, output_tokens: 0, total_tokens: 0 };
const add = (a: Usage, b: Usage): Usage => ({
  input_tokens: a.input_tokens + b.input_tokens,
  output_tokens: a.output_tokens + b.output_tokens,
  total_tokens: a.total_tokens + b.total_tokens,
});

/** A refusal the call would answer with; anything that is not a known refusal propagates. */
function refusalOf(err: unknown): Refusal {
  if (err instanceof AppError) return { status: err.status, code: err.code, message: err.message };
  throw err;
}

/** The operation's own validation, with paths under `prefix` (`['request']` for the quote route). */
function parseAs<S extends z.ZodType>(schema: S, raw: unknown, prefix: (string | number)[]): z.output<S> {
  const r = schema.safeParse(raw);
  if (!r.success) throw new ValidationFailure(zodIssues(r.error.issues, raw).map((i) => ({ ...i, path: [...prefix, ...i.path] })));
  return r.data;
}

/**
 * Prices `request` as `operation` would, for `principal`, now. Validation failures are thrown
 * (422, as the call would answer); refusals the call would get after validation (404, 413, 403,
 * 402, 503) are answered in `would_refuse`.
 */
export async function quoteCall(
  ctx: QuoteCtx,
  principal: Principal,
  operation: QuotedOperation,
  request: unknown,
  prefix: (string | number)[] = ['request'],
): Promise<ForecastQuoteT> {
  let usage = ZERO;
  let credits = 0;
  let refusal: Refusal | null = null;
  let items: ForecastQuoteT['items'] = null;
  try {
    if (operation === 'forecast') {
      const planned = planForecast(ctx, parseAs(ForecastRequest, request, prefix));
      await ctx.meter.checkModelAccess(principal, planned.prepared.model.id);
      usage = planned.prepared.usage;
      credits = planned.credits;
    } else if (operation === 'forecastBatch') {
      const req = parseAs(ForecastBatchRequest, request, prefix);
      const planned = await planBatch(ctx, req.requests, (err, k) => {
        const known = reportError(err, [...prefix, 'requests', k]);
        if (!known) throw err;
        return known;
      });
      items = [];
      for (const p of planned) {
        if ('error' in p) {
          items.push({ credits: 0, would_refuse: { status: p.error.status, code: p.error.code, message: p.error.error } });
          continue;
        }
        try {
          await ctx.meter.checkModelAccess(principal, p.plan.prepared.model.id);
        } catch (err) {
          items.push({ credits: 0, would_refuse: refusalOf(err) });
          continue;
        }
        items.push({ credits: p.plan.credits, would_refuse: null });
        usage = add(usage, p.plan.prepared.usage);
        credits += p.plan.credits;
      }
    } else {
      const ensemble = parseAs(EnsembleForecastRequest, request, prefix);
      const plan = await planEnsemble(ctx, ensemble, ensembleAccess(ctx, principal, Boolean(ensemble.models)));
      usage = plan.usage;
      credits = plan.totalCredits;
    }
  } catch (err) {
    if (err instanceof ValidationFailure) throw err;
    refusal = refusalOf(err);
  }
  const pay = refusal ? null : await ctx.meter.preview?.(principal, credits);
  if (pay?.refusal) refusal = refusalOf(pay.refusal);
  const free = refusal ? 0 : (pay?.free ?? credits);
  const metered = refusal ? 0 : (pay?.metered ?? 0);
  return {
    object: 'forecast_quote',
    operation,
    usage,
    credits,
    cost_nano_usd: credits * ctx.config.billing.creditPriceNanoUsd,
    balance_source: refusal ? null : metered === 0 ? 'free' : free === 0 ? 'metered' : 'free_and_metered',
    free_credits: free,
    metered_credits: metered,
    credits_available: pay?.available ?? null,
    would_refuse: refusal,
    items,
  };
}

export function quoteSummary(q: ForecastQuoteT): string {
  const refused = q.would_refuse ? ` It would be refused now: ${q.would_refuse.status} ${q.would_refuse.code} (${q.would_refuse.message}).` : '';
  return `Quote for ${q.operation}: ${q.credits} credits (${q.usage.total_tokens} tokens), paid from ${q.balance_source ?? 'nothing'}.${refused}`;
}
