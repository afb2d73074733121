import { sql, type Insertable, type Kysely } from 'kysely';
import type { CreditHoldsTable, CreditLedgerTable, DB, UsageEventsTable } from '../db/schema.ts';
import type { ChargeRequest } from '../forecasting/metering.ts';
import { AppError } from '../shared/errors.ts';
import { rearmLowBalanceAlert } from './alerts.ts';
import { newId } from '../shared/ids.ts';

/**
 * The credit ledger: the only code that moves credits.
 *
 * Invariant, per account, at every instant (tests and the crash script check it):
 *   sum(credit_ledger.amount) = billing_accounts.balance + sum(credit_holds.free_credits)
 * Every change of `balance` happens in the same transaction as the ledger entry or hold that
 * explains it, and every decrement is a guarded UPDATE whose changed-row count is checked.
 */
type Db = Kysely<DB>;

export interface BillingAccount {
  user_id: string;
  balance: number;
  billing_active: boolean;
  provider: string | null;
  customer_id: string | null;
}

export async function getBillingAccount(db: Db, userId: string): Promise<BillingAccount | null> {
  const row = await db
    .selectFrom('billing_accounts')
    .select(['user_id', 'balance', 'billing_active', 'provider', 'customer_id'])
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return row ? { ...row, balance: Number(row.balance), billing_active: row.billing_active === 1 } : null;
}

/** Creates the counter row (balance 0) when missing; a no-op when it exists. */
export async function ensureBillingAccount(db: Db, userId: string, now: number): Promise<void> {
  await db
    .insertInto('billing_accounts')
    .values({ user_id: userId, balance: 0, billing_active: 0, created_at: now, updated_at: now })
    .onConflict((oc) => oc.column('user_id').doNothing())
    .execute();
}

/**
 * Grants an account its free credits, once in its lifetime: the guarded update on
 * users.free_credits_granted_at decides, so a second verification, a retry or a race grants
 * nothing more. Creates the counter row when missing. Returns the credits granted (0 if already).
 */
export async function grantFreeCreditsOnce(trx: Db, userId: string, freeCredits: number, now: number): Promise<number> {
  await ensureBillingAccount(trx, userId, now);
  const claimed = await trx
    .updateTable('users')
    .set({ free_credits_granted_at: now })
    .where('id', '=', userId)
    .where('free_credits_granted_at', 'is', null)
    .executeTakeFirst();
  if (Number(claimed.numUpdatedRows) !== 1 || freeCredits <= 0) return 0;
  await trx
    .updateTable('billing_accounts')
    .set({ balance: sql`balance + ${freeCredits}`, updated_at: now })
    .where('user_id', '=', userId)
    .execute();
  await trx
    .insertInto('credit_ledger')
    .values({ id: newId('cle'), user_id: userId, kind: 'grant', amount: freeCredits, metered_credits: 0, description: 'free credits', created_at: now })
    .execute();
  await rearmLowBalanceAlert(trx, userId);
  return freeCredits;
}

export type HoldRow = CreditHoldsTable;

/**
 * Decides how a call of `credits` is paid: free (prepaid) credits first, then metered billing
 * when active; otherwise it is refused. Pure: the caller applies it with a guarded update.
 */
export function planPayment(balance: number, billingActive: boolean, credits: number): { free: number; metered: number } | null {
  if (balance >= credits) return { free: credits, metered: 0 };
  if (!billingActive) return null;
  return { free: balance, metered: credits - balance };
}

const MAX_RESERVE_ATTEMPTS = 50;

/** The 402 of a call the balance does not cover (the hold and the quote say the same). */
export const billingRequired = (credits: number, balance: number): AppError =>
  new AppError(
    'billing_required',
    `This call costs ${credits} credits and ${balance} free credits are left; activate billing to continue (POST /api/account/billing/payments)`,
  );

/**
 * Takes `credits` from the account inside the caller's transaction: free (prepaid) credits first,
 * then metered when billing is active, or throws 402 billing_required. Writes nothing unless it
 * succeeds (every decrement is guarded; a compare-and-set that lost a race starts over).
 */
