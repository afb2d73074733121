import type { Kysely } from 'kysely';
import { z } from 'zod';
import type { Principal } from '../accounts/credentials.ts';
import type { Config } from '../config.ts';
import type { Database } from '../db/index.ts';
import type { DB } from '../db/schema.ts';
import type { Mailer } from '../mail/mailer.ts';
import type { Clock } from '../shared/clock.ts';
import { ensureBillingAccount } from './ledger.ts';

/**
 * The low-balance alert (issue #19, docs/billing.md): an account sets a threshold in credits; the
 * first debit that leaves the prepaid balance below it mails the account once. A grant or top-up
 * that brings the balance back to the threshold or above re-arms it, and so does changing the
 * threshold. "Once" is decided by a guarded UPDATE in the debit's own transaction
 * (`low_balance_alerted_at IS NULL`), so concurrent debits, in one process or several, claim it
 * exactly once; the mail goes out after the transaction committed.
 */
type Db = Kysely<DB>;

export const MAX_LOW_BALANCE_THRESHOLD = 1_000_000_000_000;

export const AlertSettings = z
  .object({
    low_balance_threshold: z.number().int().nullable().describe('Credits; null = no alert.'),
    low_balance_alerted: z.boolean().describe('True when the alert was mailed and the balance has not been topped up above the threshold since.'),
  })
  .meta({ id: 'AlertSettings' });
export const AlertSettingsRequest = z
  .object({
    low_balance_threshold: z
      .number()
      .int()
      .min(1)
      .max(MAX_LOW_BALANCE_THRESHOLD)
      .nullable()
      .describe('Mail the account once when a debit takes the prepaid balance below this many credits; null turns the alert off.'),
  })
  .meta({ id: 'AlertSettingsRequest' });

export interface AlertCtx {
  database: Database;
  clock: Clock;
}

export async function getAlertSettings(ctx: AlertCtx, principal: Principal): Promise<z.input<typeof AlertSettings>> {
  const row = await ctx.database.db
    .selectFrom('billing_accounts')
    .select(['low_balance_threshold', 'low_balance_alerted_at'])
    .where('user_id', '=', principal.user.id)
    .executeTakeFirst();
  return {
    low_balance_threshold: row?.low_balance_threshold == null ? null : Number(row.low_balance_threshold),
    low_balance_alerted: row?.low_balance_alerted_at != null,
  };
}

/** Sets (or clears) the threshold; a new threshold is armed. */
export async function setAlertSettings(ctx: AlertCtx, principal: Principal, threshold: number | null): Promise<z.input<typeof AlertSettings>> {
  const now = ctx.clock.now();
  await ensureBillingAccount(ctx.database.db, principal.user.id, now);
  await ctx.database.db
    .updateTable('billing_accounts')
    .set({ low_balance_threshold: threshold, low_balance_alerted_at: null, updated_at: now })
    .where('user_id', '=', principal.user.id)
    .execute();
  return { low_balance_threshold: threshold, low_balance_alerted: false };
}

export interface LowBalance {
  userId: string;
  balance: number;
  threshold: number;
}

/**
 * Inside a debit's transaction: claims the alert of each account whose balance is now below its
 * threshold and that was not alerted yet. Returns the accounts to mail (after commit).
 */
export async function claimLowBalanceAlerts(trx: Db, userIds: string[], now: number): Promise<LowBalance[]> {
  if (userIds.length === 0) return [];
  const rows = await trx
    .updateTable('billing_accounts')
    .set({ low_balance_alerted_at: now })
    .where('user_id', 'in', userIds)
    .where('low_balance_threshold', 'is not', null)
    .where('low_balance_alerted_at', 'is', null)
    .whereRef('balance', '<', 'low_balance_threshold')
    .returning(['user_id', 'balance', 'low_balance_threshold'])
    .execute();
  return rows.map((r) => ({ userId: r.user_id, balance: Number(r.balance), threshold: Number(r.low_balance_threshold) }));
}

/** After credits were added (grant, adjustment): re-arms the alert when the balance is back at or above the threshold. */
export async function rearmLowBalanceAlert(trx: Db, userId: string): Promise<void> {
  await trx
    .updateTable('billing_accounts')
    .set({ low_balance_alerted_at: null })
    .where('user_id', '=', userId)
    .where('low_balance_alerted_at', 'is not', null)
    .whereRef('balance', '>=', 'low_balance_threshold')
    .execute();
}

/** Mails the account its low-balance alert. */
export async function sendLowBalanceMail(ctx: { database: Database; mailer: Mailer; config: Pick<Config, 'publicBaseUrl'> }, alert: LowBalance): Promise<void> {
  const user = await ctx.database.db.selectFrom('users').select('email').where('id', '=', alert.userId).executeTakeFirst();
  if (!user) return;
  await ctx.mailer.send({
    to: user.email,
    subject: `Your credit balance is below ${alert.threshold}`,
    text:
      `Your account's prepaid credit balance is now ${alert.balance} credits, below the alert threshold of ${alert.threshold} you set.\n\n` +
      `When it runs out, calls fail with 402 billing_required unless metered billing is active: ${ctx.config.publicBaseUrl}/account/billing\n\n` +
      `This alert is sent once; it is re-armed when the balance is back above the threshold. Change or turn it off with PATCH /api/account/alerts.\n`,
  });
}
