import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.ts';
import { ensureBillingAccount } from './ledger.ts';
import type { BillingChange } from './providers/types.ts';

/** Turns an account's metered billing on or off, recording who the provider knows it as. */
export async function setBillingActive(
  db: Kysely<DB>,
  userId: string,
  active: boolean,
  provider: string,
  ids: { customerId?: string | null; subscriptionId?: string | null },
  now: number,
): Promise<boolean> {
  await ensureBillingAccount(db, userId, now);
  const r = await db
    .updateTable('billing_accounts')
    .set({
      billing_active: active ? 1 : 0,
      provider,
      ...(ids.customerId !== undefined ? { customer_id: ids.customerId } : {}),
      ...(ids.subscriptionId !== undefined ? { subscription_id: ids.subscriptionId } : {}),
      billing_changed_at: now,
      updated_at: now,
    })
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/**
 * Applies a verified provider event once: the event id is recorded in the same transaction, so a
 * redelivered webhook changes nothing more. Providers deliver out of order, so state changes are
 * ordered by the event's own `created` time: an event older than the last one applied to the
 * account is recorded but changes nothing ('stale'). Equal times apply in delivery order.
 */
export async function applyProviderEvent(
  db: Kysely<DB>,
  provider: string,
  event: { id: string; type: string; created: number; change: BillingChange },
  now: number,
): Promise<'applied' | 'duplicate' | 'ignored' | 'unknown_account' | 'stale'> {
  return db.transaction().execute(async (trx) => {
    const seen = await trx.selectFrom('payment_events').select('id').where('id', '=', event.id).where('provider', '=', provider).executeTakeFirst();
    if (seen) return 'duplicate';
    await trx.insertInto('payment_events').values({ id: event.id, provider, type: event.type, received_at: now }).execute();
    const c = event.change;
    if (c.kind === 'ignore') return 'ignored';
    let userId = c.userId;
    if (userId) {
      const exists = await trx.selectFrom('users').select('id').where('id', '=', userId).executeTakeFirst();
      if (!exists) userId = null;
    }
    if (!userId) {
      const byCustomer = await trx
        .selectFrom('billing_accounts')
        .select('user_id')
        .where('provider', '=', provider)
        .where('customer_id', '=', c.customerId)
        .executeTakeFirst();
      userId = byCustomer?.user_id ?? null;
    }
    if (!userId) return 'unknown_account';
    await ensureBillingAccount(trx, userId, now);
    // Guarded update: claims the account's event clock only when this event is not older.
    const claimed = await trx
      .updateTable('billing_accounts')
      .set({ provider_event_at: event.created })
      .where('user_id', '=', userId)
      .where((eb) => eb.or([eb('provider_event_at', 'is', null), eb('provider_event_at', '<=', event.created)]))
      .executeTakeFirst();
    if (Number(claimed.numUpdatedRows) !== 1) return 'stale';
    await setBillingActive(trx, userId, c.kind === 'activate', provider, { customerId: c.customerId, subscriptionId: c.subscriptionId }, now);
    return 'applied';
  });
}