export async function reserveIn(trx: Db, userId: string, credits: number, now: number): Promise<{ free: number; metered: number }> {
  for (let attempt = 0; attempt < MAX_RESERVE_ATTEMPTS; attempt++) {
    // Fast path: the balance covers the whole price.
    const full = await trx
      .updateTable('billing_accounts')
      .set({ balance: sql`balance - ${credits}`, updated_at: now })
      .where('user_id', '=', userId)
      .where('balance', '>=', credits)
      .executeTakeFirst();
    if (Number(full.numUpdatedRows) === 1) return { free: credits, metered: 0 };
    const acct = await getBillingAccount(trx, userId);
    const balance = acct?.balance ?? 0;
    const plan = planPayment(balance, acct?.billing_active ?? false, credits);
    if (!plan) throw billingRequired(credits, balance);
    if (plan.free > 0) {
      // Compare-and-set: take exactly what was seen, or start over if it moved meanwhile.
      const part = await trx
        .updateTable('billing_accounts')
        .set({ balance: sql`balance - ${plan.free}`, updated_at: now })
        .where('user_id', '=', userId)
        .where('balance', '=', plan.free)
        .executeTakeFirst();
      if (Number(part.numUpdatedRows) !== 1) continue;
    }
    return plan;
  }
  throw new AppError('upstream_unavailable', 'The account is too busy to reserve credits; retry shortly', { 'retry-after': '1' });
}

/** Reserves the worst-case price before inference, or throws 402 billing_required. */
export async function reserve(db: Db, userId: string, requestId: string, credits: number, now: number, ttlMs: number): Promise<HoldRow> {
  return db.transaction().execute(async (trx): Promise<HoldRow> => {
    const split = await reserveIn(trx, userId, credits, now);
    const row: HoldRow = {
      id: newId('hld'),
      user_id: userId,
      request_id: requestId,
      free_credits: split.free,
      metered_credits: split.metered,
      created_at: now,
      expires_at: now + ttlMs,
    };
    await trx.insertInto('credit_holds').values(row).execute();
    return row;
  });
}

/** Gives a hold back. Returns false when it was already settled or released (idempotent). */
export async function releaseHold(db: Db, hold: Pick<HoldRow, 'id' | 'user_id' | 'free_credits'>, now: number): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const del = await trx.deleteFrom('credit_holds').where('id', '=', hold.id).executeTakeFirst();
    if (Number(del.numDeletedRows) !== 1) return false;
    if (hold.free_credits > 0) {
      await trx
        .updateTable('billing_accounts')
        .set({ balance: sql`balance + ${hold.free_credits}`, updated_at: now })
        .where('user_id', '=', hold.user_id)
        .execute();
    }
    return true;
  });
}

export interface Settlement extends ChargeRequest {
  latencyMs: number;
  creditPriceNanoUsd: number;
  now: number;
  /** How the call ended: `timed_out` when only jobs that ran out of time are charged (ADR 0039). Default succeeded. */
  status?: UsageStatus;
}

/** A usage event's status: the call succeeded, or it failed and only its jobs that ran the engine's whole time limit were charged. */
export type UsageStatus = 'succeeded' | 'timed_out';

/** What a settlement charges: the price (at most the hold), free and metered parts, and the refund of free credits. */
export function settlementSplit(
  hold: Pick<HoldRow, 'free_credits' | 'metered_credits'>,
  credits: number,
): { actual: number; refund: number; free: number; metered: number } {
  const held = hold.free_credits + hold.metered_credits;
  const actual = Math.max(0, Math.min(held, Math.round(credits)));
  let refund = held - actual;
  const meteredBack = Math.min(refund, hold.metered_credits);
  const metered = hold.metered_credits - meteredBack;
  refund -= meteredBack;
  const free = hold.free_credits - refund;
  return { actual, refund, free, metered };
}

/**
 * Turns a hold into the debit and the usage event, in one transaction. A price below the hold
 * gives the difference back (metered part first, then free credits).
 */
/** The usage event of a settled hold (one place for the row, used by `settle` and the group commit). */
export function usageEventRow(
  hold: Pick<HoldRow, 'user_id'>,
  s: Settlement,
  id: string,
  split: { actual: number; free: number; metered: number },
): Insertable<UsageEventsTable> {
  return {
    id,
    user_id: hold.user_id,
    request_id: s.requestId,
    created_at: s.now,
    model: s.model,
    source: s.source,
    credential_kind: s.principal.kind,
    key_id: s.principal.kind === 'api_key' ? s.principal.credentialId : null,
    input_tokens: s.usage.input_tokens,
    output_tokens: s.usage.output_tokens,
    total_tokens: s.usage.total_tokens,
    credits: split.actual,
    free_credits: split.free,
    metered_credits: split.metered,
    cost_nano_usd: split.actual * s.creditPriceNanoUsd,
    latency_ms: s.latencyMs,
    status: s.status ?? 'succeeded',
  };
}

