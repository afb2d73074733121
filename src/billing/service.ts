import type { Kysely } from 'kysely';
import type { Principal } from '../accounts/credentials.ts';
import type { Config } from '../config.ts';
import type { Database } from '../db/index.ts';
import type { DB } from '../db/schema.ts';
import { AppError, ValidationFailure } from '../shared/errors.ts';
import type { Clock } from '../shared/clock.ts';
import { iso } from '../shared/clock.ts';
import { ensureBillingAccount, getBillingAccount } from './ledger.ts';
import type { PaymentsProvider, ProviderAccount, ProviderUser } from './providers/types.ts';

export interface BillingCtx {
  database: Database;
  clock: Clock;
  config: Config;
  payments: PaymentsProvider;
}

const num = (v: unknown): number => Number(v ?? 0);

/** First instant of the calendar month (UTC) holding `now`, and of the next one. */
export function billingPeriod(now: number): { start: number; end: number } {
  const d = new Date(now);
  return { start: Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1), end: Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) };
}

export const rateLimitOf = (config: Config, billingActive: boolean): number =>
  billingActive ? config.rateLimit.billingPerMinute : config.rateLimit.freePerMinute;

export async function billingSummary(ctx: BillingCtx, principal: Principal) {
  const db = ctx.database.db;
  const userId = principal.user.id;
  const now = ctx.clock.now();
  await ensureBillingAccount(db, userId, now);
  const acct = await getBillingAccount(db, userId);
  const sums = await db
    .selectFrom('credit_ledger')
    .select((eb) => [
      eb.fn.sum<string | number>(eb.case().when('kind', '!=', 'debit').then(eb.ref('amount')).else(0).end()).as('granted'),
      eb.fn.sum<string | number>(eb.case().when('kind', '=', 'debit').then(eb.ref('amount')).else(0).end()).as('debited'),
    ])
    .where('user_id', '=', userId)
    .executeTakeFirst();
  const period = billingPeriod(now);
  const metered = await db
    .selectFrom('credit_ledger')
    .select((eb) => eb.fn.sum<string | number>('metered_credits').as('credits'))
    .where('user_id', '=', userId)
    .where('kind', '=', 'debit')
    .where('created_at', '>=', period.start)
    .where('created_at', '<', period.end)
    .executeTakeFirst();
  const meteredCredits = num(metered?.credits);
  const active = acct?.billing_active ?? false;
  return {
    free_credits: { granted: num(sums?.granted), used: -num(sums?.debited), remaining: acct?.balance ?? 0 },
    billing_active: active,
    provider: ctx.payments.name,
    credit_price_nano_usd: ctx.config.billing.creditPriceNanoUsd,
    metered: {
      period_start: iso(period.start),
      period_end: iso(period.end),
      credits: meteredCredits,
      cost_nano_usd: meteredCredits * ctx.config.billing.creditPriceNanoUsd,
    },
    rate_limit: { requests_per_minute: rateLimitOf(ctx.config, active), scope: 'account' as const },
  };
}

export async function paymentsProfile(ctx: BillingCtx, principal: Principal) {
  const db = ctx.database.db;
  await ensureBillingAccount(db, principal.user.id, ctx.clock.now());
  const row = await db.selectFrom('billing_accounts').selectAll().where('user_id', '=', principal.user.id).executeTakeFirstOrThrow();
  const active = row.billing_active === 1;
  return {
    provider: ctx.payments.name,
    billing_active: active,
    customer_id: row.provider === ctx.payments.name ? row.customer_id : null,
    subscription_id: row.provider === ctx.payments.name ? row.subscription_id : null,
    billing_changed_at: row.billing_changed_at === null ? null : iso(row.billing_changed_at),
    available_actions: (active ? ['portal'] : row.customer_id ? ['checkout', 'portal'] : ['checkout']) as Array<'checkout' | 'portal'>,
  };
}

function returnUrl(ctx: BillingCtx, field: string, given: string | null | undefined, fallback: string): string {
  const url = given ?? fallback;
  let origin: string;
  try {
    origin = new URL(url).origin;
  } catch {
    throw new ValidationFailure([{ path: [field], msg: 'must be an absolute http(s) URL', type: 'url_parsing', input: url }]);
  }
  if (!ctx.config.billing.returnOrigins.includes(origin)) {
    throw new ValidationFailure([
      {
        path: [field],
        msg: `must point to one of the allowed origins (${ctx.config.billing.returnOrigins.join(', ')}); see BILLING_RETURN_ORIGINS`,
        type: 'url_origin',
        input: url,
      },
    ]);
  }
  return url;
}

export async function createPaymentsSession(
  ctx: BillingCtx,
  principal: Principal,
  input: {
    action: 'checkout' | 'portal';
    success_url?: string | null | undefined;
    cancel_url?: string | null | undefined;
    return_url?: string | null | undefined;
  },
) {
  const db = ctx.database.db;
  const now = ctx.clock.now();
  await ensureBillingAccount(db, principal.user.id, now);
  const acct = await getBillingAccount(db, principal.user.id);
  const account: ProviderAccount = {
    customer_id: acct?.provider === ctx.payments.name ? (acct.customer_id ?? null) : null,
    billing_active: acct?.billing_active ?? false,
  };
  const user: ProviderUser = { id: principal.user.id, email: principal.user.email };
  const base = `${ctx.config.publicBaseUrl}/account/billing`;
  if (input.action === 'checkout') {
    if (account.billing_active) throw new AppError('conflict', 'Billing is already active; use action "portal" to manage it');
    const s = await ctx.payments.checkout(user, account, {
      successUrl: returnUrl(ctx, 'success_url', input.success_url, `${base}?checkout=success`),
      cancelUrl: returnUrl(ctx, 'cancel_url', input.cancel_url, `${base}?checkout=cancel`),
    });
    return { provider: ctx.payments.name, action: input.action, session_id: s.session_id, url: s.url };
  }
  if (!account.billing_active && !account.customer_id) throw new AppError('conflict', 'There is no billing to manage yet; use action "checkout" first');
  const s = await ctx.payments.portal(user, account, { returnUrl: returnUrl(ctx, 'return_url', input.return_url, base) });
  return { provider: ctx.payments.name, action: input.action, session_id: s.session_id, url: s.url };
}

