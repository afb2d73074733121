import { z } from 'zod';

export const BillingSummary = z
  .object({
    free_credits: z.object({
      granted: z.number().int().describe('Credits ever given to the account (free allowance and administrator adjustments)'),
      used: z.number().int().describe('Credits of those consumed by calls'),
      remaining: z.number().int().min(0),
    }),
    billing_active: z.boolean(),
    provider: z.enum(['none', 'local', 'stripe']),
    credit_price_nano_usd: z.number().int().min(0),
    metered: z.object({
      period_start: z.string(),
      period_end: z.string(),
      credits: z.number().int().min(0),
      cost_nano_usd: z.number().int().min(0),
    }),
    rate_limit: z.object({ requests_per_minute: z.number().int(), scope: z.literal('account') }),
  })
  .meta({ id: 'BillingSummary' });

export const PaymentsBillingProfile = z
  .object({
    provider: z.enum(['none', 'local', 'stripe']),
    billing_active: z.boolean(),
    customer_id: z.string().nullable(),
    subscription_id: z.string().nullable(),
    billing_changed_at: z.string().nullable(),
    available_actions: z.array(z.enum(['checkout', 'portal'])),
  })
  .meta({ id: 'PaymentsBillingProfile' });

const Url = z.string().max(2048);
export const PaymentsBillingSessionRequest = z
  .object({
    action: z.enum(['checkout', 'portal']),
    success_url: Url.nullish(),
    cancel_url: Url.nullish(),
    return_url: Url.nullish(),
  })
  .meta({ id: 'PaymentsBillingSessionRequest' });

export const PaymentsBillingSession = z
  .object({ provider: z.enum(['none', 'local', 'stripe']), action: z.enum(['checkout', 'portal']), session_id: z.string(), url: z.string() })
  .meta({ id: 'PaymentsBillingSession' });

export const BillingCostsRequest = z.object({ requestIds: z.array(z.string().min(1).max(256)).max(10000) }).meta({ id: 'BillingCostsRequest' });

export const BillingCostsResponse = z
  .object({ requests: z.array(z.object({ requestId: z.string(), costNanoUsd: z.number().int().min(0) })) })
  .meta({ id: 'BillingCostsResponse' });

export const WebhookAck = z.object({ received: z.literal(true), outcome: z.enum(['applied', 'duplicate', 'ignored', 'unknown_account', 'stale']) });