/** The ledger's debit entry of a settled call, beside its usage event (`usageEventRow`). */
export function debitEntryRow(userId: string, s: Settlement, usageEventId: string, split: { free: number; metered: number }): Insertable<CreditLedgerTable> {
  return {
    id: newId('cle'),
    user_id: userId,
    kind: 'debit',
    amount: -split.free,
    metered_credits: split.metered,
    request_id: s.requestId,
    usage_event_id: usageEventId,
    description: `${s.source} ${s.model}`,
    created_at: s.now,
  };
}

export async function settle(db: Db, hold: HoldRow, s: Settlement): Promise<{ usageEventId: string }> {
  const { actual, refund, free, metered } = settlementSplit(hold, s.credits);
  return db.transaction().execute(async (trx) => {
    const del = await trx.deleteFrom('credit_holds').where('id', '=', hold.id).executeTakeFirst();
    // The sweeper released it (inference outlived the hold): no 200 may go out without its debit.
    if (Number(del.numDeletedRows) !== 1) throw new Error(`credit hold ${hold.id} expired before the call finished`);
    if (refund > 0) {
      await trx
        .updateTable('billing_accounts')
        .set({ balance: sql`balance + ${refund}`, updated_at: s.now })
        .where('user_id', '=', hold.user_id)
        .execute();
    }
    const usageEventId = newId('use');
    await trx
      .insertInto('usage_events')
      .values({
        ...usageEventRow(hold, s, usageEventId, { actual, free, metered }),
      })
      .execute();
    await trx
      .insertInto('credit_ledger')
      .values(debitEntryRow(hold.user_id, s, usageEventId, { free, metered }))
      .execute();
    if (metered > 0) {
      const acct = await getBillingAccount(trx, hold.user_id);
      await trx
        .insertInto('metered_usage_outbox')
        .values({
          id: newId('mub'),
          user_id: hold.user_id,
          provider: acct?.provider ?? 'local',
          customer_id: acct?.customer_id ?? null,
          usage_event_id: usageEventId,
          credits: metered,
          created_at: s.now,
          reported_at: null,
          attempts: 0,
          last_error: null,
        })
        .execute();
    }
    return { usageEventId };
  });
}

/** Releases holds whose process died (or never finished): their expiry passed. */
export async function sweepExpiredHolds(db: Db, now: number): Promise<number> {
  const expired = await db.selectFrom('credit_holds').select(['id', 'user_id', 'free_credits']).where('expires_at', '<=', now).limit(1000).execute();
  let released = 0;
  for (const h of expired) if (await releaseHold(db, { ...h, free_credits: Number(h.free_credits) }, now)) released++;
  return released;
}

/** Credits given or taken by an administrator, applied with the ledger entry that explains it. */
export async function adjustBalance(
  trx: Db,
  userId: string,
  amount: number,
  entry: { kind: 'grant' | 'adjustment'; auditId: string; description: string; now: number },
): Promise<{ before: number; after: number }> {
  await ensureBillingAccount(trx, userId, entry.now);
  const guarded = trx
    .updateTable('billing_accounts')
    .set({ balance: sql`balance + ${amount}`, updated_at: entry.now })
    .where('user_id', '=', userId);
  const r = await (amount < 0 ? guarded.where('balance', '>=', -amount) : guarded).returning('balance').executeTakeFirst();
  if (!r) throw new AppError('conflict', `The account holds fewer than ${-amount} credits; nothing was changed`);
  const after = Number(r.balance);
  if (amount !== 0) {
    await trx
      .insertInto('credit_ledger')
      .values({
        id: newId('cle'),
        user_id: userId,
        kind: entry.kind,
        amount,
        metered_credits: 0,
        audit_id: entry.auditId,
        description: entry.description,
        created_at: entry.now,
      })
      .execute();
    if (amount > 0) await rearmLowBalanceAlert(trx, userId);
  }
  return { before: after - amount, after };
}

/** The invariant, for tests, the crash script and operators. */
export async function ledgerCheck(db: Db, userId: string): Promise<{ ledger: number; balance: number; held: number; balanced: boolean }> {
  const l = await db
    .selectFrom('credit_ledger')
    .select((eb) => eb.fn.sum<string | number>('amount').as('s'))
    .where('user_id', '=', userId)
    .executeTakeFirst();
  const h = await db
    .selectFrom('credit_holds')
    .select((eb) => eb.fn.sum<string | number>('free_credits').as('s'))
    .where('user_id', '=', userId)
    .executeTakeFirst();
  const acct = await getBillingAccount(db, userId);
  const ledger = Number(l?.s ?? 0);
  const held = Number(h?.s ?? 0);
  const balance = acct?.balance ?? 0;
  return { ledger, balance, held, balanced: ledger === balance + held };
}