/** Stores the provider's customer id once (first writer wins) and returns the stored one. */
export function customerStore(db: Kysely<DB>, clock: Clock, provider: string) {
  return async (user: ProviderUser, account: ProviderAccount, create: () => Promise<string>): Promise<string> => {
    if (account.customer_id) return account.customer_id;
    const id = await create();
    const now = clock.now();
    await ensureBillingAccount(db, user.id, now);
    await db
      .updateTable('billing_accounts')
      .set({ provider, customer_id: id, updated_at: now })
      .where('user_id', '=', user.id)
      .where((eb) => eb.or([eb('customer_id', 'is', null), eb('provider', '!=', provider)]))
      .execute();
    const row = await db.selectFrom('billing_accounts').select('customer_id').where('user_id', '=', user.id).executeTakeFirstOrThrow();
    return row.customer_id ?? id;
  };
}

const COST_CHUNK = 200;

/**
 * Cost of the caller's own requests, by request id. A batch's id also covers its items
 * (`<id>:<k>`). Ids the caller does not own, or that cost nothing, report 0.
 */
export async function costReport(ctx: Pick<BillingCtx, 'database'>, principal: Principal, requestIds: string[]) {
  const ids = [...new Set(requestIds)];
  const totals = new Map<string, number>(ids.map((id) => [id, 0]));
  const db = ctx.database.db;
  for (let i = 0; i < ids.length; i += COST_CHUNK) {
    const chunk = ids.slice(i, i + COST_CHUNK);
    const rows = await db
      .selectFrom('usage_events')
      .select(['request_id', 'cost_nano_usd'])
      .where('user_id', '=', principal.user.id)
      .where((eb) =>
        eb.or([
          eb('request_id', 'in', chunk),
          // `<id>:` ≤ item id < `<id>;` (';' follows ':' in code order): the batch items of <id>.
          ...chunk.map((id) => eb.and([eb('request_id', '>=', `${id}:`), eb('request_id', '<', `${id};`)])),
        ]),
      )
      .execute();
    const inChunk = new Set(chunk);
    for (const r of rows) {
      // The event counts for its own id and for every requested id it is an item of.
      const owners = [r.request_id];
      for (let i = r.request_id.indexOf(':'); i >= 0; i = r.request_id.indexOf(':', i + 1)) owners.push(r.request_id.slice(0, i));
      for (const id of owners) if (inChunk.has(id)) totals.set(id, (totals.get(id) ?? 0) + num(r.cost_nano_usd));
    }
  }
  return { requests: ids.map((requestId) => ({ requestId, costNanoUsd: totals.get(requestId) ?? 0 })) };
}

/**
 * Where metered usage recorded under `provider` is reported: the current provider, or `local`
 * (nothing to send: no money moved, the rows are closed). Usage metered under a provider that is
 * no longer configured stays pending until it is configured again, never sent to another one.
 */
function reporterFor(ctx: BillingCtx, provider: string): PaymentsProvider['reportUsage'] | null {
  if (provider === ctx.payments.name) return (items) => ctx.payments.reportUsage(items);
  if (provider === 'local') return async () => undefined;
  return null;
}

/**
 * Sends pending metered usage to the provider it was metered under (transactional outbox,
 * at-least-once, idempotent ids). Returns how many rows were reported.
 */
export async function reportPendingUsage(ctx: BillingCtx, batch = 100): Promise<number> {
  const db = ctx.database.db;
  const providers = await db.selectFrom('metered_usage_outbox').select('provider').distinct().where('reported_at', 'is', null).execute();
  let reported = 0;
  let failure: unknown = null;
  for (const { provider } of providers) {
    const report = reporterFor(ctx, provider);
    if (!report) continue;
    const rows = await db
      .selectFrom('metered_usage_outbox')
      .select(['id', 'user_id', 'customer_id', 'credits', 'created_at'])
      .where('reported_at', 'is', null)
      .where('provider', '=', provider)
      .orderBy('created_at')
      .limit(batch)
      .execute();
    if (rows.length === 0) continue;
    const items = rows.map((r) => ({ ...r, credits: num(r.credits) }));
    const ids = items.map((r) => r.id);
    try {
      await report(items);
    } catch (err) {
      await db
        .updateTable('metered_usage_outbox')
        .set((eb) => ({ attempts: eb('attempts', '+', 1), last_error: String(err instanceof Error ? err.message : err).slice(0, 500) }))
        .where('id', 'in', ids)
        .execute();
      failure ??= err;
      continue;
    }
    await db.updateTable('metered_usage_outbox').set({ reported_at: ctx.clock.now() }).where('id', 'in', ids).where('reported_at', 'is', null).execute();
    reported += items.length;
  }
  if (failure !== null) throw failure;
  return reported;
}

export function startUsageReporter(ctx: BillingCtx, onError: (err: unknown) => void, everyMs = 15_000): { stop(): void } {
  const timer = setInterval(() => void reportPendingUsage(ctx).catch(onError), everyMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
