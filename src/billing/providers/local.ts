import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.ts';
import { AppError } from '../../shared/errors.ts';
import type { Clock } from '../../shared/clock.ts';
import { newId } from '../../shared/ids.ts';
import { hashSecret, newSecret } from '../../shared/secrets.ts';
import { setBillingActive } from '../state.ts';
import type { PaymentsProvider, ProviderSession } from './types.ts';

const SESSION_TTL_MS = 3600_000;
export const LOCAL_PAGE_PATH = '/api/billing/local';

/**
 * The self-hosting provider: no money moves. Checkout and portal are built-in pages behind
 * single-use, expiring links (the link's secret is stored only as a hash); confirming a checkout
 * turns metered billing on, the portal turns it off. Metered usage is recorded, not sent anywhere.
 */
export function createLocalProvider(ctx: { db: Kysely<DB>; clock: Clock; publicBaseUrl: string }): PaymentsProvider {
  const open = async (userId: string, kind: 'checkout' | 'portal', successUrl: string, cancelUrl: string | null): Promise<ProviderSession> => {
    const token = newSecret('tsfb_');
    const now = ctx.clock.now();
    const id = newId('bse');
    await ctx.db
      .insertInto('billing_sessions')
      .values({
        id,
        token_hash: hashSecret(token),
        user_id: userId,
        kind,
        success_url: successUrl,
        cancel_url: cancelUrl,
        created_at: now,
        expires_at: now + SESSION_TTL_MS,
        used_at: null,
      })
      .execute();
    return { session_id: id, url: `${ctx.publicBaseUrl}${LOCAL_PAGE_PATH}/${kind}/${encodeURIComponent(token)}` };
  };
  return {
    name: 'local',
    checkout: (user, _account, urls) => open(user.id, 'checkout', urls.successUrl, urls.cancelUrl),
    portal: (user, _account, urls) => open(user.id, 'portal', urls.returnUrl, null),
    async reportUsage() {},
  };
}

export interface LocalSessionView {
  kind: 'checkout' | 'portal';
  email: string;
  success_url: string | null;
  cancel_url: string | null;
}

export async function viewLocalSession(db: Kysely<DB>, kind: 'checkout' | 'portal', token: string, now: number): Promise<LocalSessionView> {
  const row = await db
    .selectFrom('billing_sessions')
    .innerJoin('users', 'users.id', 'billing_sessions.user_id')
    .select([
      'billing_sessions.kind',
      'billing_sessions.success_url',
      'billing_sessions.cancel_url',
      'billing_sessions.used_at',
      'billing_sessions.expires_at',
      'users.email',
    ])
    .where('billing_sessions.token_hash', '=', hashSecret(token))
    .where('billing_sessions.kind', '=', kind)
    .executeTakeFirst();
  if (!row || row.used_at !== null || row.expires_at <= now) throw new AppError('not_found', 'This billing link is invalid, used or expired');
  return { kind: row.kind, email: row.email, success_url: row.success_url, cancel_url: row.cancel_url };
}

/** Confirms a checkout (billing on) or a portal change (billing off); the link works once. */
export async function completeLocalSession(db: Kysely<DB>, kind: 'checkout' | 'portal', token: string, now: number): Promise<LocalSessionView> {
  return db.transaction().execute(async (trx) => {
    const view = await viewLocalSession(trx, kind, token, now);
    const used = await trx
      .updateTable('billing_sessions')
      .set({ used_at: now })
      .where('token_hash', '=', hashSecret(token))
      .where('used_at', 'is', null)
      .returning(['user_id'])
      .executeTakeFirst();
    if (!used) throw new AppError('not_found', 'This billing link is invalid, used or expired');
    await setBillingActive(trx, used.user_id, kind === 'checkout', 'local', { customerId: `local_${used.user_id}` }, now);
    return view;
  });
}
